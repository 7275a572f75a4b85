// RUN: npu-opt %s --split-input-file --verify-diagnostics
// The verifier rules of ascend.conv2d (dialects/ascend_conv.py), one chunk each.

func.func @conv_missing_groups(%x: memref<1x3x9x9xf16, "gm">, %w: memref<8x3x3x3xf16, "gm">, %y: memref<1x8x7x7xf32, "gm">) {
  // expected-error@+1 {{attribute "groups" is expected but not provided}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (memref<1x3x9x9xf16, "gm">, memref<8x3x3x3xf16, "gm">, memref<1x8x7x7xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_f32_input(%x: memref<1x3x9x9xf32, "gm">, %w: memref<8x3x3x3xf16, "gm">, %y: memref<1x8x7x7xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op unsupported element types (input: f32, weight: f16, out: f32); input and weight are f16, out f32 or f16}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (memref<1x3x9x9xf32, "gm">, memref<8x3x3x3xf16, "gm">, memref<1x8x7x7xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_bias_type(%x: memref<1x3x9x9xf16, "gm">, %w: memref<8x3x3x3xf16, "gm">, %b: memref<8xf16, "gm">, %y: memref<1x8x7x7xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op bias must have out's element type f32, got f16}}
  "ascend.conv2d"(%x, %w, %b, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (memref<1x3x9x9xf16, "gm">, memref<8x3x3x3xf16, "gm">, memref<8xf16, "gm">, memref<1x8x7x7xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_three_pads(%x: memref<1x3x9x9xf16, "gm">, %w: memref<8x3x3x3xf16, "gm">, %y: memref<1x8x7x7xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op attribute 'pads' must have 4 entries, got 3}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (memref<1x3x9x9xf16, "gm">, memref<8x3x3x3xf16, "gm">, memref<1x8x7x7xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_zero_stride(%x: memref<1x3x9x9xf16, "gm">, %w: memref<8x3x3x3xf16, "gm">, %y: memref<1x8x7x7xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op strides [0, 1] and dilations [1, 1] must be >= 1}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 0, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (memref<1x3x9x9xf16, "gm">, memref<8x3x3x3xf16, "gm">, memref<1x8x7x7xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_groups(%x: memref<1x6x9x9xf16, "gm">, %w: memref<8x2x3x3xf16, "gm">, %y: memref<1x8x7x7xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op groups 4 must be >= 1 and divide the input channels (6) and the output channels (8)}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 4 : i64} : (memref<1x6x9x9xf16, "gm">, memref<8x2x3x3xf16, "gm">, memref<1x8x7x7xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_kernel_too_large(%x: memref<1x3x4x4xf16, "gm">, %w: memref<8x3x5x5xf16, "gm">, %y: memref<1x8x1x1xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op the kernel spans 5x5 (dilations included), larger than the padded input 4x4}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (memref<1x3x4x4xf16, "gm">, memref<8x3x5x5xf16, "gm">, memref<1x8x1x1xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_weight_channels(%x: memref<1x3x9x9xf16, "gm">, %w: memref<8x4x3x3xf16, "gm">, %y: memref<1x8x7x7xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op weight must be [Cout, C/groups, Kh, Kw] = [8, 3, 3, 3] for input [1, 3, 9, 9] and groups 1, got [8, 4, 3, 3]}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (memref<1x3x9x9xf16, "gm">, memref<8x4x3x3xf16, "gm">, memref<1x8x7x7xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_bias_shape(%x: memref<1x3x9x9xf16, "gm">, %w: memref<8x3x3x3xf16, "gm">, %b: memref<1x8xf32, "gm">, %y: memref<1x8x7x7xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op bias must be [Cout] = [8], got [1, 8]}}
  "ascend.conv2d"(%x, %w, %b, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (memref<1x3x9x9xf16, "gm">, memref<8x3x3x3xf16, "gm">, memref<1x8xf32, "gm">, memref<1x8x7x7xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_out_shape(%x: memref<1x3x9x9xf16, "gm">, %w: memref<8x3x3x3xf16, "gm">, %y: memref<1x8x9x9xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op out must be [N, Cout, Ho, Wo] = [1, 8, 4, 4] (Ho = (H + top + bottom - dh*(Kh-1) - 1) / sh + 1, Wo alike), got [1, 8, 9, 9]}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (memref<1x3x9x9xf16, "gm">, memref<8x3x3x3xf16, "gm">, memref<1x8x9x9xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_rank(%x: memref<3x9x9xf16, "gm">, %w: memref<8x3x3x3xf16, "gm">, %y: memref<1x8x7x7xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op input must be [N, C, H, W], got shape [3, 9, 9]}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (memref<3x9x9xf16, "gm">, memref<8x3x3x3xf16, "gm">, memref<1x8x7x7xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_ub(%x: memref<1x3x9x9xf16, "ub">, %w: memref<8x3x3x3xf16, "gm">, %y: memref<1x8x7x7xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op operand #0 ('input') must be in memory space 'gm'}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (memref<1x3x9x9xf16, "ub">, memref<8x3x3x3xf16, "gm">, memref<1x8x7x7xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_5hd_weight(%x: memref<1x2x6x6x16xf16, "gm">, %w: memref<9x1x16x16xf16, "gm">, %y: memref<1x1x6x6x16xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op weight must be fractal-Z [18, 1, 16, 16], got [9, 1, 16, 16]}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>} : (memref<1x2x6x6x16xf16, "gm">, memref<9x1x16x16xf16, "gm">, memref<1x1x6x6x16xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_5hd_no_kernel(%x: memref<1x2x6x6x16xf16, "gm">, %w: memref<18x1x16x16xf16, "gm">, %y: memref<1x1x6x6x16xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op layout "nc1hwc0" needs `kernel = array<i64: Kh, Kw>`}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0"} : (memref<1x2x6x6x16xf16, "gm">, memref<18x1x16x16xf16, "gm">, memref<1x1x6x6x16xf32, "gm">) -> ()
  return
}

// -----
// A dense array of another element type is refused, not cast (npu-opt's fuzz
// case opt-2978 stopped with an internal error on it).
func.func @conv_5hd_kernel_ui8(%x: memref<1x2x6x6x16xf16, "gm">, %w: memref<18x1x16x16xf16, "gm">, %y: memref<1x1x6x6x16xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op layout "nc1hwc0" needs `kernel = array<i64: Kh, Kw>`, got array<ui8: 3, 3>}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<ui8: 3, 3>} : (memref<1x2x6x6x16xf16, "gm">, memref<18x1x16x16xf16, "gm">, memref<1x1x6x6x16xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_small_two_blocks(%x: memref<1x2x6x6x16xf16, "gm">, %w: memref<3x1x16x16xf16, "gm">, %y: memref<1x1x6x6x16xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op layout "nc1hwc0_c4" takes one C1 block (C <= 4), got 2}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0_c4", kernel = array<i64: 3, 3>} : (memref<1x2x6x6x16xf16, "gm">, memref<3x1x16x16xf16, "gm">, memref<1x1x6x6x16xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_diagonal_blocks(%x: memref<1x2x6x6x16xf16, "gm">, %w: memref<9x1x16x16xf16, "gm">, %y: memref<1x1x6x6x16xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op layout "nc1hwc0_bd" takes C1 = Cout1, got 2 and 1}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0_bd", kernel = array<i64: 3, 3>} : (memref<1x2x6x6x16xf16, "gm">, memref<9x1x16x16xf16, "gm">, memref<1x1x6x6x16xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_diagonal_weight(%x: memref<1x2x6x6x16xf16, "gm">, %w: memref<18x2x16x16xf16, "gm">, %y: memref<1x2x6x6x16xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op weight must be fractal-Z [9, 2, 16, 16], got [18, 2, 16, 16]}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0_bd", kernel = array<i64: 3, 3>} : (memref<1x2x6x6x16xf16, "gm">, memref<18x2x16x16xf16, "gm">, memref<1x2x6x6x16xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_bad_layout(%x: memref<1x2x6x6x16xf16, "gm">, %w: memref<18x1x16x16xf16, "gm">, %y: memref<1x1x6x6x16xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op attribute 'layout' must be "nchw", "nc1hwc0", "nc1hwc0_c4" or "nc1hwc0_bd", got "nhwc"}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nhwc", kernel = array<i64: 3, 3>} : (memref<1x2x6x6x16xf16, "gm">, memref<18x1x16x16xf16, "gm">, memref<1x1x6x6x16xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_image_five_channels(%x: memref<1x5x20x20xf16, "gm">, %w: memref<13x1x16x16xf16, "gm">, %y: memref<1x1x10x10x16xf16, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op an NCHW input in layout "nc1hwc0_c4" has 1 to 4 channels, got 5}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0_c4", kernel = array<i64: 7, 7>} : (memref<1x5x20x20xf16, "gm">, memref<13x1x16x16xf16, "gm">, memref<1x1x10x10x16xf16, "gm">) -> ()
  return
}

// -----
func.func @conv_int8_weight(%x: memref<1x3x9x9x16xf16, "gm">, %w: memref<27x1x16x32xi8, "gm">, %y: memref<1x1x9x9x16xi32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op weight must be fractal-Z [18, 1, 16, 32], got [27, 1, 16, 32]}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>} : (memref<1x3x9x9x16xf16, "gm">, memref<27x1x16x32xi8, "gm">, memref<1x1x9x9x16xi32, "gm">) -> ()
  return
}

// -----
func.func @conv_int8_f32_out(%x: memref<1x40x9x9xf16, "gm">, %w: memref<8x40x3x3xi8, "gm">, %y: memref<1x8x7x7xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op unsupported element types (input: f16, weight: i8, out: f32); input and weight are f16, out f32 or f16 (or the int8 form: f16 input, i8 weight, i32 out)}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (memref<1x40x9x9xf16, "gm">, memref<8x40x3x3xi8, "gm">, memref<1x8x7x7xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_pad_value_f16(%x: memref<1x3x9x9xf16, "gm">, %w: memref<8x3x3x3xf16, "gm">, %y: memref<1x8x7x7xf32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op attribute 'pad_value' applies to the int8 conv only (i8 weight)}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, pad_value = 1 : i64} : (memref<1x3x9x9xf16, "gm">, memref<8x3x3x3xf16, "gm">, memref<1x8x7x7xf32, "gm">) -> ()
  return
}

// -----
func.func @conv_pad_value_range(%x: memref<1x40x9x9xf16, "gm">, %w: memref<8x40x3x3xi8, "gm">, %y: memref<1x8x7x7xi32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op attribute 'pad_value' must be in [-128, 127], got 200}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64, pad_value = 200 : i64} : (memref<1x40x9x9xf16, "gm">, memref<8x40x3x3xi8, "gm">, memref<1x8x7x7xi32, "gm">) -> ()
  return
}

// -----
func.func @conv_int8_groups(%x: memref<1x40x9x9xf16, "gm">, %w: memref<8x20x3x3xi8, "gm">, %y: memref<1x8x7x7xi32, "gm">) {
  // expected-error@+1 {{'ascend.conv2d' op the int8 conv takes groups = 1, got 2}}
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (memref<1x40x9x9xf16, "gm">, memref<8x20x3x3xi8, "gm">, memref<1x8x7x7xi32, "gm">) -> ()
  return
}
