// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-lower-elementwise
// The ascend verifier rejects the pair at the op before the lowering runs.
// RUN: not npu-opt %s --split-input-file --npu-lower-elementwise 2>&1 | FileCheck %s

// CHECK: cast-invalid.mlir:[[@LINE+3]]:3: error: 'ascend.cast' op unsupported element types (in: f32, out: f32)
func.func @f32_to_f32(%a: memref<64xf32, "gm">, %c: memref<64xf32, "gm">) {
  // expected-error@+1 {{unsupported element types (in: f32, out: f32)}}
  "ascend.cast"(%a, %c) {round_mode = "none"} : (memref<64xf32, "gm">, memref<64xf32, "gm">) -> ()
  return
}

// -----

// CHECK: cast-invalid.mlir:[[@LINE+3]]:3: error: 'ascend.cast' op unsupported element types (in: i8, out: i8)
func.func @i8_to_i8(%a: memref<64xi8, "gm">, %c: memref<64xi8, "gm">) {
  // expected-error@+1 {{unsupported element types (in: i8, out: i8)}}
  "ascend.cast"(%a, %c) {round_mode = "none"} : (memref<64xi8, "gm">, memref<64xi8, "gm">) -> ()
  return
}
