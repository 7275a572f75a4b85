// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-lower-reduce
// RUN: not npu-opt %s --split-input-file --npu-lower-reduce 2>&1 | FileCheck %s

// Rows under one block go through the UB rearrangement, which holds the
// tensor expanded 8x (f32), or equal parts of its outer axis that are whole
// blocks: too large here, and 7919 outer indices (a prime) have no such part.
// CHECK: reduce-invalid.mlir:[[@LINE+3]]:3: error: reducing rows of 5 x 1 elements (shorter than one 32-byte block) holds the whole tensor in UB
func.func @short_rows_too_large(%a: memref<7919x5xf32, "gm">, %b: memref<7919xf32, "gm">) {
  // expected-error@+1 {{reducing rows of 5 x 1 elements (shorter than one 32-byte block) holds the whole tensor in UB}}
  "ascend.reduce_sum"(%a, %b) : (memref<7919x5xf32, "gm">, memref<7919xf32, "gm">) -> ()
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

// CHECK: reduce-invalid.mlir:[[@LINE+3]]:3: error: reducing rows of 100 x 3 elements (shorter than one 32-byte block) holds the whole tensor in UB
func.func @outer_axis_short_rows_too_large(%a: memref<401x100x3xf32, "gm">, %b: memref<401x3xf32, "gm">) {
  // expected-error@+1 {{reducing rows of 100 x 3 elements (shorter than one 32-byte block) holds the whole tensor in UB}}
  "ascend.reduce_sum"(%a, %b) {axis = 1 : i64} : (memref<401x100x3xf32, "gm">, memref<401x3xf32, "gm">) -> ()
  return
}
