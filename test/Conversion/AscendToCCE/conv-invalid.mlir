// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-lower-conv
// RUN: not npu-opt %s --split-input-file --npu-lower-conv 2>&1 | FileCheck %s

// The contract's NCHW form is not lowered (the frontend makes nc1hwc0 with
// fractal-Z weights, grouped convs' as dense block-diagonal ones).
// CHECK: conv-invalid.mlir:[[@LINE+3]]:3: error: npu-lower-conv: cannot lower this conv: groups = 4 in the NCHW form
func.func @depthwise(%x: memref<1x4x8x8xf16, "gm">, %w: memref<4x1x3x3xf16, "gm">, %y: memref<1x4x6x6xf32, "gm">) {
  // expected-error@+1 {{groups = 4 in the NCHW form (weights computed at run time, or IR written by hand)}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 4 : i64} : (memref<1x4x8x8xf16, "gm">, memref<4x1x3x3xf16, "gm">, memref<1x4x6x6xf32, "gm">) -> ()
  return
}

// -----

// CHECK: conv-invalid.mlir:[[@LINE+3]]:3: error: npu-lower-conv: cannot lower this conv: the NCHW form
func.func @nchw(%x: memref<1x4x8x8xf16, "gm">, %w: memref<4x4x3x3xf16, "gm">, %y: memref<1x4x6x6xf32, "gm">) {
  // expected-error@+1 {{the NCHW form (weights computed at run time, or IR written by hand)}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (memref<1x4x8x8xf16, "gm">, memref<4x4x3x3xf16, "gm">, memref<1x4x6x6xf32, "gm">) -> ()
  return
}
