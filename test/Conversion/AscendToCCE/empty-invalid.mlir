// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-lower
// RUN: not npu-opt %s --split-input-file --npu-lower 2>&1 | FileCheck %s

// An empty input with a non-empty output (a reduction over an empty axis, a
// matmul with an empty reduction dimension) is an error at the op.

// CHECK: empty-invalid.mlir:[[@LINE+3]]:3: error: operand #0 (memref<4x0xf16, "gm">) has no elements but the output has 4
func.func @reduce_empty_rows(%a: memref<4x0xf16, "gm">, %b: memref<4xf16, "gm">) {
  // expected-error@+1 {{operand #0 (memref<4x0xf16, "gm">) has no elements but the output has 4: an empty reduction or contraction is not supported}}
  "ascend.reduce_sum"(%a, %b) : (memref<4x0xf16, "gm">, memref<4xf16, "gm">) -> ()
  return
}

// -----

// CHECK: empty-invalid.mlir:[[@LINE+3]]:3: error: operand #0 (memref<0x1x16x16xf16, "gm">) has no elements but the output has 256
func.func @matmul_empty_k(%a: memref<0x1x16x16xf16, "gm">, %b: memref<1x0x16x16xf16, "gm">, %c: memref<1x1x16x16xf32, "gm">) {
  // expected-error@+1 {{has no elements but the output has 256}}
  "ascend.matmul"(%a, %b, %c) : (memref<0x1x16x16xf16, "gm">, memref<1x0x16x16xf16, "gm">, memref<1x1x16x16xf32, "gm">) -> ()
  return
}
