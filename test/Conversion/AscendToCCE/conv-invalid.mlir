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

// -----

// A conv cut by rows needs the block index that picks its rows.
// CHECK: conv-invalid.mlir:[[@LINE+3]]:3: error: npu-lower-conv: npu.core_part outside a multi-core kernel
func.func @rows_on_one_core(%x: memref<1x1x12x8x16xf16, "gm">, %w: memref<9x1x16x16xf16, "gm">, %y: memref<1x1x12x8x16xf32, "gm">) {
  // expected-error@+1 {{npu.core_part outside a multi-core kernel (its function has no npu.block_idx argument)}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>, npu.core_part = array<i64: 3, 1>} : (memref<1x1x12x8x16xf16, "gm">, memref<9x1x16x16xf16, "gm">, memref<1x1x12x8x16xf32, "gm">) -> ()
  return
}

// -----

// Runs of rows that read padding inside the conv (more pad than a run's rows).
// CHECK: conv-invalid.mlir:[[@LINE+3]]:3: error: npu-lower-conv: cannot cut the conv's rows over cores: the inner runs of 1 output rows read padding rows
func.func @rows_in_the_pads(%x: memref<1x1x4x8x16xf16, "gm">, %w: memref<25x1x16x16xf16, "gm">, %y: memref<1x1x4x4x16xf32, "gm">, %blk: index {npu.block_idx}) attributes {npu.block_dim = 4 : i64} {
  // expected-error@+1 {{the inner runs of 1 output rows read padding rows}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 2, 0, 2, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 5, 5>, npu.core_part = array<i64: 4, 1>} : (memref<1x1x4x8x16xf16, "gm">, memref<25x1x16x16xf16, "gm">, memref<1x1x4x4x16xf32, "gm">) -> ()
  return
}
