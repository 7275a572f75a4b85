// RUN: npu-opt %s --split-input-file --npu-lower-cce-to-hivm | FileCheck %s
// L1 -> L0A/L0B loads: strides in 512-byte fractals, word bits 0-15
// src_stride, 16-31 dst_stride, 32 transpose, 56-63 repeat. mad: (c, a, b,
// config) with m (bits 0-11), k (12-23), n (24-35), init (63; 1 = overwrite).

// CHECK-LABEL: func.func @cube
// L1 fractal 2 (byte 1024), L0A at 0; 0x0400000000010004: src_stride 4, dst_stride 1, repeat 4
// CHECK-DAG: %[[A1:.*]] = arith.constant 1024 : i64
// CHECK-DAG: %[[A0:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[WA:.*]] = arith.constant 288230376151777284 : i64
// transpose: 0x0400000100010001: src_stride 1, dst_stride 1, transpose 1, repeat 4
// CHECK-DAG: %[[WB:.*]] = arith.constant 288230380446744577 : i64
// m 32, k 32, n 32, overwrite: 0x8000000020020020
// CHECK-DAG: %[[C:.*]] = arith.constant 4096 : i64
// CHECK-DAG: %[[WM:.*]] = arith.constant -9223372036317773792 : i64
// accumulate clears bit 63: 0x0000000020020020
// CHECK-DAG: %[[WACC:.*]] = arith.constant 537002016 : i64
// CHECK: "hivm.load_l1_to_l0a"(%[[A0]], %[[A1]], %[[WA]])
// CHECK: "hivm.load_l1_to_l0b"(%[[A0]], %[[A1]], %[[WB]])
// CHECK: "hivm.mad"(%[[C]], %[[A0]], %[[A0]], %[[WM]]) {dtype = f16}
// CHECK: "hivm.mad"(%[[C]], %[[A0]], %[[A0]], %[[WACC]]) {dtype = f16}
func.func @cube() {
  %l1 = memref.alloc() {npu.offset = 0 : i64} : memref<8192xf16, "l1">
  %a = memref.alloc() {npu.offset = 0 : i64} : memref<1024xf16, "l0a">
  %b = memref.alloc() {npu.offset = 0 : i64} : memref<1024xf16, "l0b">
  %c = memref.alloc() {npu.offset = 4096 : i64} : memref<1024xf32, "l0c">
  %src = memref.subview %l1[512] [4096] [1] : memref<8192xf16, "l1"> to memref<4096xf16, strided<[1], offset: 512>, "l1">
  "cce.load_l1_to_l0a"(%src, %a) {repeat = 4 : i64, src_stride = 4 : i64, dst_stride = 1 : i64, transpose = false} : (memref<4096xf16, strided<[1], offset: 512>, "l1">, memref<1024xf16, "l0a">) -> ()
  "cce.load_l1_to_l0b"(%src, %b) {repeat = 4 : i64, src_stride = 1 : i64, dst_stride = 1 : i64, transpose = true} : (memref<4096xf16, strided<[1], offset: 512>, "l1">, memref<1024xf16, "l0b">) -> ()
  "cce.mad"(%a, %b, %c) {m = 32 : i64, n = 32 : i64, k = 32 : i64, accumulate = false} : (memref<1024xf16, "l0a">, memref<1024xf16, "l0b">, memref<1024xf32, "l0c">) -> ()
  "cce.mad"(%a, %b, %c) {m = 32 : i64, n = 32 : i64, k = 32 : i64, accumulate = true} : (memref<1024xf16, "l0a">, memref<1024xf16, "l0b">, memref<1024xf32, "l0c">) -> ()
  return
}
