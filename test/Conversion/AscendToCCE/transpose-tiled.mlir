// RUN: npu-opt %s --split-input-file --npu-lower-transpose | FileCheck %s

// MobileViT at 64x64 unfolds its patches with [2, 1, 0] on 32x16x4 f32: no
// fast form (4 columns, under one block), and the UB gather of all 2048
// elements needs 155,712 bytes of a 131,072-byte budget. It is cut along
// input dim 0 into 2 pieces of 16: each piece's source is contiguous (1024
// elements, 128 blocks, loaded in place), gathered whole into a GM scratch,
// and copied into the result's box: 4 x 16 runs of 16 elements (2 blocks),
// 2 blocks apart.
// CHECK-LABEL: func.func @unfold
// CHECK: memref.alloc() {npu.core_private} : memref<1024xf32, "gm">
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 128 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
// CHECK: "cce.vnchwconv"
// CHECK: "cce.copy_ub_to_ub"
// CHECK: "cce.vnchwconv"
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 128 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
// CHECK: scf.for
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 2 : i64, dst_gap = 0 : i64, n_burst = 16 : i64, src_gap = 0 : i64}
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 2 : i64, dst_gap = 2 : i64, n_burst = 16 : i64, src_gap = 0 : i64}
func.func @unfold(%a: memref<32x16x4xf32, "gm">, %b: memref<4x16x32xf32, "gm">) {
  "ascend.transpose"(%a, %b) {permutation = array<i64: 2, 1, 0>} : (memref<32x16x4xf32, "gm">, memref<4x16x32xf32, "gm">) -> ()
  return
}

// -----

// A reversal of 3x200x300 f32: one cut is not enough (the smallest piece
// whose runs are a block on both sides is still too large for UB), so dim 1
// is cut into pieces of 3 and each of those again along dim 2.
// CHECK-LABEL: func.func @reverse_large
// CHECK: scf.for
// CHECK: scf.for
// CHECK: "cce.vnchwconv"
// CHECK-NOT: error
func.func @reverse_large(%a: memref<3x200x300xf32, "gm">, %b: memref<300x200x3xf32, "gm">) {
  "ascend.transpose"(%a, %b) {permutation = array<i64: 2, 1, 0>} : (memref<3x200x300xf32, "gm">, memref<300x200x3xf32, "gm">) -> ()
  return
}
