// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-lower-matmul="m=512 n=128 k=256"
// RUN: not npu-opt %s --split-input-file --npu-lower-matmul="m=512 n=128 k=256" 2>&1 | FileCheck %s
// RUN: not npu-opt %s --split-input-file --npu-lower-matmul="m=24" 2>&1 | FileCheck %s --check-prefix=NOTFRACTAL
// RUN: not npu-opt %s --split-input-file --npu-lower-matmul="strategy=is m=256 n=128 k=256" 2>&1 | FileCheck %s --check-prefix=STRIP

// An explicit tile that does not fit: A's 512x128 f16 tile needs 128 KiB of
// the 64 KiB L0A. The error names the buffer and the overflow in bytes.
// CHECK: matmul-invalid.mlir:[[@LINE+5]]:3: error: tile (m=512, n=128, k=256) does not fit L0A: the A tile 512x128 needs 131072 bytes, capacity 65536 bytes (overflow 65536 bytes)
// NOTFRACTAL: error: tile m=24 must be a positive multiple of the fractal size 16
// STRIP: error: tile (m=256, n=128, k=256) does not fit L0C: the C row strip 256x768 (IS accumulates a whole strip) needs 786432 bytes, capacity 262144 bytes (overflow 524288 bytes)
func.func @too_big(%a: memref<48x32x16x16xf16, "gm">, %b: memref<48x48x16x16xf16, "gm">, %c: memref<48x32x16x16xf32, "gm">) {
  // expected-error@+1 {{does not fit L0A: the A tile 512x128 needs 131072 bytes, capacity 65536 bytes (overflow 65536 bytes)}}
  "ascend.matmul"(%a, %b, %c) : (memref<48x32x16x16xf16, "gm">, memref<48x48x16x16xf16, "gm">, memref<48x32x16x16xf32, "gm">) -> ()
  return
}

// -----

// Bad operands are caught by the ascend verifier at the op, before the pass.
// CHECK: matmul-invalid.mlir:[[@LINE+3]]:3: error: 'ascend.matmul' op operand #0 ('a') must be an Nz fractal matrix
func.func @not_fractal(%a: memref<512x768xf16, "gm">, %b: memref<48x48x16x16xf16, "gm">, %c: memref<48x32x16x16xf32, "gm">) {
  // expected-error@+1 {{must be an Nz fractal matrix}}
  "ascend.matmul"(%a, %b, %c) : (memref<512x768xf16, "gm">, memref<48x48x16x16xf16, "gm">, memref<48x32x16x16xf32, "gm">) -> ()
  return
}

// -----

// CHECK: matmul-invalid.mlir:[[@LINE+3]]:3: error: 'ascend.matmul' op reduction blocks differ
func.func @reduction_mismatch(%a: memref<40x32x16x16xf16, "gm">, %b: memref<48x48x16x16xf16, "gm">, %c: memref<48x32x16x16xf32, "gm">) {
  // expected-error@+1 {{reduction blocks differ}}
  "ascend.matmul"(%a, %b, %c) : (memref<40x32x16x16xf16, "gm">, memref<48x48x16x16xf16, "gm">, memref<48x32x16x16xf32, "gm">) -> ()
  return
}

// -----

// CHECK: matmul-invalid.mlir:[[@LINE+3]]:3: error: 'ascend.matmul' op unsupported element types
func.func @wrong_type(%a: memref<48x32x16x16xf32, "gm">, %b: memref<48x48x16x16xf16, "gm">, %c: memref<48x32x16x16xf32, "gm">) {
  // expected-error@+1 {{unsupported element types}}
  "ascend.matmul"(%a, %b, %c) : (memref<48x32x16x16xf32, "gm">, memref<48x48x16x16xf16, "gm">, memref<48x32x16x16xf32, "gm">) -> ()
  return
}

// -----

// CHECK: matmul-invalid.mlir:[[@LINE+3]]:3: error: 'ascend.batch_matmul' op batch sizes differ
func.func @batch_mismatch(%a: memref<2x3x2x16x16xf16, "gm">, %b: memref<3x4x3x16x16xf16, "gm">, %c: memref<2x4x2x16x16xf32, "gm">) {
  // expected-error@+1 {{batch sizes differ}}
  "ascend.batch_matmul"(%a, %b, %c) : (memref<2x3x2x16x16xf16, "gm">, memref<3x4x3x16x16xf16, "gm">, memref<2x4x2x16x16xf32, "gm">) -> ()
  return
}
