// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-lower-fractalize
// RUN: not npu-opt %s --split-input-file --npu-lower-fractalize 2>&1 | FileCheck %s

// Batches of matrices under one 32-byte block with rows of partial blocks:
// the end-of-tensor window would span several matrices.
// CHECK: fractalize-invalid.mlir:[[@LINE+3]]:3: error: batches of matrices smaller than one 32-byte block whose rows are not whole blocks are not supported (3x3 f16 = 18 bytes)
func.func @tiny_batch(%a: memref<4x3x3xf16, "gm">, %b: memref<4x1x1x16x16xf16, "gm">) {
  // expected-error@+1 {{batches of matrices smaller than one 32-byte block}}
  "ascend.fractalize"(%a, %b) : (memref<4x3x3xf16, "gm">, memref<4x1x1x16x16xf16, "gm">) -> ()
  return
}

// -----

// CHECK: fractalize-invalid.mlir:[[@LINE+3]]:3: error: 'ascend.fractalize' op
func.func @wrong_nz_shape(%a: memref<40x40xf16, "gm">, %b: memref<3x2x16x16xf16, "gm">) {
  // expected-error@+1 {{'ascend.fractalize' op}}
  "ascend.fractalize"(%a, %b) : (memref<40x40xf16, "gm">, memref<3x2x16x16xf16, "gm">) -> ()
  return
}

// -----

// CHECK: fractalize-invalid.mlir:[[@LINE+3]]:3: error: 'ascend.defractalize' op
func.func @mixed_types(%z: memref<3x3x16x16xf16, "gm">, %a: memref<40x40xf32, "gm">) {
  // expected-error@+1 {{'ascend.defractalize' op}}
  "ascend.defractalize"(%z, %a) : (memref<3x3x16x16xf16, "gm">, memref<40x40xf32, "gm">) -> ()
  return
}

// -----

// Rows wider than UB can hold 16 of (with their transpose).
// CHECK: fractalize-invalid.mlir:[[@LINE+3]]:3: error: rows of 8192 elements are too wide
func.func @too_wide(%a: memref<16x8192xf16, "gm">, %b: memref<512x1x16x16xf16, "gm">) {
  // expected-error@+1 {{rows of 8192 elements are too wide}}
  "ascend.fractalize"(%a, %b) : (memref<16x8192xf16, "gm">, memref<512x1x16x16xf16, "gm">) -> ()
  return
}

// -----

// CHECK: fractalize-invalid.mlir:[[@LINE+3]]:3: error: int8 fractalize moves bytes in pairs: it needs an even number of columns and the ND -> Nz direction, got 40x33
func.func @int8_odd_columns(%a: memref<40x33xi8, "gm">, %b: memref<2x3x16x32xi8, "gm">) {
  // expected-error@+1 {{int8 fractalize moves bytes in pairs}}
  "ascend.fractalize"(%a, %b) : (memref<40x33xi8, "gm">, memref<2x3x16x32xi8, "gm">) -> ()
  return
}
