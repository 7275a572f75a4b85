// Dense arrays whose element type has no class in the MLIR Python bindings
// (ui8, si8, bf16, ...) are valid MLIR. Reading one used to raise TypeError
// ("Can't cast unknown element type DenseArrayAttr"), an internal error, or
// abort the process when the read happened inside C++ (function attributes).
// Now they are ordinary attributes: carried through where nothing reads them,
// a located error where an array<i64: ...> is expected.
// RUN: npu-opt %s --split-input-file --verify-diagnostics -p npu-plan-memory,npu-insert-sync | FileCheck %s
// RUN: npu-opt %s --split-input-file --verify-diagnostics -p npu-lower | FileCheck %s --check-prefix=LOWER

func.func @unsigned_permutation(%a: memref<64x48x32xf32, "gm">, %b: memref<32x48x64xf32, "gm">) {
  // expected-error@+1 {{'ascend.transpose' op attribute 'permutation' must be an array<i64: ...>, got array<ui8: 2, 1, 0>}}
  "ascend.transpose"(%a, %b) {permutation = array<ui8: 2, 1, 0>} : (memref<64x48x32xf32, "gm">, memref<32x48x64xf32, "gm">) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @carried
// CHECK-SAME:    {npu.note = array<si8: -1, 2>}
// CHECK-SAME:    tags = [array<bf16: 1.000000e+00>, array<ui16: 7>]}
// CHECK-NEXT:    "ascend.transpose"
// CHECK-SAME:    extra = array<ui8: 1>
// LOWER-LABEL: func.func @carried
// LOWER-SAME:    tags = [array<bf16: 1.000000e+00>, array<ui16: 7>]
func.func @carried(%a: memref<16x32xf32, "gm"> {npu.note = array<si8: -1, 2>}, %b: memref<32x16xf32, "gm">)
    attributes {tags = [array<bf16: 1.0>, array<ui16: 7>]} {
  "ascend.transpose"(%a, %b) {permutation = array<i64: 1, 0>, extra = array<ui8: 1>} : (memref<16x32xf32, "gm">, memref<32x16xf32, "gm">) -> ()
  return
}
