// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-fuse-attention=softmax=f32 | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-fuse-attention=softmax=f32 --npu-lower-attention 2>&1 | FileCheck %s --check-prefix=KERNEL
// RUN: npu-opt %s --split-input-file --npu-fuse-attention=softmax=f32 --npu-lower-attention 2>&1 | FileCheck %s --check-prefix=ONES
// RUN: npu-opt %s --split-input-file --npu-fuse-attention=softmax=f16 --npu-lower-attention 2>&1 | FileCheck %s --check-prefix=HALF
// RUN: npu-opt %s --split-input-file --npu-fuse-attention=softmax=f16 --npu-lower-attention=row-max=transpose 2>&1 | FileCheck %s --check-prefix=TRANS
// RUN: npu-opt %s --split-input-file --npu-fuse-attention=softmax=f32 --npu-lower-attention=row-max=transpose 2>&1 | FileCheck %s --check-prefix=TRANS32

// Attention as the frontend emits it (batch_matmul, defractalize, scale,
// softmax, cast, fractalize, batch_matmul, defractalize) is one group; the
// scores, P and every softmax step stay on chip. 40 keys fit one tile (the
// 8 padded keys are masked), so no online softmax.
// CHECK-LABEL: func.func @attention
// CHECK:       scf.execute_region {
// CHECK-COUNT-11: memref.alloc() : memref<{{.*}}, "gm">
// CHECK:         "ascend.batch_matmul"
// CHECK:         "ascend.div"
// CHECK:         "ascend.batch_matmul"
// CHECK-NEXT:    "ascend.defractalize"
// CHECK-NEXT:    scf.yield
// CHECK-NEXT:  } {npu.attention = {gm_bytes = 57344 : i64, head_dim = 64 : i64, heads = 2 : i64, key_rows = 48 : i64, query_rows = 48 : i64, seq = 40 : i64, softmax = "f32", ub_bytes = {{[0-9]+}} : i64, unfused_gm_bytes = 329472 : i64}}
// CHECK-NEXT:  return
// The kernel: no GM temporary. One tile per head, so the heads are the
// steps of a software pipeline: head h+1's operands and Q.K^T are issued
// after head h's softmax and before head h-1's context is drained, with the
// scores, P, P.V, Q's, K's and V's tiles in two slots each (V's in L0B too,
// loaded with Q and K: the next head's loads never wait for P). The
// softmax: key mask, row max and the shift in f32 (scale * s - scale * max,
// one vmadd with the scale's constant block), then P = exp(shifted) in f16
// (padded keys clamped to a finite f16 value first) -> L1 for P.V. V's tile
// in L1 has a column block of ones, so P.V (5 column blocks for head dim
// 64) also yields the row sums: no vcadd. 1/sum, the context stored once
// per head (one copy per 16 columns).
// KERNEL-LABEL: func.func @attention
// KERNEL-NOT:   memref.alloc() : memref<{{.*}}"gm">
// KERNEL:       memref.alloc() : memref<8xf32, "ub">
// KERNEL-NEXT:  cce.vdup
// KERNEL-SAME:  scalar = 1.250000e-01
// KERNEL-COUNT-2: memref.alloc() : memref<3x3x16x16xf32, "l0c">
// KERNEL-COUNT-2: memref.alloc() : memref<5x3x16x16xf32, "l0c">
// KERNEL-COUNT-2: memref.alloc() : memref<5x3x16x16xf16, "l1">
// KERNEL-COUNT-2: memref.alloc() : memref<3x3x16x16xf16, "l1">
// V's two L1 slots get their column block of ones once (V's loads leave
// it), then head 0's operands (prologue): V, then Q and K, Q.K^T, and V's
// tile on to L0B.
// KERNEL-COUNT-2: scalar = 1.000000e+00
// KERNEL-COUNT-2: memref.alloc() : memref<4x3x16x16xf16, "l1">
// KERNEL-COUNT-2: memref.alloc() : memref<3x4x16x16xf16, "l1">
// KERNEL-COUNT-2: memref.alloc() : memref<3x5x16x16xf16, "l0b">
// KERNEL:       cce.copy_gm_to_l1
// ONES-LABEL:   func.func @attention
// ONES:         scalar = 1.000000e+00
// ONES-NOT:     cce.copy_gm_to_l1
// ONES:         scalar = 1.000000e+00
// ONES-NOT:     scalar = 1.000000e+00
// ONES:         return
// KERNEL:       cce.copy_gm_to_l1
// KERNEL:       cce.copy_gm_to_l1
// KERNEL:       cce.mad
// KERNEL-SAME:  k = 48 : i64, m = 48 : i64, n = 64 : i64
// KERNEL:       cce.load_l1_to_l0b
// Head 0's softmax, then head 1's operands and Q.K^T, then head 0's P.V
// (so Q.K^T does not wait for P in the cube's queue).
// KERNEL:       cce.copy_l0c_to_ub
// KERNEL:       cce.vdup
// KERNEL:       cce.vadd
// KERNEL:       cce.vcmax
// KERNEL:       cce.vmuls
// KERNEL-SAME:  scalar = -1.250000e-01
// KERNEL:       cce.vnchwconv
// KERNEL:       cce.vmadd
// KERNEL-NOT:   cce.vsub
// KERNEL:       cce.vmaxs
// KERNEL:       cce.vconv
// KERNEL-SAME:  xf32, "ub">) -> ()
// KERNEL-NEXT:  cce.vexp{{.*}}xf16, "ub">
// KERNEL-NEXT:  cce.copy_ub_to_l1
// KERNEL:       cce.copy_gm_to_l1
// KERNEL:       cce.mad
// KERNEL-SAME:  k = 48 : i64, m = 48 : i64, n = 64 : i64
// KERNEL:       cce.mad
// KERNEL-SAME:  k = 80 : i64, m = 48 : i64, n = 48 : i64
// Head 1's softmax and P.V.
// KERNEL-NOT:   cce.copy_ub_to_gm
// KERNEL:       cce.vexp
// KERNEL-NOT:   cce.copy_ub_to_gm
// KERNEL:       cce.mad
// KERNEL-SAME:  k = 80 : i64, m = 48 : i64, n = 48 : i64
// Then the contexts of heads 0 and 1.
// KERNEL:       cce.copy_l0c_to_ub
// KERNEL:       cce.vrec
// KERNEL:       cce.vmul
// KERNEL-COUNT-4: cce.copy_ub_to_gm
// KERNEL:       cce.copy_l0c_to_ub
// KERNEL:       cce.vrec
// KERNEL-COUNT-4: cce.copy_ub_to_gm
// KERNEL-NOT:   cce.copy_ub_to_gm
// KERNEL-NOT:   cce.vcadd
// KERNEL:       return
// The softmax in f16 (softmax=f16, said in the remark): the scores leave
// L0C rounded to f16 by the move; the padded keys are clamped (vmin) to
// -65504 before the row max and after the shift; the max (vmax, vcmax),
// the offset -0.125 * max, the shift (one vmadd per slab with the scale's
// f16 block) and exp run in f16; no vconv of P.
// HALF:         remark: fused attention
// HALF-SAME:    softmax in f16
// HALF-LABEL:   func.func @attention
// HALF:         memref.alloc() : memref<16xf16, "ub">
// HALF-NEXT:    cce.vdup
// HALF-SAME:    scalar = 1.250000e-01
// HALF:         cce.copy_l0c_to_ub
// HALF-SAME:    convert = "f32_to_f16"
// HALF-SAME:    (memref<3x3x16x16xf32, "l0c">, memref<2304xf16, "ub">)
// HALF:         cce.vdup
// HALF-SAME:    scalar = -6.550400e+04
// HALF:         cce.vdup
// HALF-SAME:    mask = 8 : i64, repeat = 48 : i64, scalar = 6.550400e+04
// HALF:         cce.vmin
// HALF:         cce.vmax{{.*}}xf16
// HALF-NOT:     cce.vconv
// HALF:         cce.vmuls
// HALF-SAME:    scalar = -1.250000e-01
// HALF-SAME:    (memref<48xf16, "ub">, memref<48xf16, "ub">)
// HALF:         cce.vnchwconv{{.*}}xf16
// HALF-COUNT-3: cce.vmadd{{.*}}xf16
// HALF-NOT:     cce.vconv
// HALF:         cce.vmin
// HALF-NOT:     cce.vconv
// HALF:         cce.vexp{{.*}}(memref<2304xf16, "ub">, memref<2304xf16, "ub">)
// HALF-NEXT:    cce.copy_ub_to_l1
// HALF-NOT:     cce.vconv
// HALF:         return
// The row max's last step as a transpose and a tree (row-max=transpose;
// auto takes it from 64 rows on, by the modelled cycles): the folded slab
// [48 rows, 16 keys] becomes [16 keys, 48 rows] (three 16x16 transposes,
// key j's row 3 blocks after key j-1's), then vmax of 8, 4 (128 + 64
// lanes), 2 and 1 key rows of 48 lanes: no vcmax. f32: two transposes of 16 rows x 8 keys (the
// two halves of the keys), each key row of 48 values in 6 blocks.
// TRANS-LABEL:  func.func @attention
// TRANS:        cce.vnchwconv
// TRANS-SAME:   dst_offsets = array<i64: 0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42, 45>, dst_rep_stride = 1 : i64, repeat = 3 : i64, src_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, src_rep_stride = 16 : i64
// TRANS:        cce.vmax{{.*}}mask = 128 : i64, repeat = 3 : i64
// TRANS:        cce.vmax{{.*}}mask = 128 : i64, repeat = 1 : i64
// TRANS:        cce.vmax{{.*}}mask = 64 : i64, repeat = 1 : i64
// TRANS:        cce.vmax{{.*}}mask = 96 : i64, repeat = 1 : i64
// TRANS:        cce.vmax{{.*}}mask = 48 : i64, repeat = 1 : i64
// TRANS-SAME:   (memref<48xf16, "ub">
// TRANS-NOT:    cce.vcmax
// TRANS:        return
// TRANS32-LABEL: func.func @attention
// TRANS32:      cce.vnchwconv
// TRANS32-SAME: dst_offsets = array<i64: 0, 1, 6, 7, 12, 13, 18, 19, 24, 25, 30, 31, 36, 37, 42, 43>, dst_rep_stride = 2 : i64, repeat = 3 : i64, src_offsets = array<i64: 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30>, src_rep_stride = 32 : i64
// TRANS32-NEXT: cce.vnchwconv
// TRANS32-SAME: dst_offsets = array<i64: 48, 49, 54, 55,
// TRANS32-SAME: src_offsets = array<i64: 1, 3, 5,
// TRANS32-NOT:  cce.vcmax
// TRANS32:      return
func.func @attention(%q: memref<2x4x3x16x16xf16, "gm">, %k: memref<2x3x4x16x16xf16, "gm">, %v: memref<2x4x3x16x16xf16, "gm">, %y: memref<2x40x64xf32, "gm">) {
  %c1 = memref.alloc() : memref<2x3x3x16x16xf32, "gm">
  // expected-remark @+1 {{fused attention (12 ops; Q, K, V read as f16 fractals) over 2 heads, seq 40, head dim 64: query tiles of 48 rows, all 40 keys per tile: the scores stay on chip; GM traffic 329472 -> 57344 bytes}}
  "ascend.batch_matmul"(%q, %k, %c1) : (memref<2x4x3x16x16xf16, "gm">, memref<2x3x4x16x16xf16, "gm">, memref<2x3x3x16x16xf32, "gm">) -> ()
  %s = memref.alloc() : memref<2x40x40xf32, "gm">
  "ascend.defractalize"(%c1, %s) : (memref<2x3x3x16x16xf32, "gm">, memref<2x40x40xf32, "gm">) -> ()
  %t = memref.alloc() : memref<2x40x40xf32, "gm">
  "ascend.muls"(%s, %t) {scalar = 0.125 : f64} : (memref<2x40x40xf32, "gm">, memref<2x40x40xf32, "gm">) -> ()
  %m = memref.alloc() : memref<2x40x1xf32, "gm">
  "ascend.reduce_max"(%t, %m) : (memref<2x40x40xf32, "gm">, memref<2x40x1xf32, "gm">) -> ()
  %d = memref.alloc() : memref<2x40x40xf32, "gm">
  "ascend.sub"(%t, %m, %d) : (memref<2x40x40xf32, "gm">, memref<2x40x1xf32, "gm">, memref<2x40x40xf32, "gm">) -> ()
  %e = memref.alloc() : memref<2x40x40xf32, "gm">
  "ascend.exp"(%d, %e) : (memref<2x40x40xf32, "gm">, memref<2x40x40xf32, "gm">) -> ()
  %u = memref.alloc() : memref<2x40x1xf32, "gm">
  "ascend.reduce_sum"(%e, %u) : (memref<2x40x40xf32, "gm">, memref<2x40x1xf32, "gm">) -> ()
  %p = memref.alloc() : memref<2x40x40xf32, "gm">
  "ascend.div"(%e, %u, %p) : (memref<2x40x40xf32, "gm">, memref<2x40x1xf32, "gm">, memref<2x40x40xf32, "gm">) -> ()
  %h = memref.alloc() : memref<2x40x40xf16, "gm">
  "ascend.cast"(%p, %h) {round_mode = "rint"} : (memref<2x40x40xf32, "gm">, memref<2x40x40xf16, "gm">) -> ()
  %f = memref.alloc() : memref<2x3x3x16x16xf16, "gm">
  "ascend.fractalize"(%h, %f) : (memref<2x40x40xf16, "gm">, memref<2x3x3x16x16xf16, "gm">) -> ()
  %c2 = memref.alloc() : memref<2x4x3x16x16xf32, "gm">
  "ascend.batch_matmul"(%f, %v, %c2) : (memref<2x3x3x16x16xf16, "gm">, memref<2x4x3x16x16xf16, "gm">, memref<2x4x3x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%c2, %y) : (memref<2x4x3x16x16xf32, "gm">, memref<2x40x64xf32, "gm">) -> ()
  return
}

// -----

// The scores are also read by another op: not fused (they must reach GM).
// CHECK-LABEL: func.func @scores_read_twice
// CHECK-NOT:   scf.execute_region
func.func @scores_read_twice(%q: memref<1x4x2x16x16xf16, "gm">, %k: memref<1x2x4x16x16xf16, "gm">, %v: memref<1x4x2x16x16xf16, "gm">, %y: memref<1x32x64xf32, "gm">, %z: memref<1x32x32xf32, "gm">) {
  %c1 = memref.alloc() : memref<1x2x2x16x16xf32, "gm">
  // expected-remark @+1 {{not fused as attention: the scores feed ascend.muls, ascend.muls, not a softmax}}
  "ascend.batch_matmul"(%q, %k, %c1) : (memref<1x4x2x16x16xf16, "gm">, memref<1x2x4x16x16xf16, "gm">, memref<1x2x2x16x16xf32, "gm">) -> ()
  %s = memref.alloc() : memref<1x32x32xf32, "gm">
  "ascend.defractalize"(%c1, %s) : (memref<1x2x2x16x16xf32, "gm">, memref<1x32x32xf32, "gm">) -> ()
  "ascend.muls"(%s, %z) {scalar = 1.0 : f64} : (memref<1x32x32xf32, "gm">, memref<1x32x32xf32, "gm">) -> ()
  %t = memref.alloc() : memref<1x32x32xf32, "gm">
  "ascend.muls"(%s, %t) {scalar = 0.125 : f64} : (memref<1x32x32xf32, "gm">, memref<1x32x32xf32, "gm">) -> ()
  %m = memref.alloc() : memref<1x32x1xf32, "gm">
  "ascend.reduce_max"(%t, %m) : (memref<1x32x32xf32, "gm">, memref<1x32x1xf32, "gm">) -> ()
  %d = memref.alloc() : memref<1x32x32xf32, "gm">
  "ascend.sub"(%t, %m, %d) : (memref<1x32x32xf32, "gm">, memref<1x32x1xf32, "gm">, memref<1x32x32xf32, "gm">) -> ()
  %e = memref.alloc() : memref<1x32x32xf32, "gm">
  "ascend.exp"(%d, %e) : (memref<1x32x32xf32, "gm">, memref<1x32x32xf32, "gm">) -> ()
  %u = memref.alloc() : memref<1x32x1xf32, "gm">
  "ascend.reduce_sum"(%e, %u) : (memref<1x32x32xf32, "gm">, memref<1x32x1xf32, "gm">) -> ()
  %p = memref.alloc() : memref<1x32x32xf32, "gm">
  "ascend.div"(%e, %u, %p) : (memref<1x32x32xf32, "gm">, memref<1x32x1xf32, "gm">, memref<1x32x32xf32, "gm">) -> ()
  %h = memref.alloc() : memref<1x32x32xf16, "gm">
  "ascend.cast"(%p, %h) {round_mode = "rint"} : (memref<1x32x32xf32, "gm">, memref<1x32x32xf16, "gm">) -> ()
  %f = memref.alloc() : memref<1x2x2x16x16xf16, "gm">
  "ascend.fractalize"(%h, %f) : (memref<1x32x32xf16, "gm">, memref<1x2x2x16x16xf16, "gm">) -> ()
  %c2 = memref.alloc() : memref<1x4x2x16x16xf32, "gm">
  // expected-remark @+1 {{not fused as attention: the scores feed no op, not a softmax}}
  "ascend.batch_matmul"(%f, %v, %c2) : (memref<1x2x2x16x16xf16, "gm">, memref<1x4x2x16x16xf16, "gm">, memref<1x4x2x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%c2, %y) : (memref<1x4x2x16x16xf32, "gm">, memref<1x32x64xf32, "gm">) -> ()
  return
}

// -----

// A head dim that is not whole fractals is left alone.
// CHECK-LABEL: func.func @head_dim_40
// CHECK-NOT:   scf.execute_region
func.func @head_dim_40(%q: memref<1x3x2x16x16xf16, "gm">, %k: memref<1x2x3x16x16xf16, "gm">, %v: memref<1x3x2x16x16xf16, "gm">, %y: memref<1x32x40xf32, "gm">) {
  %c1 = memref.alloc() : memref<1x2x2x16x16xf32, "gm">
  // expected-remark @+1 {{not fused as attention: head dim 40 is not a whole number of 16-element fractals}}
  "ascend.batch_matmul"(%q, %k, %c1) : (memref<1x3x2x16x16xf16, "gm">, memref<1x2x3x16x16xf16, "gm">, memref<1x2x2x16x16xf32, "gm">) -> ()
  %s = memref.alloc() : memref<1x32x32xf32, "gm">
  "ascend.defractalize"(%c1, %s) : (memref<1x2x2x16x16xf32, "gm">, memref<1x32x32xf32, "gm">) -> ()
  %t = memref.alloc() : memref<1x32x32xf32, "gm">
  "ascend.muls"(%s, %t) {scalar = 0.125 : f64} : (memref<1x32x32xf32, "gm">, memref<1x32x32xf32, "gm">) -> ()
  %m = memref.alloc() : memref<1x32x1xf32, "gm">
  "ascend.reduce_max"(%t, %m) : (memref<1x32x32xf32, "gm">, memref<1x32x1xf32, "gm">) -> ()
  %d = memref.alloc() : memref<1x32x32xf32, "gm">
  "ascend.sub"(%t, %m, %d) : (memref<1x32x32xf32, "gm">, memref<1x32x1xf32, "gm">, memref<1x32x32xf32, "gm">) -> ()
  %e = memref.alloc() : memref<1x32x32xf32, "gm">
  "ascend.exp"(%d, %e) : (memref<1x32x32xf32, "gm">, memref<1x32x32xf32, "gm">) -> ()
  %u = memref.alloc() : memref<1x32x1xf32, "gm">
  "ascend.reduce_sum"(%e, %u) : (memref<1x32x32xf32, "gm">, memref<1x32x1xf32, "gm">) -> ()
  %p = memref.alloc() : memref<1x32x32xf32, "gm">
  "ascend.div"(%e, %u, %p) : (memref<1x32x32xf32, "gm">, memref<1x32x1xf32, "gm">, memref<1x32x32xf32, "gm">) -> ()
  %h = memref.alloc() : memref<1x32x32xf16, "gm">
  "ascend.cast"(%p, %h) {round_mode = "rint"} : (memref<1x32x32xf32, "gm">, memref<1x32x32xf16, "gm">) -> ()
  %f = memref.alloc() : memref<1x2x2x16x16xf16, "gm">
  "ascend.fractalize"(%h, %f) : (memref<1x32x32xf16, "gm">, memref<1x2x2x16x16xf16, "gm">) -> ()
  %c2 = memref.alloc() : memref<1x3x2x16x16xf32, "gm">
  // expected-remark @+1 {{not fused as attention: the scores feed no op}}
  "ascend.batch_matmul"(%f, %v, %c2) : (memref<1x2x2x16x16xf16, "gm">, memref<1x3x2x16x16xf16, "gm">, memref<1x3x2x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%c2, %y) : (memref<1x3x2x16x16xf32, "gm">, memref<1x32x40xf32, "gm">) -> ()
  return
}

// -----

// A head dim whose smallest tile does not fit UB: not fused, and why.
// CHECK-LABEL: func.func @too_big
// CHECK-NOT:   scf.execute_region
func.func @too_big(%q: memref<1x256x1x16x16xf16, "gm">, %k: memref<1x1x256x16x16xf16, "gm">, %v: memref<1x256x1x16x16xf16, "gm">, %y: memref<1x16x4096xf32, "gm">) {
  %c1 = memref.alloc() : memref<1x1x1x16x16xf32, "gm">
  // expected-remark @+1 {{one tile of 16 queries x 16 keys with head dim 4096 needs 527872 bytes of UB}}
  "ascend.batch_matmul"(%q, %k, %c1) : (memref<1x256x1x16x16xf16, "gm">, memref<1x1x256x16x16xf16, "gm">, memref<1x1x1x16x16xf32, "gm">) -> ()
  %s = memref.alloc() : memref<1x16x16xf32, "gm">
  "ascend.defractalize"(%c1, %s) : (memref<1x1x1x16x16xf32, "gm">, memref<1x16x16xf32, "gm">) -> ()
  %t = memref.alloc() : memref<1x16x16xf32, "gm">
  "ascend.muls"(%s, %t) {scalar = 0.125 : f64} : (memref<1x16x16xf32, "gm">, memref<1x16x16xf32, "gm">) -> ()
  %m = memref.alloc() : memref<1x16x1xf32, "gm">
  "ascend.reduce_max"(%t, %m) : (memref<1x16x16xf32, "gm">, memref<1x16x1xf32, "gm">) -> ()
  %d = memref.alloc() : memref<1x16x16xf32, "gm">
  "ascend.sub"(%t, %m, %d) : (memref<1x16x16xf32, "gm">, memref<1x16x1xf32, "gm">, memref<1x16x16xf32, "gm">) -> ()
  %e = memref.alloc() : memref<1x16x16xf32, "gm">
  "ascend.exp"(%d, %e) : (memref<1x16x16xf32, "gm">, memref<1x16x16xf32, "gm">) -> ()
  %u = memref.alloc() : memref<1x16x1xf32, "gm">
  "ascend.reduce_sum"(%e, %u) : (memref<1x16x16xf32, "gm">, memref<1x16x1xf32, "gm">) -> ()
  %p = memref.alloc() : memref<1x16x16xf32, "gm">
  "ascend.div"(%e, %u, %p) : (memref<1x16x16xf32, "gm">, memref<1x16x1xf32, "gm">, memref<1x16x16xf32, "gm">) -> ()
  %h = memref.alloc() : memref<1x16x16xf16, "gm">
  "ascend.cast"(%p, %h) {round_mode = "rint"} : (memref<1x16x16xf32, "gm">, memref<1x16x16xf16, "gm">) -> ()
  %f = memref.alloc() : memref<1x1x1x16x16xf16, "gm">
  "ascend.fractalize"(%h, %f) : (memref<1x16x16xf16, "gm">, memref<1x1x1x16x16xf16, "gm">) -> ()
  %c2 = memref.alloc() : memref<1x256x1x16x16xf32, "gm">
  // expected-remark @+1 {{not fused as attention: the scores feed no op}}
  "ascend.batch_matmul"(%f, %v, %c2) : (memref<1x1x1x16x16xf16, "gm">, memref<1x256x1x16x16xf16, "gm">, memref<1x256x1x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%c2, %y) : (memref<1x256x1x16x16xf32, "gm">, memref<1x16x4096xf32, "gm">) -> ()
  return
}
