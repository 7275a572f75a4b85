// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-canonicalize | FileCheck %s

// torch.onnx's scaled_dot_product_attention: Q and K^T each scaled by
// d^-1/4 before Q.K^T. Both scalings leave the operands (the casts read the
// unscaled heads) and one scaling by their product, 1/sqrt(d), follows the
// scores' defractalize, where the fused attention takes it.
// CHECK-LABEL: func.func @scale_split_over_q_and_k
// CHECK-NOT:   "ascend.muls"
// CHECK:       "ascend.cast"(%arg0, %{{.*}}) {round_mode = "rint"}
// CHECK:       "ascend.cast"(%arg1, %{{.*}}) {round_mode = "rint"}
// CHECK:       "ascend.batch_matmul"
// CHECK:       "ascend.defractalize"(%{{.*}}, %[[RAW:[a-z_0-9]+]])
// CHECK-NEXT:  "ascend.muls"(%[[RAW]], %[[S:[a-z_0-9]+]]) {scalar = 2.500000e-01 : f64}
// CHECK-NEXT:  "ascend.reduce_max"(%[[S]], %arg2)
func.func @scale_split_over_q_and_k(%q: memref<2x32x16xf32, "gm">, %kt: memref<2x16x32xf32, "gm">, %m: memref<2x32x1xf32, "gm">) {
  %qs = memref.alloc() : memref<2x32x16xf32, "gm">
  "ascend.muls"(%q, %qs) {scalar = 0.5 : f64} : (memref<2x32x16xf32, "gm">, memref<2x32x16xf32, "gm">) -> ()
  %ks = memref.alloc() : memref<2x16x32xf32, "gm">
  "ascend.muls"(%kt, %ks) {scalar = 0.5 : f64} : (memref<2x16x32xf32, "gm">, memref<2x16x32xf32, "gm">) -> ()
  %qh = memref.alloc() : memref<2x32x16xf16, "gm">
  "ascend.cast"(%qs, %qh) {round_mode = "rint"} : (memref<2x32x16xf32, "gm">, memref<2x32x16xf16, "gm">) -> ()
  %qf = memref.alloc() : memref<2x1x2x16x16xf16, "gm">
  "ascend.fractalize"(%qh, %qf) : (memref<2x32x16xf16, "gm">, memref<2x1x2x16x16xf16, "gm">) -> ()
  %kh = memref.alloc() : memref<2x16x32xf16, "gm">
  "ascend.cast"(%ks, %kh) {round_mode = "rint"} : (memref<2x16x32xf32, "gm">, memref<2x16x32xf16, "gm">) -> ()
  %kf = memref.alloc() : memref<2x2x1x16x16xf16, "gm">
  "ascend.fractalize"(%kh, %kf) : (memref<2x16x32xf16, "gm">, memref<2x2x1x16x16xf16, "gm">) -> ()
  %c = memref.alloc() : memref<2x2x2x16x16xf32, "gm">
  // expected-remark @+1 {{npu-canonicalize: operand scalings moved onto the batch_matmul's result}}
  "ascend.batch_matmul"(%qf, %kf, %c) : (memref<2x1x2x16x16xf16, "gm">, memref<2x2x1x16x16xf16, "gm">, memref<2x2x2x16x16xf32, "gm">) -> ()
  %s = memref.alloc() : memref<2x32x32xf32, "gm">
  "ascend.defractalize"(%c, %s) : (memref<2x2x2x16x16xf32, "gm">, memref<2x32x32xf32, "gm">) -> ()
  "ascend.reduce_max"(%s, %m) : (memref<2x32x32xf32, "gm">, memref<2x32x1xf32, "gm">) -> ()
  return
}

// -----

// Q scaled by 1/sqrt(d) and the scores by 2: the scaling moves to the
// scores and folds with theirs, through Q's head transpose and reshape.
// CHECK-LABEL: func.func @scaled_q_and_scores
// CHECK-NOT:   "ascend.muls"
// CHECK:       "ascend.defractalize"(%{{.*}}, %[[RAW:[a-z_0-9]+]])
// CHECK-NEXT:  "ascend.muls"(%[[RAW]], %arg3) {scalar = 5.000000e-01 : f64}
// CHECK-NOT:   "ascend.muls"
func.func @scaled_q_and_scores(%q: memref<1x32x2x16xf32, "gm">, %kf: memref<2x2x1x16x16xf16, "gm">, %unused: memref<1xf32, "gm">, %y: memref<2x32x32xf32, "gm">) {
  %qt = memref.alloc() : memref<1x2x32x16xf32, "gm">
  "ascend.transpose"(%q, %qt) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x32x2x16xf32, "gm">, memref<1x2x32x16xf32, "gm">) -> ()
  %qs = memref.alloc() : memref<1x2x32x16xf32, "gm">
  "ascend.muls"(%qt, %qs) {scalar = 0.25 : f64} : (memref<1x2x32x16xf32, "gm">, memref<1x2x32x16xf32, "gm">) -> ()
  %qv = memref.collapse_shape %qs [[0, 1], [2], [3]] : memref<1x2x32x16xf32, "gm"> into memref<2x32x16xf32, "gm">
  %qh = memref.alloc() : memref<2x32x16xf16, "gm">
  "ascend.cast"(%qv, %qh) {round_mode = "rint"} : (memref<2x32x16xf32, "gm">, memref<2x32x16xf16, "gm">) -> ()
  %qf = memref.alloc() : memref<2x1x2x16x16xf16, "gm">
  "ascend.fractalize"(%qh, %qf) : (memref<2x32x16xf16, "gm">, memref<2x1x2x16x16xf16, "gm">) -> ()
  %c = memref.alloc() : memref<2x2x2x16x16xf32, "gm">
  // expected-remark @+1 {{npu-canonicalize: operand scalings moved onto the batch_matmul's result}}
  "ascend.batch_matmul"(%qf, %kf, %c) : (memref<2x1x2x16x16xf16, "gm">, memref<2x2x1x16x16xf16, "gm">, memref<2x2x2x16x16xf32, "gm">) -> ()
  %s = memref.alloc() : memref<2x32x32xf32, "gm">
  "ascend.defractalize"(%c, %s) : (memref<2x2x2x16x16xf32, "gm">, memref<2x32x32xf32, "gm">) -> ()
  // expected-remark @+1 {{npu-canonicalize: consecutive scalings folded into one}}
  "ascend.muls"(%s, %y) {scalar = 2.0 : f64} : (memref<2x32x32xf32, "gm">, memref<2x32x32xf32, "gm">) -> ()
  return
}

// -----

// A scaled operand that something else reads too stays scaled.
// CHECK-LABEL: func.func @shared_scaled_q
// CHECK:       "ascend.muls"(%arg0, %[[QS:[a-z_0-9]+]]) {scalar = 2.500000e-01 : f64}
// CHECK:       "ascend.cast"(%[[QS]],
func.func @shared_scaled_q(%q: memref<2x32x16xf32, "gm">, %kf: memref<2x2x1x16x16xf16, "gm">, %e: memref<2x32x16xf32, "gm">, %c: memref<2x2x2x16x16xf32, "gm">) {
  %qs = memref.alloc() : memref<2x32x16xf32, "gm">
  "ascend.muls"(%q, %qs) {scalar = 0.25 : f64} : (memref<2x32x16xf32, "gm">, memref<2x32x16xf32, "gm">) -> ()
  "ascend.exp"(%qs, %e) : (memref<2x32x16xf32, "gm">, memref<2x32x16xf32, "gm">) -> ()
  %qh = memref.alloc() : memref<2x32x16xf16, "gm">
  "ascend.cast"(%qs, %qh) {round_mode = "rint"} : (memref<2x32x16xf32, "gm">, memref<2x32x16xf16, "gm">) -> ()
  %qf = memref.alloc() : memref<2x1x2x16x16xf16, "gm">
  "ascend.fractalize"(%qh, %qf) : (memref<2x32x16xf16, "gm">, memref<2x1x2x16x16xf16, "gm">) -> ()
  "ascend.batch_matmul"(%qf, %kf, %c) : (memref<2x1x2x16x16xf16, "gm">, memref<2x2x1x16x16xf16, "gm">, memref<2x2x2x16x16xf32, "gm">) -> ()
  return
}

// -----

// K^T as HF writes it: the heads transposed to [B, H, S, D], then the last
// two axes swapped (or a batched matmul reading B transposed, which the
// conversion materialises the same way). One transpose, [0, 2, 3, 1], is
// what the fused attention reads straight from the projection.
// CHECK-LABEL: func.func @two_transposes
// CHECK-NEXT:  "ascend.transpose"(%arg0, %arg1) {permutation = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT:  return
func.func @two_transposes(%k: memref<1x32x2x16xf32, "gm">, %kt: memref<1x2x16x32xf32, "gm">) {
  %h = memref.alloc() : memref<1x2x32x16xf32, "gm">
  "ascend.transpose"(%k, %h) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x32x2x16xf32, "gm">, memref<1x2x32x16xf32, "gm">) -> ()
  // expected-remark @+1 {{npu-canonicalize: two transposes composed into one}}
  "ascend.transpose"(%h, %kt) {permutation = array<i64: 0, 1, 3, 2>} : (memref<1x2x32x16xf32, "gm">, memref<1x2x16x32xf32, "gm">) -> ()
  return
}

// -----

// K^T as the dynamo exporter's sdpa writes it: the heads [1, H, S, D]
// reshaped to [H, S, D], transposed to [H, D, S] (and reshaped back). The
// composed transpose reads the projection's [S, H, D] without its unit dim.
// CHECK-LABEL: func.func @transposes_around_a_reshape
// CHECK-NEXT:  %[[SQ:.*]] = memref.collapse_shape %arg0 {{\[\[}}0, 1], [2], [3]] : memref<1x32x2x16xf32, "gm"> into memref<32x2x16xf32, "gm">
// CHECK-NEXT:  "ascend.transpose"(%[[SQ]], %arg1) {permutation = array<i64: 1, 2, 0>} : (memref<32x2x16xf32, "gm">, memref<2x16x32xf32, "gm">)
// CHECK-NEXT:  return
func.func @transposes_around_a_reshape(%k: memref<1x32x2x16xf32, "gm">, %kt: memref<2x16x32xf32, "gm">) {
  %h = memref.alloc() : memref<1x2x32x16xf32, "gm">
  "ascend.transpose"(%k, %h) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x32x2x16xf32, "gm">, memref<1x2x32x16xf32, "gm">) -> ()
  %flat = memref.collapse_shape %h [[0, 1], [2], [3]] : memref<1x2x32x16xf32, "gm"> into memref<2x32x16xf32, "gm">
  // expected-remark @+1 {{npu-canonicalize: two transposes composed into one}}
  "ascend.transpose"(%flat, %kt) {permutation = array<i64: 0, 2, 1>} : (memref<2x32x16xf32, "gm">, memref<2x16x32xf32, "gm">) -> ()
  return
}

// -----

// K's heads are overwritten between the two transposes: the second must
// read the first's copy, so they stay apart.
// CHECK-LABEL: func.func @transposes_kept
// CHECK:       "ascend.transpose"(%arg0, %{{.*}}) {permutation = array<i64: 0, 2, 1, 3>}
// CHECK:       "ascend.transpose"(%{{.*}}, %arg1) {permutation = array<i64: 0, 1, 3, 2>}
func.func @transposes_kept(%k: memref<1x32x2x16xf32, "gm">, %kt: memref<1x2x16x32xf32, "gm">) {
  %h = memref.alloc() : memref<1x2x32x16xf32, "gm">
  "ascend.transpose"(%k, %h) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x32x2x16xf32, "gm">, memref<1x2x32x16xf32, "gm">) -> ()
  "ascend.exp"(%k, %k) : (memref<1x32x2x16xf32, "gm">, memref<1x32x2x16xf32, "gm">) -> ()
  "ascend.transpose"(%h, %kt) {permutation = array<i64: 0, 1, 3, 2>} : (memref<1x2x32x16xf32, "gm">, memref<1x2x16x32xf32, "gm">) -> ()
  return
}
