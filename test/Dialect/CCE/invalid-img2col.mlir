// RUN: npu-opt %s --split-input-file --verify-diagnostics
// The verifier rules of cce.img2col_l1_to_l0a (dialects/cce_img2col.py), one chunk each.

func.func @img2col_fetch_outside(%fm: memref<2x9x9x16xf16, "l1">, %a: memref<512xf16, "l0a">) {
  // expected-error@+1 {{'cce.img2col_l1_to_l0a' op kernel point (2, 3) is outside the 3x3 kernel}}
  "cce.img2col_l1_to_l0a"(%fm, %a) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 3 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64} : (memref<2x9x9x16xf16, "l1">, memref<512xf16, "l0a">) -> ()
  return
}

// -----
func.func @img2col_misaligned_window(%fm: memref<2x9x9x16xf16, "l1">, %a: memref<512xf16, "l0a">) {
  // expected-error@+1 {{'cce.img2col_l1_to_l0a' op left_top_w = 0 is not a window position: -pad (-1) plus a multiple of the stride (2)}}
  "cce.img2col_l1_to_l0a"(%fm, %a) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = 0 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64} : (memref<2x9x9x16xf16, "l1">, memref<512xf16, "l0a">) -> ()
  return
}

// -----
func.func @img2col_past_c1(%fm: memref<2x9x9x16xf16, "l1">, %a: memref<512xf16, "l0a">) {
  // expected-error@+1 {{'cce.img2col_l1_to_l0a' op reads C1 block 2 of a map with 2 (c1 = 1, 9 repeats in mode 0)}}
  "cce.img2col_l1_to_l0a"(%fm, %a) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 0 : i64, repeat = 9 : i64} : (memref<2x9x9x16xf16, "l1">, memref<512xf16, "l0a">) -> ()
  return
}

// -----
func.func @img2col_map_shape(%fm: memref<2x9x9x16xf16, "l1">, %a: memref<512xf16, "l0a">) {
  // expected-error@+1 {{'cce.img2col_l1_to_l0a' op src must be the feature map [C1, fm_h, fm_w, 16] = [C1, 9, 8, 16], got [2, 9, 9, 16]}}
  "cce.img2col_l1_to_l0a"(%fm, %a) {fm_h = 9 : i64, fm_w = 8 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64} : (memref<2x9x9x16xf16, "l1">, memref<512xf16, "l0a">) -> ()
  return
}

// -----
func.func @img2col_stride_field(%fm: memref<2x9x9x16xf16, "l1">, %a: memref<512xf16, "l0a">) {
  // expected-error@+1 {{'cce.img2col_l1_to_l0a' op attribute 'stride_h' must be in [1, 63] (6-bit field of the instruction), got 64}}
  "cce.img2col_l1_to_l0a"(%fm, %a) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 64 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64} : (memref<2x9x9x16xf16, "l1">, memref<512xf16, "l0a">) -> ()
  return
}

// -----
func.func @img2col_too_many_fractals(%fm: memref<2x9x9x16xf16, "l1">, %a: memref<512xf16, "l0a">) {
  // expected-error@+1 {{'cce.img2col_l1_to_l0a' op writes 1536 bytes (3 fractals, dst_stride 1) into a dst of 1024 bytes}}
  "cce.img2col_l1_to_l0a"(%fm, %a) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 3 : i64} : (memref<2x9x9x16xf16, "l1">, memref<512xf16, "l0a">) -> ()
  return
}

// -----
func.func @img2col_kernel_too_big(%fm: memref<2x9x9x16xf16, "l1">, %a: memref<512xf16, "l0a">) {
  // expected-error@+1 {{'cce.img2col_l1_to_l0a' op the 12x3 kernel (dilation 1x1) is larger than the padded 9x9 map}}
  "cce.img2col_l1_to_l0a"(%fm, %a) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 12 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64} : (memref<2x9x9x16xf16, "l1">, memref<512xf16, "l0a">) -> ()
  return
}

// -----
func.func @img2col_f32(%fm: memref<2x9x9x16xf32, "l1">, %a: memref<512xf32, "l0a">) {
  // expected-error@+1 {{'cce.img2col_l1_to_l0a' op unsupported element types (src: f32, dst: f32); all operands must have the same element type, one of f16, i8}}
  "cce.img2col_l1_to_l0a"(%fm, %a) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64} : (memref<2x9x9x16xf32, "l1">, memref<512xf32, "l0a">) -> ()
  return
}

// -----
func.func @img2col_pad_value_f16(%fm: memref<2x9x9x16xf16, "l1">, %a: memref<512xf16, "l0a">) {
  // expected-error@+1 {{'cce.img2col_l1_to_l0a' op pad_value = 3 needs an i8 map (an f16 map pads with 0)}}
  "cce.img2col_l1_to_l0a"(%fm, %a) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64, pad_value = 3 : i64} : (memref<2x9x9x16xf16, "l1">, memref<512xf16, "l0a">) -> ()
  return
}

// -----
func.func @img2col_pad_value_range(%fm: memref<2x9x9x32xi8, "l1">, %a: memref<1024xi8, "l0a">) {
  // expected-error@+1 {{'cce.img2col_l1_to_l0a' op attribute 'pad_value' must be in [-128, 127] (an int8), got 128}}
  "cce.img2col_l1_to_l0a"(%fm, %a) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64, pad_value = 128 : i64} : (memref<2x9x9x32xi8, "l1">, memref<1024xi8, "l0a">) -> ()
  return
}

// -----
func.func @img2col_pad_value_i32(%fm: memref<2x9x9x32xi8, "l1">, %a: memref<1024xi8, "l0a">) {
  // expected-error@+1 {{'cce.img2col_l1_to_l0a' op attribute 'pad_value' must be a 64-bit integer (e.g. `3 : i64`), got 3 : i32}}
  "cce.img2col_l1_to_l0a"(%fm, %a) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64, pad_value = 3 : i32} : (memref<2x9x9x32xi8, "l1">, memref<1024xi8, "l0a">) -> ()
  return
}

// -----
func.func @img2col_i8_c0(%fm: memref<2x9x9x16xi8, "l1">, %a: memref<1024xi8, "l0a">) {
  // expected-error@+1 {{'cce.img2col_l1_to_l0a' op src must be the feature map [C1, fm_h, fm_w, 32] = [C1, 9, 9, 32], got [2, 9, 9, 16]}}
  "cce.img2col_l1_to_l0a"(%fm, %a) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64} : (memref<2x9x9x16xi8, "l1">, memref<1024xi8, "l0a">) -> ()
  return
}

// -----
func.func @img2col_i8_small_channel(%fm: memref<2x9x9x32xi8, "l1">, %a: memref<1024xi8, "l0a">) {
  // expected-error@+1 {{'cce.img2col_l1_to_l0a' op small_channel = 1 reads f16 maps only (an int8 map has C0 = 32)}}
  "cce.img2col_l1_to_l0a"(%fm, %a) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64, small_channel = 1 : i64} : (memref<2x9x9x32xi8, "l1">, memref<1024xi8, "l0a">) -> ()
  return
}

// -----
func.func @img2col_i8_dst_too_small(%fm: memref<2x9x9x32xi8, "l1">, %a: memref<512xi8, "l0a">) {
  // expected-error@+1 {{'cce.img2col_l1_to_l0a' op writes 1024 bytes (2 fractals, dst_stride 1) into a dst of 512 bytes}}
  "cce.img2col_l1_to_l0a"(%fm, %a) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64} : (memref<2x9x9x32xi8, "l1">, memref<512xi8, "l0a">) -> ()
  return
}

// -----
func.func @img2col_mixed_types(%fm: memref<2x9x9x32xi8, "l1">, %a: memref<512xf16, "l0a">) {
  // expected-error@+1 {{'cce.img2col_l1_to_l0a' op unsupported element types (src: i8, dst: f16); all operands must have the same element type, one of f16, i8}}
  "cce.img2col_l1_to_l0a"(%fm, %a) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64} : (memref<2x9x9x32xi8, "l1">, memref<512xf16, "l0a">) -> ()
  return
}
