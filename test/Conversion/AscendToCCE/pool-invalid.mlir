// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-lower-pool

func.func @tiny(%x: memref<1x3x3x3xf16, "gm">, %y: memref<1x3x1x1xf16, "gm">) {
  // expected-error@+1 {{maps under one 32-byte block per plane (3x3 -> 1x1 f16) are widened by npu-linalg-to-ascend before pooling}}
  "ascend.pool2d"(%x, %y) {kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, count_include_pad = 1 : i64} : (memref<1x3x3x3xf16, "gm">, memref<1x3x1x1xf16, "gm">) -> ()
  return
}
