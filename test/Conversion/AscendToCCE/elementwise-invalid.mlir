// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-lower-elementwise
// RUN: not npu-opt %s --split-input-file --npu-lower-elementwise 2>&1 | FileCheck %s

// Caught by the ascend verifier before the pass runs.
// CHECK: elementwise-invalid.mlir:[[@LINE+3]]:3: error: 'ascend.add' op operand #1 ('rhs') of shape [3, 8] cannot be broadcast to the output shape [4, 8]
func.func @mismatch(%a: memref<4x8xf16, "gm">, %b: memref<3x8xf16, "gm">, %c: memref<4x8xf16, "gm">) {
  // expected-error@+1 {{of shape [3, 8] cannot be broadcast to the output shape [4, 8]}}
  "ascend.add"(%a, %b, %c) : (memref<4x8xf16, "gm">, memref<3x8xf16, "gm">, memref<4x8xf16, "gm">) -> ()
  return
}

// -----

// A middle-axis broadcast whose slices are under one block goes through the
// whole-tensor fallback, in chunks of the leading dim; one chunk (a row of
// 6000 x 8) is still too large here.
// CHECK: elementwise-invalid.mlir:[[@LINE+3]]:3: error: broadcasting to [2, 6000, 8] loops over slices of shape [6000, 8], and a slice of shape [1, 8] is smaller than one 32-byte block (16 elements); the whole-tensor fallback needs
func.func @middle_axis(%a: memref<2x6000x8xf16, "gm">, %b: memref<2x1x8xf16, "gm">, %c: memref<2x6000x8xf16, "gm">) {
  // expected-error@+1 {{a slice of shape [1, 8] is smaller than one 32-byte block (16 elements); the whole-tensor fallback needs}}
  "ascend.mul"(%a, %b, %c) : (memref<2x6000x8xf16, "gm">, memref<2x1x8xf16, "gm">, memref<2x6000x8xf16, "gm">) -> ()
  return
}

// -----

// CHECK: elementwise-invalid.mlir:[[@LINE+4]]:3: error: operand of type memref<4x8xf16, strided<[16, 1]>, "gm"> is not contiguous
func.func @strided(%p: memref<4x16xf16, "gm">, %c: memref<4x8xf16, "gm">) {
  %v = memref.subview %p[0, 0] [4, 8] [1, 1] : memref<4x16xf16, "gm"> to memref<4x8xf16, strided<[16, 1]>, "gm">
  // expected-error@+1 {{is not contiguous (row-major, dense)}}
  "ascend.relu"(%v, %c) : (memref<4x8xf16, strided<[16, 1]>, "gm">, memref<4x8xf16, "gm">) -> ()
  return
}
