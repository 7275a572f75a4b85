// RUN: npu-opt %s --split-input-file --npu-lower-transpose | FileCheck %s

// [1, 2, 0] on 3x5x7 merges to the 2-D transpose of [3, 35], too small for a
// 16-row vnchwconv tile: the general gather. The 105 elements are loaded
// whole (7 blocks), expanded to one block each (7 vnchwconv repeats, all 16
// rows read the same block), assembled in output order with one UB copy per
// output row (35 rows of 3 one-block bursts, source gap 34 blocks), compacted
// by a second vnchwconv (first result row kept, the others to scratch at
// block 7) and stored.
// CHECK-LABEL: func.func @gather
// CHECK: "cce.copy_gm_to_ub"({{.*}}) {burst_len = 7 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
// CHECK: "cce.vnchwconv"({{.*}}) {dst_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, dst_rep_stride = 16 : i64, repeat = 7 : i64, src_offsets = array<i64: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, src_rep_stride = 1 : i64}
// CHECK: scf.for
// CHECK: "cce.copy_ub_to_ub"({{.*}}) {burst_len = 1 : i64, dst_gap = 0 : i64, n_burst = 3 : i64, src_gap = 34 : i64}
// CHECK: "cce.vnchwconv"({{.*}}) {dst_offsets = array<i64: 0, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7>, dst_rep_stride = 1 : i64, repeat = 7 : i64, src_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, src_rep_stride = 16 : i64}
// CHECK: "cce.copy_ub_to_gm"({{.*}}) {burst_len = 7 : i64, dst_gap = 0 : i64, n_burst = 1 : i64, src_gap = 0 : i64}
func.func @gather(%a: memref<3x5x7xf16, "gm">, %b: memref<5x7x3xf16, "gm">) {
  "ascend.transpose"(%a, %b) {permutation = array<i64: 1, 2, 0>} : (memref<3x5x7xf16, "gm">, memref<5x7x3xf16, "gm">) -> ()
  return
}

// -----

// [2, 0, 1] on 4x16x32: dims 0 and 1 stay adjacent, so this is the 2-D
// transpose of [64, 32] with vnchwconv (no gather).
// CHECK-LABEL: func.func @merged
// CHECK-NOT: cce.copy_ub_to_ub
// CHECK: "cce.vnchwconv"
// CHECK-NOT: cce.copy_ub_to_ub
func.func @merged(%a: memref<4x16x32xf16, "gm">, %b: memref<32x4x16xf16, "gm">) {
  "ascend.transpose"(%a, %b) {permutation = array<i64: 2, 0, 1>} : (memref<4x16x32xf16, "gm">, memref<32x4x16xf16, "gm">) -> ()
  return
}

// -----

// Only size-1 dims move: a copy through UB.
// CHECK-LABEL: func.func @copy_only
// CHECK-NOT: cce.vnchwconv
// CHECK: "cce.copy_gm_to_ub"
// CHECK-NEXT: "cce.copy_ub_to_gm"
// CHECK-NOT: cce.vnchwconv
func.func @copy_only(%a: memref<1x64x1x8xf32, "gm">, %b: memref<1x1x64x8xf32, "gm">) {
  "ascend.transpose"(%a, %b) {permutation = array<i64: 0, 2, 1, 3>} : (memref<1x64x1x8xf32, "gm">, memref<1x1x64x8xf32, "gm">) -> ()
  return
}

// -----

// A reversal of 64x48x32 f32 as two rotations: [1 | 64*48, 32] into a GM
// temporary (npu.core_private: each core's own on a multi-core kernel),
// then batch 32 of [64 | 48] into the output.
// CHECK-LABEL: func.func @rotations
// CHECK: %[[TMP:.*]] = memref.alloc() {npu.core_private} : memref<98304xf32, "gm">
// CHECK: "cce.vnchwconv"
// CHECK: "cce.copy_ub_to_gm"({{.*}}, %{{.*}}) {{.*}} -> ()
// CHECK: scf.for
// CHECK: memref.subview %[[TMP]]
// CHECK: "cce.vnchwconv"
func.func @rotations(%a: memref<64x48x32xf32, "gm">, %b: memref<32x48x64xf32, "gm">) {
  "ascend.transpose"(%a, %b) {permutation = array<i64: 2, 1, 0>} : (memref<64x48x32xf32, "gm">, memref<32x48x64xf32, "gm">) -> ()
  return
}
