// RUN: npu-opt %s --split-input-file --verify-diagnostics '--npu-lower=ub-fraction=0.01'
// RUN: npu-opt %s --split-input-file --npu-lower -o %t 2>&1 | FileCheck %s --check-prefix=DEFAULT --allow-empty

// A share of UB (ub-fraction) no tiling of a conv or pool fits: the lowering
// tiles in all of UB rather than refuse, and says so on the op, always (the
// user's option caused it), with the share and the bytes the tiles took.
// At the default share (all of UB) nothing is said.
// DEFAULT-NOT: remark

func.func @conv(%x: memref<1x2x6x6x16xf16, "gm">, %w: memref<18x1x16x16xf16, "gm">, %b: memref<16xf32, "gm">, %y: memref<1x1x6x6x16xf32, "gm">) {
  // expected-remark @+1 {{npu-lower-conv: no tiling fits ub-fraction=0.01 (2621 bytes); tiled in all of UB (the kernel's buffers 18688 bytes; UB 262144)}}
  "ascend.conv2d"(%x, %w, %b, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>} : (memref<1x2x6x6x16xf16, "gm">, memref<18x1x16x16xf16, "gm">, memref<16xf32, "gm">, memref<1x1x6x6x16xf32, "gm">) -> ()
  return
}

// -----

// The NCHW image's staging is counted apart from the kernel's buffers.
func.func @stem_image(%x: memref<1x3x20x21xf16, "gm">, %w: memref<13x1x16x16xf16, "gm">, %y: memref<1x1x10x11x16xf16, "gm">) {
  // expected-remark @+1 {{npu-lower-conv: no tiling fits ub-fraction=0.01 (2621 bytes); tiled in all of UB (the kernel's buffers 21504 bytes, the stagings 84992; UB 262144)}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0_c4", kernel = array<i64: 7, 7>} : (memref<1x3x20x21xf16, "gm">, memref<13x1x16x16xf16, "gm">, memref<1x1x10x11x16xf16, "gm">) -> ()
  return
}

// -----

// Two ping-ponged tiles of one output row need 26,624 bytes: one tile of
// as many rows as all of UB holds instead.
func.func @pool(%x: memref<1x16x64x64xf16, "gm">, %y: memref<1x16x32x32xf16, "gm">) {
  // expected-remark @+1 {{npu-lower-pool: no tiling fits ub-fraction=0.01 (2621 bytes); tiled in all of UB (one tile of 251904 bytes; UB 262144)}}
  "ascend.pool2d"(%x, %y) {kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 1 : i64} : (memref<1x16x64x64xf16, "gm">, memref<1x16x32x32xf16, "gm">) -> ()
  return
}
