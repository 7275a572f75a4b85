// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-lower-transpose
// RUN: not npu-opt %s --split-input-file --npu-lower-transpose 2>&1 | FileCheck %s

// CHECK: transpose-invalid.mlir:[[@LINE+3]]:3: error: unsupported permutation [2, 0, 1]
func.func @rotate(%a: memref<4x16x32xf16, "gm">, %b: memref<32x4x16xf16, "gm">) {
  // expected-error@+1 {{unsupported permutation [2, 0, 1]: only a swap of the last two dimensions}}
  "ascend.transpose"(%a, %b) {permutation = array<i64: 2, 0, 1>} : (memref<4x16x32xf16, "gm">, memref<32x4x16xf16, "gm">) -> ()
  return
}

// -----

// CHECK: transpose-invalid.mlir:[[@LINE+3]]:3: error: permutation [0, 2, 1, 3] is lowered as block copies and needs the last dimension (10 x 2 bytes)
func.func @unaligned_last(%a: memref<2x3x4x10xf16, "gm">, %b: memref<2x4x3x10xf16, "gm">) {
  // expected-error@+1 {{needs the last dimension (10 x 2 bytes) to be a whole number of 32-byte blocks}}
  "ascend.transpose"(%a, %b) {permutation = array<i64: 0, 2, 1, 3>} : (memref<2x3x4x10xf16, "gm">, memref<2x4x3x10xf16, "gm">) -> ()
  return
}

// -----

// CHECK: transpose-invalid.mlir:[[@LINE+3]]:3: error: transposing a 8x64 matrix needs at least 16 rows
func.func @too_few_rows(%a: memref<8x64xf16, "gm">, %b: memref<64x8xf16, "gm">) {
  // expected-error@+1 {{transposing a 8x64 matrix needs at least 16 rows and 16 columns}}
  "ascend.transpose"(%a, %b) {permutation = array<i64: 1, 0>} : (memref<8x64xf16, "gm">, memref<64x8xf16, "gm">) -> ()
  return
}
