// RUN: npu-opt %s --split-input-file --npu-lower-cce-to-hivm | FileCheck %s
// img2col: the map's feature-map register (fmatrix word: fm_w bits 0-15,
// fm_h 16-31, pads left 32-39, right 40-47, top 48-55, bottom 56-63) is set
// by hivm.set_fmatrix, then the instruction takes (dst, src, pos, config):
// pos packs c1 (0-11), fetch_w (12-19), fetch_h (20-27), left_top_w (32-47)
// and left_top_h (48-63) as 16-bit two's complement; config packs stride_w
// (0-5), stride_h (6-11), kernel_w (12-19), kernel_h (20-27), dilation_w
// (28-35), dilation_h (36-43), dst_stride (44-51), repeat_mode (52), repeat
// (56-63). An int8 map sets b8 (54) and, where its pad differs from the
// padding register, hivm.set_padding first.

// CHECK-LABEL: func.func @img2col
// 0x0101010100090009: a 9x9 map, every pad 1
// CHECK-DAG: %[[FM:.*]] = arith.constant 72340172821823497 : i64
// 0xffffffff00201001: c1 1, fetch_w 1, fetch_h 2, left_top (-1, -1)
// CHECK-DAG: %[[POS:.*]] = arith.constant -4292866047 : i64
// 0x0210101010303082: stride 2x2, kernel 3x3, dilation 1x1, dst_stride 1, mode 1, repeat 2
// CHECK-DAG: %[[CFG:.*]] = arith.constant 148636448880341122 : i64
// CHECK-DAG: %[[L1:.*]] = arith.constant 1024 : i64
// CHECK-DAG: %[[L0A:.*]] = arith.constant 512 : i64
// CHECK: "hivm.set_fmatrix"(%[[FM]]) : (i64) -> ()
// CHECK-NEXT: "hivm.img2col_l1_to_l0a"(%[[L0A]], %[[L1]], %[[POS]], %[[CFG]]) : (i64, i64, i64, i64) -> ()
func.func @img2col() {
  %fm = memref.alloc() {npu.offset = 1024 : i64} : memref<2x9x9x16xf16, "l1">
  %a = memref.alloc() {npu.offset = 512 : i64} : memref<512xf16, "l0a">
  "cce.img2col_l1_to_l0a"(%fm, %a) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64} : (memref<2x9x9x16xf16, "l1">, memref<512xf16, "l0a">) -> ()
  return
}

// -----

// An int8 map: the config word's b8 (bit 54) is set, and the padding register
// (hivm.set_padding, value 0-15: the pad's byte) is set where an img2col
// needs another value than the register holds: 0 at the start, then the
// last value set in the same block. The f16 img2col pads with 0 again.
// CHECK-LABEL: func.func @img2col_i8
// 0x0250101010303082: the config word above with b8
// CHECK-DAG: %[[CFG8:.*]] = arith.constant 166650847389823106 : i64
// CHECK-DAG: %[[CFG16:.*]] = arith.constant 148636448880341122 : i64
// CHECK-DAG: %[[P253:.*]] = arith.constant 253 : i64
// CHECK-DAG: %[[P0:.*]] = arith.constant 0 : i64
// CHECK: "hivm.set_fmatrix"
// CHECK-NEXT: "hivm.set_padding"(%[[P253]]) : (i64) -> ()
// CHECK-NEXT: "hivm.img2col_l1_to_l0a"({{.*}}, %[[CFG8]])
// CHECK-NEXT: "hivm.set_fmatrix"
// CHECK-NEXT: "hivm.img2col_l1_to_l0a"({{.*}}, %[[CFG8]])
// CHECK-NEXT: "hivm.set_fmatrix"
// CHECK-NEXT: "hivm.set_padding"(%[[P0]]) : (i64) -> ()
// CHECK-NEXT: "hivm.img2col_l1_to_l0a"({{.*}}, %[[CFG16]])
// CHECK-NEXT: "hivm.set_fmatrix"
// CHECK-NEXT: "hivm.img2col_l1_to_l0a"({{.*}}, %[[CFG8]])
// CHECK-NEXT: return
func.func @img2col_i8() {
  %fm8 = memref.alloc() {npu.offset = 0 : i64} : memref<2x9x9x32xi8, "l1">
  %fm16 = memref.alloc() {npu.offset = 8192 : i64} : memref<2x9x9x16xf16, "l1">
  %a8 = memref.alloc() {npu.offset = 0 : i64} : memref<1024xi8, "l0a">
  %a16 = memref.alloc() {npu.offset = 1024 : i64} : memref<512xf16, "l0a">
  "cce.img2col_l1_to_l0a"(%fm8, %a8) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64, pad_value = -3 : i64} : (memref<2x9x9x32xi8, "l1">, memref<1024xi8, "l0a">) -> ()
  "cce.img2col_l1_to_l0a"(%fm8, %a8) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64, pad_value = -3 : i64} : (memref<2x9x9x32xi8, "l1">, memref<1024xi8, "l0a">) -> ()
  "cce.img2col_l1_to_l0a"(%fm16, %a16) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64} : (memref<2x9x9x16xf16, "l1">, memref<512xf16, "l0a">) -> ()
  "cce.img2col_l1_to_l0a"(%fm8, %a8) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64, pad_value = 0 : i64} : (memref<2x9x9x32xi8, "l1">, memref<1024xi8, "l0a">) -> ()
  return
}

// -----

// In a loop the register's value at the body's start is unknown once the
// function sets a non-zero pad anywhere: the body sets it, and so does the
// code after the loop.
// CHECK-LABEL: func.func @img2col_i8_loop
// CHECK-DAG: %[[P5:.*]] = arith.constant 5 : i64
// CHECK: scf.for
// CHECK-NEXT: "hivm.set_fmatrix"
// CHECK-NEXT: "hivm.set_padding"(%[[P5]]) : (i64) -> ()
// CHECK-NEXT: "hivm.img2col_l1_to_l0a"
// CHECK-NEXT: "hivm.set_fmatrix"
// CHECK-NEXT: "hivm.img2col_l1_to_l0a"
// CHECK: }
// CHECK-NEXT: "hivm.set_fmatrix"
// CHECK-NEXT: "hivm.set_padding"(%[[P5]]) : (i64) -> ()
// CHECK-NEXT: "hivm.img2col_l1_to_l0a"
func.func @img2col_i8_loop() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %fm8 = memref.alloc() {npu.offset = 0 : i64} : memref<2x9x9x32xi8, "l1">
  %a8 = memref.alloc() {npu.offset = 0 : i64} : memref<1024xi8, "l0a">
  scf.for %i = %c0 to %c4 step %c1 {
    "cce.img2col_l1_to_l0a"(%fm8, %a8) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64, pad_value = 5 : i64} : (memref<2x9x9x32xi8, "l1">, memref<1024xi8, "l0a">) -> ()
    "cce.img2col_l1_to_l0a"(%fm8, %a8) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64, pad_value = 5 : i64} : (memref<2x9x9x32xi8, "l1">, memref<1024xi8, "l0a">) -> ()
  }
  "cce.img2col_l1_to_l0a"(%fm8, %a8) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64, pad_value = 5 : i64} : (memref<2x9x9x32xi8, "l1">, memref<1024xi8, "l0a">) -> ()
  return
}

// -----

// f16 maps only: the register keeps its reset value 0, never set, in loops too.
// CHECK-LABEL: func.func @img2col_f16_loop
// CHECK-NOT: hivm.set_padding
// CHECK: return
func.func @img2col_f16_loop() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %fm16 = memref.alloc() {npu.offset = 0 : i64} : memref<2x9x9x16xf16, "l1">
  %a16 = memref.alloc() {npu.offset = 0 : i64} : memref<512xf16, "l0a">
  scf.for %i = %c0 to %c4 step %c1 {
    "cce.img2col_l1_to_l0a"(%fm16, %a16) {fm_h = 9 : i64, fm_w = 9 : i64, pad_top = 1 : i64, pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, c1 = 1 : i64, fetch_h = 2 : i64, fetch_w = 1 : i64, left_top_h = -1 : i64, left_top_w = -1 : i64, stride_h = 2 : i64, stride_w = 2 : i64, kernel_h = 3 : i64, kernel_w = 3 : i64, dilation_h = 1 : i64, dilation_w = 1 : i64, dst_stride = 1 : i64, repeat_mode = 1 : i64, repeat = 2 : i64} : (memref<2x9x9x16xf16, "l1">, memref<512xf16, "l0a">) -> ()
  }
  return
}
