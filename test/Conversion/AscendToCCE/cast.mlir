// RUN: npu-opt %s --split-input-file --npu-lower-elementwise | FileCheck %s
// RUN: npu-opt %s --split-input-file --target=ascend910b --npu-lower-elementwise | FileCheck %s --check-prefix=B910

// f16 -> f32: a repeat covers 64 lanes (256 B of the f32 result): source
// repeat stride 4 blocks, destination 8. Buffers: 2 + 4 bytes per element
// in half of UB -> 21824 elements (ascend910), 16384 (ascend910b).
// 50000 = 2 * 21824 + 6352 (whole blocks: no overlap).
// CHECK-LABEL: func.func @f16_to_f32
// CHECK: memref.alloc() : memref<21824xf16, "ub">
// CHECK: memref.alloc() : memref<21824xf32, "ub">
// CHECK: "cce.vconv"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 64 : i64, repeat = 255 : i64, round_mode = "none", src_blk_stride = 1 : i64, src_rep_stride = 4 : i64}
// CHECK: memref.subview %{{.*}}[43648] [6352] [1]
// B910-LABEL: func.func @f16_to_f32
// B910: memref.alloc() : memref<16384xf16, "ub">
func.func @f16_to_f32(%a: memref<50000xf16, "gm">, %c: memref<50000xf32, "gm">) {
  "ascend.cast"(%a, %c) {round_mode = "none"} : (memref<50000xf16, "gm">, memref<50000xf32, "gm">) -> ()
  return
}

// -----

// f32 -> i32 keeps the rounding mode; 100 = 96 + a tail of one 8-element
// block at 92 (4 elements re-computed).
// CHECK-LABEL: func.func @f32_to_i32
// CHECK: "cce.vconv"({{.*}}) {{{.*}}mask = 64 : i64, repeat = 1 : i64, round_mode = "floor", src_blk_stride = 1 : i64, src_rep_stride = 8 : i64}
// CHECK: "cce.vconv"({{.*}}) {{{.*}}mask = 32 : i64, repeat = 1 : i64, round_mode = "floor"
// CHECK: memref.subview %arg0[92] [8] [1]
// CHECK: "cce.vconv"({{.*}}) {{{.*}}mask = 8 : i64, repeat = 1 : i64, round_mode = "floor"
func.func @f32_to_i32(%a: memref<100xf32, "gm">, %c: memref<100xi32, "gm">) {
  "ascend.cast"(%a, %c) {round_mode = "floor"} : (memref<100xf32, "gm">, memref<100xi32, "gm">) -> ()
  return
}

// -----

// i8 -> f16: 128 lanes, source repeat stride 4 blocks (128 bytes of i8),
// and whole blocks of 32 elements (the i8 granule): 100 = 96 + a tail of 32
// at 68 (28 re-computed).
// CHECK-LABEL: func.func @i8_to_f16
// CHECK: memref.alloc() : memref<96xi8, "ub">
// CHECK: "cce.vconv"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, mask = 96 : i64, repeat = 1 : i64, round_mode = "none", src_blk_stride = 1 : i64, src_rep_stride = 4 : i64}
// CHECK: memref.subview %arg0[68] [32] [1]
func.func @i8_to_f16(%a: memref<100xi8, "gm">, %c: memref<100xf16, "gm">) {
  "ascend.cast"(%a, %c) {round_mode = "none"} : (memref<100xi8, "gm">, memref<100xf16, "gm">) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @f32_to_f16
// CHECK: "cce.vconv"({{.*}}) {dst_blk_stride = 1 : i64, dst_rep_stride = 4 : i64, mask = 64 : i64, repeat = 4 : i64, round_mode = "rint", src_blk_stride = 1 : i64, src_rep_stride = 8 : i64}
func.func @f32_to_f16(%a: memref<256xf32, "gm">, %c: memref<256xf16, "gm">) {
  "ascend.cast"(%a, %c) {round_mode = "rint"} : (memref<256xf32, "gm">, memref<256xf16, "gm">) -> ()
  return
}
