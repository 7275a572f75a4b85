// RUN: npu-opt %s --split-input-file --verify-diagnostics
// The verifier rules of ascend.pool2d (dialects/ascend_pool.py), one chunk each.

func.func @pool2d_kind(%x: memref<1x3x9x9xf16, "gm">, %y: memref<1x3x5x5xf16, "gm">) {
  // expected-error@+1 {{'ascend.pool2d' op attribute 'kind'}}
  "ascend.pool2d"(%x, %y) {kind = "min", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 1 : i64} : (memref<1x3x9x9xf16, "gm">, memref<1x3x5x5xf16, "gm">) -> ()
  return
}

// -----
func.func @pool2d_shape(%x: memref<1x3x9x9xf16, "gm">, %y: memref<1x3x4x5xf16, "gm">) {
  // expected-error@+1 {{output shape must be [1, 3, 5, 5] for input [1, 3, 9, 9], got [1, 3, 4, 5]}}
  "ascend.pool2d"(%x, %y) {kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 1 : i64} : (memref<1x3x9x9xf16, "gm">, memref<1x3x4x5xf16, "gm">) -> ()
  return
}

// -----
func.func @pool2d_rank(%x: memref<3x9x9xf16, "gm">, %y: memref<3x5x5xf16, "gm">) {
  // expected-error@+1 {{input and output must be NCHW (rank 4), got ranks 3 and 3}}
  "ascend.pool2d"(%x, %y) {kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 1 : i64} : (memref<3x9x9xf16, "gm">, memref<3x5x5xf16, "gm">) -> ()
  return
}

// -----
func.func @pool2d_zero_stride(%x: memref<1x3x9x9xf16, "gm">, %y: memref<1x3x5x5xf16, "gm">) {
  // expected-error@+1 {{'strides' values must be at least 1, got [0, 2]}}
  "ascend.pool2d"(%x, %y) {kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 0, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 1 : i64} : (memref<1x3x9x9xf16, "gm">, memref<1x3x5x5xf16, "gm">) -> ()
  return
}

// -----
func.func @pool2d_window(%x: memref<1x3x2x9xf16, "gm">, %y: memref<1x3x1x9xf16, "gm">) {
  // expected-error@+1 {{the window (3 x 1) is larger than the padded input}}
  "ascend.pool2d"(%x, %y) {kind = "max", kernel = array<i64: 3, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, count_include_pad = 1 : i64} : (memref<1x3x2x9xf16, "gm">, memref<1x3x1x9xf16, "gm">) -> ()
  return
}

// -----
func.func @pool2d_int(%x: memref<1x3x9x9xi32, "gm">, %y: memref<1x3x5x5xi32, "gm">) {
  // expected-error@+1 {{element types}}
  "ascend.pool2d"(%x, %y) {kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 1 : i64} : (memref<1x3x9x9xi32, "gm">, memref<1x3x5x5xi32, "gm">) -> ()
  return
}

// -----
func.func @pool2d_5hd_c0(%x: memref<1x4x9x9x8xf32, "gm">, %y: memref<1x4x5x5x8xf32, "gm">) {
  // expected-error@+1 {{'ascend.pool2d' op layout "nc1hwc0" takes f16 or f32 [N, C1, H, W, 16] input and output, got f32 [1, 4, 9, 9, 8] and [1, 4, 5, 5, 8]}}
  "ascend.pool2d"(%x, %y) {kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 1 : i64, layout = "nc1hwc0"} : (memref<1x4x9x9x8xf32, "gm">, memref<1x4x5x5x8xf32, "gm">) -> ()
  return
}

// -----
func.func @pool2d_5hd_shape(%x: memref<1x4x9x9x16xf16, "gm">, %y: memref<1x4x4x5x16xf16, "gm">) {
  // expected-error@+1 {{output shape must be [1, 4, 5, 5] for input [1, 4, 9, 9], got [1, 4, 4, 5]}}
  "ascend.pool2d"(%x, %y) {kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 1 : i64, layout = "nc1hwc0"} : (memref<1x4x9x9x16xf16, "gm">, memref<1x4x4x5x16xf16, "gm">) -> ()
  return
}

// -----
func.func @pool2d_layout(%x: memref<1x3x9x9xf16, "gm">, %y: memref<1x3x5x5xf16, "gm">) {
  // expected-error@+1 {{attribute 'layout' must be "nchw" or "nc1hwc0", got "nhwc"}}
  "ascend.pool2d"(%x, %y) {kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 1 : i64, layout = "nhwc"} : (memref<1x3x9x9xf16, "gm">, memref<1x3x5x5xf16, "gm">) -> ()
  return
}
