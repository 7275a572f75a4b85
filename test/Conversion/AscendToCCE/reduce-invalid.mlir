// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-lower-reduce
// RUN: not npu-opt %s --split-input-file --npu-lower-reduce 2>&1 | FileCheck %s

// CHECK: reduce-invalid.mlir:[[@LINE+3]]:3: error: the reduced dimension (10) must be at least one 32-byte block (16 f16 elements)
func.func @short_unaligned(%a: memref<4x10xf16, "gm">, %b: memref<4xf16, "gm">) {
  // expected-error@+1 {{the reduced dimension (10) must be at least one 32-byte block (16 f16 elements) when it is not a whole number of blocks}}
  "ascend.reduce_sum"(%a, %b) : (memref<4x10xf16, "gm">, memref<4xf16, "gm">) -> ()
  return
}

// -----

// CHECK: reduce-invalid.mlir:[[@LINE+3]]:3: error: rows of 5000 elements that are not whole 32-byte blocks must fit one chunk
func.func @long_unaligned(%a: memref<4x5000xf16, "gm">, %b: memref<4xf16, "gm">) {
  // expected-error@+1 {{rows of 5000 elements that are not whole 32-byte blocks must fit one chunk}}
  "ascend.reduce_max"(%a, %b) : (memref<4x5000xf16, "gm">, memref<4xf16, "gm">) -> ()
  return
}

// -----

// CHECK: reduce-invalid.mlir:[[@LINE+3]]:3: error: reducing an outer axis needs the 3 trailing elements per reduced index to be at least one 32-byte block (8 elements)
func.func @outer_axis_short_rows(%a: memref<4x10x3xf32, "gm">, %b: memref<4x3xf32, "gm">) {
  // expected-error@+1 {{reducing an outer axis needs the 3 trailing elements per reduced index to be at least one 32-byte block (8 elements)}}
  "ascend.reduce_sum"(%a, %b) {axis = 1 : i64} : (memref<4x10x3xf32, "gm">, memref<4x3xf32, "gm">) -> ()
  return
}
