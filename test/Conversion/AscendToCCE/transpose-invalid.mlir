// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-lower-transpose
// RUN: not npu-opt %s --split-input-file --npu-lower-transpose 2>&1 | FileCheck %s

// A permutation no fast form covers ([2, 1, 0] stays a 3-D reversal after
// merging dims) on a tensor too large for the general fallback's UB gather.
// CHECK: transpose-invalid.mlir:[[@LINE+3]]:3: error: permutation [2, 1, 0] of shape [64, 64, 64] needs the general transpose
func.func @reverse_large(%a: memref<64x64x64xf32, "gm">, %b: memref<64x64x64xf32, "gm">) {
  // expected-error@+1 {{permutation [2, 1, 0] of shape [64, 64, 64] needs the general transpose, which holds the whole tensor in UB}}
  "ascend.transpose"(%a, %b) {permutation = array<i64: 2, 1, 0>} : (memref<64x64x64xf32, "gm">, memref<64x64x64xf32, "gm">) -> ()
  return
}

// -----

// The last dimension is not whole blocks, so [0, 2, 1, 3] cannot use block
// copies, and the tensor is too large for the gather.
// CHECK: transpose-invalid.mlir:[[@LINE+3]]:3: error: permutation [0, 2, 1, 3] of shape [2, 30, 40, 10] needs the general transpose
func.func @unaligned_last_large(%a: memref<2x30x40x10xf16, "gm">, %b: memref<2x40x30x10xf16, "gm">) {
  // expected-error@+1 {{permutation [0, 2, 1, 3] of shape [2, 30, 40, 10] needs the general transpose}}
  "ascend.transpose"(%a, %b) {permutation = array<i64: 0, 2, 1, 3>} : (memref<2x30x40x10xf16, "gm">, memref<2x40x30x10xf16, "gm">) -> ()
  return
}
