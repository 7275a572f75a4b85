// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-canonicalize | FileCheck %s

// A conv's NC1HWC0 result [C1, HW, C0] turned to NCHW ([C1, C0, HW]) and
// read as [1, C, H, W] by ConvNeXt's permute to NHWC: one transpose over the
// dims both shapes group, [C1, HW, C0] -> [HW, C1, C0], whole C0 runs moved.
// CHECK-LABEL: func.func @nc1hwc0_to_nhwc
// CHECK:       %[[OUT:.*]] = memref.expand_shape %{{.*}} output_shape [64, 2, 16] : memref<2048xf32, "gm"> into memref<64x2x16xf32, "gm">
// CHECK-NEXT:  "ascend.transpose"(%arg0, %[[OUT]]) {permutation = array<i64: 1, 0, 2>} : (memref<2x64x16xf32, "gm">, memref<64x2x16xf32, "gm">)
// CHECK-NOT:   "ascend.transpose"
func.func @nc1hwc0_to_nhwc(%x: memref<2x64x16xf32, "gm">, %y: memref<1x8x8x32xf32, "gm">) {
  %t = memref.alloc() : memref<2x16x64xf32, "gm">
  "ascend.transpose"(%x, %t) {permutation = array<i64: 0, 2, 1>} : (memref<2x64x16xf32, "gm">, memref<2x16x64xf32, "gm">) -> ()
  %flat = memref.collapse_shape %t [[0, 1, 2]] : memref<2x16x64xf32, "gm"> into memref<2048xf32, "gm">
  %nchw = memref.expand_shape %flat [[0, 1, 2, 3]] output_shape [1, 32, 8, 8] : memref<2048xf32, "gm"> into memref<1x32x8x8xf32, "gm">
  // expected-remark @+1 {{npu-canonicalize: two transposes composed into one}}
  "ascend.transpose"(%nchw, %y) {permutation = array<i64: 0, 2, 3, 1>} : (memref<1x32x8x8xf32, "gm">, memref<1x8x8x32xf32, "gm">) -> ()
  return
}

// -----

// The same with one channel block: the two are a copy.
// CHECK-LABEL: func.func @one_block_is_a_copy
// CHECK:       "ascend.transpose"(%{{.*}}, %{{.*}}) {permutation = array<i64: 0>} : (memref<1024xf32, "gm">, memref<1024xf32, "gm">)
// CHECK-NOT:   "ascend.transpose"
func.func @one_block_is_a_copy(%x: memref<1x64x16xf32, "gm">, %y: memref<1x8x8x16xf32, "gm">) {
  %t = memref.alloc() : memref<1x16x64xf32, "gm">
  "ascend.transpose"(%x, %t) {permutation = array<i64: 0, 2, 1>} : (memref<1x64x16xf32, "gm">, memref<1x16x64xf32, "gm">) -> ()
  %flat = memref.collapse_shape %t [[0, 1, 2]] : memref<1x16x64xf32, "gm"> into memref<1024xf32, "gm">
  %nchw = memref.expand_shape %flat [[0, 1, 2, 3]] output_shape [1, 16, 8, 8] : memref<1024xf32, "gm"> into memref<1x16x8x8xf32, "gm">
  // expected-remark @+1 {{npu-canonicalize: two transposes composed into one}}
  "ascend.transpose"(%nchw, %y) {permutation = array<i64: 0, 2, 3, 1>} : (memref<1x16x8x8xf32, "gm">, memref<1x8x8x16xf32, "gm">) -> ()
  return
}

// -----

// A reshape that is no grouping of the first's result (rows of 6 read as
// rows of 4): the transposes stay apart.
// CHECK-LABEL: func.func @no_common_dims
// CHECK:       "ascend.transpose"(%arg0, %{{.*}}) {permutation = array<i64: 1, 0>}
// CHECK:       "ascend.transpose"(%{{.*}}, %arg1) {permutation = array<i64: 1, 0>}
func.func @no_common_dims(%x: memref<4x6xf32, "gm">, %y: memref<6x4xf32, "gm">) {
  %t = memref.alloc() : memref<6x4xf32, "gm">
  "ascend.transpose"(%x, %t) {permutation = array<i64: 1, 0>} : (memref<4x6xf32, "gm">, memref<6x4xf32, "gm">) -> ()
  %flat = memref.collapse_shape %t [[0, 1]] : memref<6x4xf32, "gm"> into memref<24xf32, "gm">
  %v = memref.expand_shape %flat [[0, 1]] output_shape [6, 4] : memref<24xf32, "gm"> into memref<6x4xf32, "gm">
  %w = memref.collapse_shape %v [[0, 1]] : memref<6x4xf32, "gm"> into memref<24xf32, "gm">
  %u = memref.expand_shape %w [[0, 1]] output_shape [4, 6] : memref<24xf32, "gm"> into memref<4x6xf32, "gm">
  "ascend.transpose"(%u, %y) {permutation = array<i64: 1, 0>} : (memref<4x6xf32, "gm">, memref<6x4xf32, "gm">) -> ()
  return
}
