// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-lower-transpose="ub-fraction=0.001"
// RUN: not npu-opt %s --split-input-file --npu-lower-transpose="ub-fraction=0.001" 2>&1 | FileCheck %s

// A transpose too large for the UB gather is cut into pieces along a dim
// (passes/transpose_tiled.py; these two lower at the default ub-fraction,
// transpose-tiled.mlir). With a UB share (262 bytes) that not even one
// piece fits, the op's own refusal stands. A reversal no fast form covers:
// as rotations its second step would swap [3 | 200] (3 rows, under one
// 16-row tile).
// CHECK: transpose-invalid.mlir:[[@LINE+3]]:3: error: permutation [2, 1, 0] of shape [3, 200, 300] needs the general transpose
func.func @reverse_large(%a: memref<3x200x300xf32, "gm">, %b: memref<300x200x3xf32, "gm">) {
  // expected-error@+1 {{permutation [2, 1, 0] of shape [3, 200, 300] needs the general transpose, which holds the whole tensor in UB}}
  "ascend.transpose"(%a, %b) {permutation = array<i64: 2, 1, 0>} : (memref<3x200x300xf32, "gm">, memref<300x200x3xf32, "gm">) -> ()
  return
}

// -----

// The last dimension is not whole blocks, so [0, 2, 1, 3] cannot use block
// copies, and no piece fits the gather.
// CHECK: transpose-invalid.mlir:[[@LINE+3]]:3: error: permutation [0, 2, 1, 3] of shape [2, 30, 40, 10] needs the general transpose
func.func @unaligned_last_large(%a: memref<2x30x40x10xf16, "gm">, %b: memref<2x40x30x10xf16, "gm">) {
  // expected-error@+1 {{permutation [0, 2, 1, 3] of shape [2, 30, 40, 10] needs the general transpose}}
  "ascend.transpose"(%a, %b) {permutation = array<i64: 0, 2, 1, 3>} : (memref<2x30x40x10xf16, "gm">, memref<2x40x30x10xf16, "gm">) -> ()
  return
}
