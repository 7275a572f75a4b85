// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-fuse=ub-fraction=0.5 | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-fuse --npu-lower-fused 2>/dev/null | FileCheck %s --check-prefix=KERNEL

// Softmax: five row ops become one group; the four intermediates (their
// allocs move into the group) never reach GM: 2 x 80 x 64 x 4 bytes move.
// CHECK-LABEL: func.func @softmax
// CHECK:       scf.execute_region {
// CHECK-COUNT-4: memref.alloc() : memref<2x40x{{1|64}}xf32, "gm">
// CHECK:         "ascend.reduce_max"
// CHECK-NEXT:    "ascend.sub"
// CHECK-NEXT:    "ascend.exp"
// CHECK-NEXT:    "ascend.reduce_sum"
// CHECK-NEXT:    "ascend.div"
// CHECK-NEXT:    scf.yield
// CHECK-NEXT:  } {npu.fused = {gm_bytes = 40960 : i64, row_length = 64 : i64, rows = 80 : i64, ub_bytes_per_row = {{[0-9]+}} : i64, unfused_gm_bytes = 165120 : i64}}
// CHECK-NEXT:  return
// The kernel: per chunk x loaded once, every step in UB, y stored once; no
// GM temporaries.
// KERNEL-LABEL: func.func @softmax
// KERNEL-NOT:   memref.alloc() : memref<{{.*}}"gm">
// KERNEL:       cce.copy_gm_to_ub
// KERNEL-NOT:   cce.copy_
// KERNEL:       cce.vcmax
// KERNEL:       cce.vexp
// KERNEL:       cce.vcadd
// KERNEL:       cce.vrec
// KERNEL:       cce.vmul
// KERNEL:       cce.copy_ub_to_gm
// KERNEL:       return
func.func @softmax(%x: memref<2x40x64xf32, "gm">, %y: memref<2x40x64xf32, "gm">) {
  %m = memref.alloc() : memref<2x40x1xf32, "gm">
  // expected-remark @+1 {{fused 5 ops (reduce_max, sub, exp, reduce_sum, div) over 80 rows of 64: GM traffic 165120 -> 40960 bytes, 4 tensor(s) stay on chip}}
  "ascend.reduce_max"(%x, %m) : (memref<2x40x64xf32, "gm">, memref<2x40x1xf32, "gm">) -> ()
  %d = memref.alloc() : memref<2x40x64xf32, "gm">
  "ascend.sub"(%x, %m, %d) : (memref<2x40x64xf32, "gm">, memref<2x40x1xf32, "gm">, memref<2x40x64xf32, "gm">) -> ()
  %e = memref.alloc() : memref<2x40x64xf32, "gm">
  "ascend.exp"(%d, %e) : (memref<2x40x64xf32, "gm">, memref<2x40x64xf32, "gm">) -> ()
  %s = memref.alloc() : memref<2x40x1xf32, "gm">
  "ascend.reduce_sum"(%e, %s) : (memref<2x40x64xf32, "gm">, memref<2x40x1xf32, "gm">) -> ()
  "ascend.div"(%e, %s, %y) : (memref<2x40x64xf32, "gm">, memref<2x40x1xf32, "gm">, memref<2x40x64xf32, "gm">) -> ()
  return
}

// -----

// A tensor also read after the group leaves it (stored once, not re-read);
// an op over other rows is left out, and says why.
// CHECK-LABEL: func.func @leaving
// CHECK:       memref.alloc() : memref<16x32xf32, "gm">
// CHECK:       scf.execute_region {
// CHECK-NEXT:    "ascend.exp"
// CHECK-NEXT:    "ascend.muls"
// CHECK-NEXT:    scf.yield
// CHECK:       "ascend.transpose"
// CHECK:       "ascend.adds"
func.func @leaving(%x: memref<16x32xf32, "gm">, %y: memref<16x32xf32, "gm">, %z: memref<32x16xf32, "gm">, %w: memref<32x16xf32, "gm">) {
  %e = memref.alloc() : memref<16x32xf32, "gm">
  // expected-remark @+1 {{fused 2 ops (exp, muls) over 16 rows of 32: GM traffic 8192 -> 6144 bytes, 0 tensor(s) stay on chip}}
  "ascend.exp"(%x, %e) : (memref<16x32xf32, "gm">, memref<16x32xf32, "gm">) -> ()
  "ascend.muls"(%e, %y) {scalar = 2.0 : f64} : (memref<16x32xf32, "gm">, memref<16x32xf32, "gm">) -> ()
  // expected-remark @+1 {{'ascend.transpose' left unfused: 'ascend.transpose' is not a row op (elementwise, or a reduction along the last axis)}}
  "ascend.transpose"(%e, %z) {permutation = array<i64: 1, 0>} : (memref<16x32xf32, "gm">, memref<32x16xf32, "gm">) -> ()
  // expected-remark @+1 {{'ascend.adds' left unfused: no row op produces or consumes its tensors}}
  "ascend.adds"(%z, %w) {scalar = 1.0 : f64} : (memref<32x16xf32, "gm">, memref<32x16xf32, "gm">) -> ()
  return
}

// -----

// Softmax plus its input over rows of 2040 f32 (255 blocks, the repeat-stride
// limit; x stays live to the end): the results computed in place over their
// inputs, 7 whole rows fit the budget, so the kernel is one-pass (x read
// once; fuse-two-pass.mlir has the two-pass kernel of a smaller budget).
// CHECK-LABEL: func.func @too_long
// CHECK:       scf.execute_region
// CHECK:         "ascend.div"
// CHECK-NEXT:    "ascend.add"
// CHECK-NEXT:    scf.yield
// KERNEL-LABEL: func.func @too_long
// KERNEL:       cce.copy_gm_to_ub
// KERNEL:       cce.vcmax
// KERNEL:       cce.vexp
// KERNEL:       cce.vcadd
// KERNEL:       cce.vrec
// KERNEL:       cce.vadd
// KERNEL:       cce.copy_ub_to_gm
// The kernel's last group in 3 + 3 + 2 rows (`short_last`): each chunk
// loads its x once, no second pass.
// KERNEL:       cce.copy_gm_to_ub
// KERNEL:       cce.vrec
// KERNEL:       cce.copy_ub_to_gm
// KERNEL:       cce.copy_gm_to_ub
// KERNEL:       cce.vrec
// KERNEL:       cce.copy_ub_to_gm
// KERNEL-NOT:   cce.copy_gm_to_ub
// KERNEL:       return
func.func @too_long(%x: memref<8x2040xf32, "gm">, %y: memref<8x2040xf32, "gm">) {
  %m = memref.alloc() : memref<8x1xf32, "gm">
  // expected-remark @+1 {{fused 6 ops (reduce_max, sub, exp, reduce_sum, div, add) over 8 rows of 2040: GM traffic 718208 -> 130560 bytes, 5 tensor(s) stay on chip; UB 17348 bytes per row, up to 7 rows per chunk}}
  "ascend.reduce_max"(%x, %m) : (memref<8x2040xf32, "gm">, memref<8x1xf32, "gm">) -> ()
  %d = memref.alloc() : memref<8x2040xf32, "gm">
  "ascend.sub"(%x, %m, %d) : (memref<8x2040xf32, "gm">, memref<8x1xf32, "gm">, memref<8x2040xf32, "gm">) -> ()
  %e = memref.alloc() : memref<8x2040xf32, "gm">
  "ascend.exp"(%d, %e) : (memref<8x2040xf32, "gm">, memref<8x2040xf32, "gm">) -> ()
  %s = memref.alloc() : memref<8x1xf32, "gm">
  "ascend.reduce_sum"(%e, %s) : (memref<8x2040xf32, "gm">, memref<8x1xf32, "gm">) -> ()
  %q = memref.alloc() : memref<8x2040xf32, "gm">
  "ascend.div"(%e, %s, %q) : (memref<8x2040xf32, "gm">, memref<8x1xf32, "gm">, memref<8x2040xf32, "gm">) -> ()
  "ascend.add"(%q, %x, %y) : (memref<8x2040xf32, "gm">, memref<8x2040xf32, "gm">, memref<8x2040xf32, "gm">) -> ()
  return
}

// -----

// Layernorm over rows of 24576 (longer than UB; rows past the repeat stride
// that fit UB stay one-pass): the variance is accumulated around the first
// piece's mean (pass 1), then normalised (pass 2).
// CHECK-LABEL: func.func @long_layernorm
// CHECK:       scf.execute_region
// KERNEL-LABEL: func.func @long_layernorm
// KERNEL:       cce.vcadd
// KERNEL:       cce.vmuls
// KERNEL:       cce.vcadd
// KERNEL:       cce.vcadd
// KERNEL:       cce.vadd
// KERNEL:       cce.vcadd
// KERNEL:       cce.vadd
// Q - (S - n K)^2 / n, clamped at 0, before rsqrt.
// KERNEL:       cce.vmuls
// KERNEL:       cce.vadd
// KERNEL:       cce.vmul
// KERNEL:       cce.vmuls
// KERNEL:       cce.vadd
// KERNEL:       cce.vmaxs
// KERNEL:       cce.vrsqrt
// KERNEL:       scf.for
// KERNEL:       cce.copy_ub_to_gm
func.func @long_layernorm(%x: memref<8x24576xf32, "gm">, %y: memref<8x24576xf32, "gm">) {
  %s = memref.alloc() : memref<8x1xf32, "gm">
  // expected-remark @+1 {{fused 8 ops (reduce_sum, muls, sub, mul, reduce_sum, muls, rsqrt, mul) over 8 rows of 24576: GM traffic 6291776 -> 2359296 bytes, 7 tensor(s) stay on chip; rows longer than UB: two-pass online over pieces of 1536 columns; variance around the first piece's mean}}
  "ascend.reduce_sum"(%x, %s) : (memref<8x24576xf32, "gm">, memref<8x1xf32, "gm">) -> ()
  %mean = memref.alloc() : memref<8x1xf32, "gm">
  "ascend.muls"(%s, %mean) {scalar = 4.0690104166666664e-05 : f64} : (memref<8x1xf32, "gm">, memref<8x1xf32, "gm">) -> ()
  %d = memref.alloc() : memref<8x24576xf32, "gm">
  "ascend.sub"(%x, %mean, %d) : (memref<8x24576xf32, "gm">, memref<8x1xf32, "gm">, memref<8x24576xf32, "gm">) -> ()
  %sq = memref.alloc() : memref<8x24576xf32, "gm">
  "ascend.mul"(%d, %d, %sq) : (memref<8x24576xf32, "gm">, memref<8x24576xf32, "gm">, memref<8x24576xf32, "gm">) -> ()
  %v = memref.alloc() : memref<8x1xf32, "gm">
  "ascend.reduce_sum"(%sq, %v) : (memref<8x24576xf32, "gm">, memref<8x1xf32, "gm">) -> ()
  %var = memref.alloc() : memref<8x1xf32, "gm">
  "ascend.muls"(%v, %var) {scalar = 4.0690104166666664e-05 : f64} : (memref<8x1xf32, "gm">, memref<8x1xf32, "gm">) -> ()
  %r = memref.alloc() : memref<8x1xf32, "gm">
  "ascend.rsqrt"(%var, %r) : (memref<8x1xf32, "gm">, memref<8x1xf32, "gm">) -> ()
  "ascend.mul"(%d, %r, %y) : (memref<8x24576xf32, "gm">, memref<8x1xf32, "gm">, memref<8x24576xf32, "gm">) -> ()
  return
}

// -----

// A reduction over a value that depends on another reduction in a way with
// no online form (sum of |x - max|): whole rows do not fit, so the max stays
// out and says why; the rest (a plain sum over the loaded max) is two-pass.
// CHECK-LABEL: func.func @no_online_form
// CHECK:       "ascend.reduce_max"
// CHECK-NEXT:  scf.execute_region
func.func @no_online_form(%x: memref<8x4096xf32, "gm">, %y: memref<8x1xf32, "gm">) {
  %m = memref.alloc() : memref<8x1xf32, "gm">
  // expected-remark @+1 {{'ascend.reduce_max' left unfused: not fused with its consumer 'ascend.sub': the fused kernel would not fit on chip: one chunk of 8 row(s) needs 133184 bytes of UB, the budget is 131072, and a two-pass kernel over column pieces cannot be formed: 'reduce_sum' reduces a value that depends on another reduction of the group in a way with no online form}}
  "ascend.reduce_max"(%x, %m) : (memref<8x4096xf32, "gm">, memref<8x1xf32, "gm">) -> ()
  %d = memref.alloc() : memref<8x4096xf32, "gm">
  // expected-remark @+1 {{fused 3 ops (sub, abs, reduce_sum) over 8 rows of 4096: GM traffic 655424 -> 131136 bytes, 2 tensor(s) stay on chip; rows longer than UB: two-pass online over pieces of 1536 columns}}
  "ascend.sub"(%x, %m, %d) : (memref<8x4096xf32, "gm">, memref<8x1xf32, "gm">, memref<8x4096xf32, "gm">) -> ()
  %a = memref.alloc() : memref<8x4096xf32, "gm">
  "ascend.abs"(%d, %a) : (memref<8x4096xf32, "gm">, memref<8x4096xf32, "gm">) -> ()
  "ascend.reduce_sum"(%a, %y) : (memref<8x4096xf32, "gm">, memref<8x1xf32, "gm">) -> ()
  return
}

// -----

// Rows of different lengths are different kernels.
// CHECK-LABEL: func.func @rows_differ
// CHECK-NOT:   scf.execute_region
func.func @rows_differ(%x: memref<16x32xf32, "gm">, %y: memref<8x64xf32, "gm">) {
  %e = memref.alloc() : memref<16x32xf32, "gm">
  // expected-remark @+1 {{'ascend.exp' left unfused: not fused with its consumer 'ascend.muls': the rows differ (16 rows of 32 vs 32 rows of 16)}}
  "ascend.exp"(%x, %e) : (memref<16x32xf32, "gm">, memref<16x32xf32, "gm">) -> ()
  %v = memref.expand_shape %e [[0], [1, 2]] output_shape [16, 2, 16] : memref<16x32xf32, "gm"> into memref<16x2x16xf32, "gm">
  %c = memref.collapse_shape %v [[0, 1], [2]] : memref<16x2x16xf32, "gm"> into memref<32x16xf32, "gm">
  %z = memref.alloc() : memref<32x16xf32, "gm">
  // expected-remark @+1 {{'ascend.muls' left unfused: not fused with its producer 'ascend.exp': the rows differ (16 rows of 32 vs 32 rows of 16)}}
  "ascend.muls"(%c, %z) {scalar = 2.0 : f64} : (memref<32x16xf32, "gm">, memref<32x16xf32, "gm">) -> ()
  return
}


// -----

// Layernorm with scale and shift over rows of 768 (12 segments of 64 f32):
// the mean's row sum in two levels (one vcadd per row over its 12 repeats,
// one over the rows' partials), the variance's squares folded straight
// into two accumulators (2 vmul, then rounds of 2 vmla: no product pass),
// and (d * rstd) * gamma + beta is one vmadd per row in the normalised
// buffer (gamma and beta read along the row).
// CHECK-LABEL: func.func @layernorm_affine
// CHECK:       scf.execute_region
// KERNEL-LABEL: func.func @layernorm_affine
// KERNEL-COUNT-8: cce.vcadd{{.*}}repeat = 12 : i64
// KERNEL:       cce.vcadd{{.*}}src_rep_stride = 2 : i64
// KERNEL:       cce.vsub
// KERNEL-COUNT-2: cce.vmul{{.*}}src0_rep_stride = 96 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 96 : i64
// KERNEL-COUNT-10: cce.vmla{{.*}}src0_rep_stride = 96 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 96 : i64
// KERNEL:       cce.vadd{{.*}}src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, src1_rep_stride = 8 : i64
// KERNEL:       cce.vcadd
// KERNEL:       cce.vrsqrt
// KERNEL:       cce.vmul
// KERNEL-NOT:   cce.vadd
// KERNEL-COUNT-8: cce.vmadd{{.*}}repeat = 12 : i64
// KERNEL-NOT:   cce.vadd
// KERNEL:       cce.copy_ub_to_gm
func.func @layernorm_affine(%x: memref<16x768xf32, "gm">, %gamma: memref<768xf32, "gm">,
                            %beta: memref<768xf32, "gm">, %y: memref<16x768xf32, "gm">) {
  %s = memref.alloc() : memref<16x1xf32, "gm">
  // expected-remark @+1 {{fused 10 ops}}
  "ascend.reduce_sum"(%x, %s) : (memref<16x768xf32, "gm">, memref<16x1xf32, "gm">) -> ()
  %mean = memref.alloc() : memref<16x1xf32, "gm">
  "ascend.muls"(%s, %mean) {scalar = 1.3020833333333333e-03 : f64} : (memref<16x1xf32, "gm">, memref<16x1xf32, "gm">) -> ()
  %d = memref.alloc() : memref<16x768xf32, "gm">
  "ascend.sub"(%x, %mean, %d) : (memref<16x768xf32, "gm">, memref<16x1xf32, "gm">, memref<16x768xf32, "gm">) -> ()
  %sq = memref.alloc() : memref<16x768xf32, "gm">
  "ascend.mul"(%d, %d, %sq) : (memref<16x768xf32, "gm">, memref<16x768xf32, "gm">, memref<16x768xf32, "gm">) -> ()
  %v = memref.alloc() : memref<16x1xf32, "gm">
  "ascend.reduce_sum"(%sq, %v) : (memref<16x768xf32, "gm">, memref<16x1xf32, "gm">) -> ()
  %var = memref.alloc() : memref<16x1xf32, "gm">
  "ascend.muls"(%v, %var) {scalar = 1.3020833333333333e-03 : f64} : (memref<16x1xf32, "gm">, memref<16x1xf32, "gm">) -> ()
  %r = memref.alloc() : memref<16x1xf32, "gm">
  "ascend.rsqrt"(%var, %r) : (memref<16x1xf32, "gm">, memref<16x1xf32, "gm">) -> ()
  %n = memref.alloc() : memref<16x768xf32, "gm">
  "ascend.mul"(%d, %r, %n) : (memref<16x768xf32, "gm">, memref<16x1xf32, "gm">, memref<16x768xf32, "gm">) -> ()
  %g = memref.alloc() : memref<16x768xf32, "gm">
  "ascend.mul"(%n, %gamma, %g) : (memref<16x768xf32, "gm">, memref<768xf32, "gm">, memref<16x768xf32, "gm">) -> ()
  "ascend.add"(%g, %beta, %y) : (memref<16x768xf32, "gm">, memref<768xf32, "gm">, memref<16x768xf32, "gm">) -> ()
  return
}

// -----

// sdpa's NaN guard after the softmax (Where(IsNaN(p), 0, p)) joins the row
// kernel: the i8 mask of 16 bytes a row is not a whole block, but it never
// leaves UB.
// CHECK-LABEL: func.func @softmax_nan_guard
// CHECK:       scf.execute_region {
// CHECK:       ascend.cmp
// CHECK-NEXT:  ascend.select
// CHECK-NEXT:  scf.yield
// CHECK-NEXT:  } {npu.fused
// KERNEL-LABEL: func.func @softmax_nan_guard
// KERNEL:       cce.vcmp
// KERNEL-SAME:  predicate = "ne"
// KERNEL:       cce.vsel
// KERNEL-NOT:   cce.copy_ub_to_gm{{.*}}i8
func.func @softmax_nan_guard(%x: memref<32x16xf32, "gm">, %zero: memref<1x1xf32, "gm">, %y: memref<32x16xf32, "gm">) {
  %m = memref.alloc() : memref<32x1xf32, "gm">
  // expected-remark @+1 {{fused 7 ops (reduce_max, sub, exp, reduce_sum, div, cmp, select) over 32 rows of 16}}
  "ascend.reduce_max"(%x, %m) : (memref<32x16xf32, "gm">, memref<32x1xf32, "gm">) -> ()
  %d = memref.alloc() : memref<32x16xf32, "gm">
  "ascend.sub"(%x, %m, %d) : (memref<32x16xf32, "gm">, memref<32x1xf32, "gm">, memref<32x16xf32, "gm">) -> ()
  %e = memref.alloc() : memref<32x16xf32, "gm">
  "ascend.exp"(%d, %e) : (memref<32x16xf32, "gm">, memref<32x16xf32, "gm">) -> ()
  %s = memref.alloc() : memref<32x1xf32, "gm">
  "ascend.reduce_sum"(%e, %s) : (memref<32x16xf32, "gm">, memref<32x1xf32, "gm">) -> ()
  %p = memref.alloc() : memref<32x16xf32, "gm">
  "ascend.div"(%e, %s, %p) : (memref<32x16xf32, "gm">, memref<32x1xf32, "gm">, memref<32x16xf32, "gm">) -> ()
  %nan = memref.alloc() : memref<32x16xi8, "gm">
  "ascend.cmp"(%p, %p, %nan) {predicate = "ne"} : (memref<32x16xf32, "gm">, memref<32x16xf32, "gm">, memref<32x16xi8, "gm">) -> ()
  "ascend.select"(%nan, %zero, %p, %y) : (memref<32x16xi8, "gm">, memref<1x1xf32, "gm">, memref<32x16xf32, "gm">, memref<32x16xf32, "gm">) -> ()
  return
}
