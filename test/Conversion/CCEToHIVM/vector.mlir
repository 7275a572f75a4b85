// RUN: npu-opt %s --split-input-file --npu-lower-cce-to-hivm | FileCheck %s
// Vector ops: (dst, src0[, src1], config); the word packs block strides
// (bits 0-7 dst, 8-15 src0, 16-23 src1), repeat strides (24-31, 32-39,
// 40-47) and repeat (56-63). The mask becomes hivm.set_vector_mask(hi, lo)
// (lane e active iff bit e of hi:lo) when it differs from the one the block
// set last.

// CHECK-LABEL: func.func @binary
// 0x0200080808010101: blk strides 1, rep strides 8, repeat 2
// CHECK-DAG: %[[W:.*]] = arith.constant 144124018662899969 : i64
// CHECK-DAG: %[[ALL:.*]] = arith.constant -1 : i64
// CHECK: "hivm.set_vector_mask"(%[[ALL]], %[[ALL]])
// CHECK: "hivm.vadd"(%{{.*}}, %{{.*}}, %{{.*}}, %[[W]]) {dtype = f16}
// same mask: no second set_vector_mask
// CHECK-NOT: set_vector_mask
// CHECK: "hivm.vmul"
// 40 lanes of f16: lo = 2^40 - 1, hi = 0 (the constant 0 of the ub address)
// CHECK: %[[LO:.*]] = arith.constant 1099511627775 : i64
// CHECK: "hivm.set_vector_mask"(%c0_i64, %[[LO]])
// CHECK: "hivm.vsub"
func.func @binary() {
  %x = memref.alloc() {npu.offset = 0 : i64} : memref<256xf16, "ub">
  %y = memref.alloc() {npu.offset = 512 : i64} : memref<256xf16, "ub">
  "cce.vadd"(%x, %x, %y) {repeat = 2 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, src0_blk_stride = 1 : i64, src1_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_rep_stride = 8 : i64, src1_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  "cce.vmul"(%x, %x, %y) {repeat = 2 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, src0_blk_stride = 1 : i64, src1_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_rep_stride = 8 : i64, src1_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  "cce.vsub"(%x, %x, %y) {repeat = 1 : i64, mask = 40 : i64, dst_blk_stride = 1 : i64, src0_blk_stride = 1 : i64, src1_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_rep_stride = 8 : i64, src1_rep_stride = 8 : i64} : (memref<256xf16, "ub">, memref<256xf16, "ub">, memref<256xf16, "ub">) -> ()
  return
}

// -----

// One-source ops use the src0 fields; scalars, vconv types and offsets stay attributes.
// CHECK-LABEL: func.func @unary_family
// f32: 64 lanes, lo all ones, hi 0; 0x0100040800000401: dst blk 1, src0 blk 4, dst rep 8, src0 rep 4
// CHECK: %[[WC:.*]] = arith.constant 72057611352015873 : i64
// CHECK: "hivm.set_vector_mask"(%c0_i64, %c-1_i64)
// CHECK: "hivm.vconv"(%{{.*}}, %{{.*}}, %[[WC]]) {dtype = f32, round_mode = "none", src_dtype = f16}
// CHECK: "hivm.vadds"({{.*}}) {dtype = f32, scalar = 1.500000e+00 : f64}
// CHECK: "hivm.vdup"({{.*}}) {dtype = f32, scalar = 0.000000e+00 : f64}
// vcadd: src0 strides and the dst repeat stride (elements)
// CHECK: "hivm.vcadd"({{.*}}) {dtype = f32}
func.func @unary_family() {
  %h = memref.alloc() {npu.offset = 0 : i64} : memref<64xf16, "ub">
  %f = memref.alloc() {npu.offset = 1024 : i64} : memref<64xf32, "ub">
  %s = memref.alloc() {npu.offset = 2048 : i64} : memref<8xf32, "ub">
  "cce.vconv"(%f, %h) {repeat = 1 : i64, mask = 64 : i64, round_mode = "none", dst_blk_stride = 1 : i64, src_blk_stride = 4 : i64, dst_rep_stride = 8 : i64, src_rep_stride = 4 : i64} : (memref<64xf32, "ub">, memref<64xf16, "ub">) -> ()
  "cce.vadds"(%f, %f) {repeat = 1 : i64, mask = 64 : i64, scalar = 1.5 : f64, dst_blk_stride = 1 : i64, src_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_rep_stride = 8 : i64} : (memref<64xf32, "ub">, memref<64xf32, "ub">) -> ()
  "cce.vdup"(%s) {repeat = 1 : i64, mask = 8 : i64, scalar = 0.0 : f64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64} : (memref<8xf32, "ub">) -> ()
  "cce.vcadd"(%s, %f) {repeat = 1 : i64, mask = 64 : i64, src_blk_stride = 1 : i64, src_rep_stride = 8 : i64, dst_rep_stride = 1 : i64} : (memref<8xf32, "ub">, memref<64xf32, "ub">) -> ()
  return
}

// -----

// vnchwconv: repeat and the src0/dst repeat strides in the word; row offsets stay attributes.
// CHECK-LABEL: func.func @transpose16
// 0x0300000110000000: dst rep 16, src0 rep 1, repeat 3
// CHECK: %[[W:.*]] = arith.constant 216172786677186560 : i64
// CHECK: "hivm.vnchwconv"(%{{.*}}, %{{.*}}, %[[W]]) {dst_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, dtype = f16, src_offsets = array<i64: 0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42, 45>}
// CHECK-NOT: set_vector_mask
func.func @transpose16() {
  %a = memref.alloc() {npu.offset = 0 : i64} : memref<768xf16, "ub">
  %b = memref.alloc() {npu.offset = 2048 : i64} : memref<768xf16, "ub">
  "cce.vnchwconv"(%b, %a) {repeat = 3 : i64, src_offsets = array<i64: 0, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36, 39, 42, 45>, dst_offsets = array<i64: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>, src_rep_stride = 1 : i64, dst_rep_stride = 16 : i64} : (memref<768xf16, "ub">, memref<768xf16, "ub">) -> ()
  return
}

// -----

// Multiply-adds: vmadd/vmla take the binary word (dst is read too); vaxpy the
// one-source word and keeps its scalar as an attribute.
// CHECK-LABEL: func.func @multiply_add
// CHECK-DAG: %[[W:.*]] = arith.constant 144124018662899969 : i64
// CHECK: "hivm.vmadd"(%{{.*}}, %{{.*}}, %{{.*}}, %[[W]]) {dtype = f32}
// src1: a 32-byte constant block re-read by every block and repeat (strides 0)
// 0x0200000808000101: dst/src0 blk 1, src1 blk 0, dst/src0 rep 8, src1 rep 0
// CHECK: %[[WB:.*]] = arith.constant 144115222569812225 : i64
// CHECK: "hivm.vmla"(%{{.*}}, %{{.*}}, %{{.*}}, %[[WB]]) {dtype = f32}
// CHECK: "hivm.vaxpy"(%{{.*}}, %{{.*}}, %{{.*}}) {dtype = f16, scalar = -2.500000e-01 : f64}
func.func @multiply_add() {
  %x = memref.alloc() {npu.offset = 0 : i64} : memref<128xf32, "ub">
  %y = memref.alloc() {npu.offset = 512 : i64} : memref<128xf32, "ub">
  %c = memref.alloc() {npu.offset = 1024 : i64} : memref<8xf32, "ub">
  %h = memref.alloc() {npu.offset = 1056 : i64} : memref<128xf16, "ub">
  "cce.vmadd"(%x, %y, %x) {repeat = 2 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, src0_blk_stride = 1 : i64, src1_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src0_rep_stride = 8 : i64, src1_rep_stride = 8 : i64} : (memref<128xf32, "ub">, memref<128xf32, "ub">, memref<128xf32, "ub">) -> ()
  "cce.vmla"(%x, %y, %c) {repeat = 2 : i64, mask = 64 : i64, dst_blk_stride = 1 : i64, src0_blk_stride = 1 : i64, src1_blk_stride = 0 : i64, dst_rep_stride = 8 : i64, src0_rep_stride = 8 : i64, src1_rep_stride = 0 : i64} : (memref<128xf32, "ub">, memref<128xf32, "ub">, memref<8xf32, "ub">) -> ()
  "cce.vaxpy"(%h, %h) {repeat = 1 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, src_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, src_rep_stride = 8 : i64, scalar = -0.25 : f64} : (memref<128xf16, "ub">, memref<128xf16, "ub">) -> ()
  return
}
