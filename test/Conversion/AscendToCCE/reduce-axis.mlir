// RUN: npu-opt %s --split-input-file --npu-lower-reduce | FileCheck %s

// Column sums of 12 rows of 64 fp16 (axis 0): the accumulator starts at 0 in
// f32; the 12 rows come in with one strided copy (12 bursts of 4 blocks),
// are converted to f32 and folded pairwise (6, 3, 1, 1 rows), then row 0 is
// added to the accumulator: every element once. One rounding to f16.
// CHECK-LABEL: func.func @sum_columns
// CHECK: memref.alloc() : memref<64xf32, "ub">
// CHECK: "cce.vdup"({{.*}}) {{{.*}}scalar = 0.000000e+00 : f64}
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 4 : i64, dst_gap = 0 : i64, n_burst = 12 : i64, src_gap = 0 : i64}
// CHECK: "cce.vconv"({{.*}}) {{{.*}}repeat = 12 : i64, round_mode = "none"
// CHECK: "cce.vadd"({{.*}}) {{{.*}}repeat = 6 : i64
// CHECK: "cce.vadd"({{.*}}) {{{.*}}repeat = 3 : i64
// CHECK-COUNT-3: "cce.vadd"({{.*}}) {{{.*}}repeat = 1 : i64
// CHECK: "cce.vconv"({{.*}}) {{{.*}}round_mode = "rint"
// CHECK: "cce.copy_ub_to_gm"
func.func @sum_columns(%a: memref<12x64xf16, "gm">, %b: memref<64xf16, "gm">) {
  "ascend.reduce_sum"(%a, %b) {axis = 0 : i64} : (memref<12x64xf16, "gm">, memref<64xf16, "gm">) -> ()
  return
}

// -----

// Max over the middle axis, keepdims, rows of 100 f32 (not whole blocks):
// a loop over the 7 outer indices, one copy per row, the identity -inf.
// CHECK-LABEL: func.func @max_middle_keepdims
// CHECK: scf.for
// CHECK: "cce.vdup"({{.*}}) {{{.*}}scalar = 0xFFF0000000000000 : f64}
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 12 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
// CHECK: "cce.vmax"
// CHECK: "cce.copy_ub_to_gm"
func.func @max_middle_keepdims(%a: memref<7x3x100xf32, "gm">, %b: memref<7x1x100xf32, "gm">) {
  "ascend.reduce_max"(%a, %b) {axis = -2 : i64} : (memref<7x3x100xf32, "gm">, memref<7x1x100xf32, "gm">) -> ()
  return
}

// -----

// reduce_min along the last axis: the row reduction with vmin folds and vcmin.
// CHECK-LABEL: func.func @min_rows
// CHECK: "cce.vmin"
// CHECK: "cce.vcmin"
func.func @min_rows(%a: memref<16x256xf32, "gm">, %b: memref<16x1xf32, "gm">) {
  "ascend.reduce_min"(%a, %b) : (memref<16x256xf32, "gm">, memref<16x1xf32, "gm">) -> ()
  return
}

// -----

// ResNet-50's global average pool on its last conv's NC1HWC0 result: the
// sums over [N*C1, H*W, 16] (f32, rounded to f16) times the scale 1/49 in
// the same kernel, as ascend.muls computes them, then one store.
// CHECK-LABEL: func.func @global_average_scaled
// CHECK:       cce.copy_gm_to_ub
// CHECK:       cce.vadd
// CHECK:       "cce.vconv"{{.*}}round_mode = "rint"
// CHECK-NEXT:  "cce.vmuls"{{.*}}repeat = 8 : i64, scalar = 0.020408162847161293
// CHECK-NEXT:  "cce.copy_ub_to_gm"
// CHECK-NOT:   cce.vmuls
// CHECK:       return
func.func @global_average_scaled(%a: memref<128x49x16xf16, "gm">, %b: memref<128x1x16xf16, "gm">) {
  "ascend.reduce_sum"(%a, %b) {axis = 1 : i64, scale = 0.020408162847161293 : f64} : (memref<128x49x16xf16, "gm">, memref<128x1x16xf16, "gm">) -> ()
  return
}
