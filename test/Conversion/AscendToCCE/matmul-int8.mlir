// RUN: npu-opt %s --split-input-file --npu-lower-matmul 2>/dev/null | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-lower-matmul 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: npu-opt %s --split-input-file --npu-lower-matmul="schedule=pipelined" 2>/dev/null | FileCheck %s --check-prefix=PIPE
// RUN: not npu-opt %s --split-input-file --npu-lower-matmul="n=48" 2>&1 | FileCheck %s --check-prefix=NTILE

// An int8 matmul (i8 x i8 -> i32): A's Nz fractals are 16 x 32 (K0 = 32
// bytes along the reduction), B's 32 x 16, C's i32 ones 16 x 16. Every
// buffer keeps its operand's fractal shape; the L0B load transposes each
// 32 x 16 block into 16 x 32 (Zn), the mad's n counts int8 elements, and C
// accumulates in i32 and leaves unconverted.

// REMARK: matmul-int8.mlir:{{[0-9]+}}:3: remark: matmul tiling: strategy=os tiles (m=64, n=32, k=48){{.*}}; int8: the tiles' n and the element counts above count 16 per 32-element reduction block (bytes are exact)

// CHECK-LABEL: func.func @int8
// CHECK:       memref.alloc() : memref<3x4x16x16xi32, "l0c">
// CHECK:       memref.subview %arg0[%{{.*}}, %{{.*}}, 0, 0] [2, 4, 16, 32]
// CHECK:       memref.alloc() : memref<2x4x16x32xi8, "l1">
// CHECK:       "cce.copy_gm_to_l1"({{.*}}) {burst_len = 64 : i64, dst_gap = 0 : i64, n_burst = 2 : i64, src_gap = 0 : i64}
// CHECK:       memref.alloc() : memref<4x2x16x32xi8, "l0a">
// CHECK-COUNT-2: "cce.load_l1_to_l0a"({{.*}}) {dst_stride = 2 : i64, repeat = 4 : i64, src_stride = 1 : i64, transpose = false}
// CHECK:       memref.alloc() : memref<3x2x32x16xi8, "l1">
// CHECK:       memref.alloc() : memref<2x3x16x32xi8, "l0b">
// CHECK:       memref.collapse_shape {{.*}} : memref<3x2x32x16xi8, "l1"> into memref<6x32x16xi8, "l1">
// CHECK-COUNT-2: "cce.load_l1_to_l0b"({{.*}}) {dst_stride = 1 : i64, repeat = 3 : i64, src_stride = 2 : i64, transpose = true} : (memref<{{.*}}x32x16xi8, {{.*}}"l1">, memref<{{.*}}x16x32xi8, {{.*}}"l0b">)
// CHECK:       "cce.mad"({{.*}}) {accumulate = false, k = 48 : i64, m = 64 : i64, n = 64 : i64} : (memref<4x2x16x32xi8, "l0a">, memref<2x3x16x32xi8, "l0b">, memref<3x4x16x16xi32, "l0c">)
// CHECK:       memref.alloc() : memref<3x4x16x16xi32, "ub">
// CHECK:       "cce.copy_l0c_to_ub"
// CHECK-NOT:   cce.vconv
// CHECK:       "cce.copy_ub_to_gm"({{.*}}) {{.*}} : (memref<3x4x16x16xi32, "ub">, memref<3x4x16x16xi32, strided<{{.*}}>, "gm">)

// The pipelined schedule: L0 slots in the int8 fractal shapes.
// PIPE-LABEL: func.func @int8
// PIPE:       memref.alloc() : memref<{{[0-9]+}}x{{[0-9]+}}x16x16xi32, "l0c">
// PIPE:       scf.for
// PIPE:       memref.alloc() : memref<{{[0-9]+}}x{{[0-9]+}}x16x32xi8, "l0a">
// PIPE:       memref.alloc() : memref<{{[0-9]+}}x{{[0-9]+}}x16x32xi8, "l0b">
// PIPE:       "cce.mad"

// An explicit reduction tile counts int8 elements: whole 32-element blocks.
// NTILE: matmul-int8.mlir:{{[0-9]+}}:3: error: n=48 must be a multiple of 32 (the int8 reduction block)
func.func @int8(%a: memref<2x4x16x32xi8, "gm">, %b: memref<3x2x32x16xi8, "gm">, %c: memref<3x4x16x16xi32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<2x4x16x32xi8, "gm">, memref<3x2x32x16xi8, "gm">, memref<3x4x16x16xi32, "gm">) -> ()
  return
}

// -----

// A batch of int8 matmuls.
// CHECK-LABEL: func.func @int8_batch
// CHECK:       "cce.mad"({{.*}}) {accumulate = false, k = 16 : i64, m = 16 : i64, n = 32 : i64} : (memref<1x1x16x32xi8, "l0a">, memref<1x1x16x32xi8, "l0b">, memref<1x1x16x16xi32, "l0c">)
func.func @int8_batch(%a: memref<2x1x1x16x32xi8, "gm">, %b: memref<2x1x1x32x16xi8, "gm">, %c: memref<2x1x1x16x16xi32, "gm">) {
  "ascend.batch_matmul"(%a, %b, %c) : (memref<2x1x1x16x32xi8, "gm">, memref<2x1x1x32x16xi8, "gm">, memref<2x1x1x16x16xi32, "gm">) -> ()
  return
}
