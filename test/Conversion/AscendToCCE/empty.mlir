// RUN: npu-opt %s --split-input-file --npu-lower | FileCheck %s
// RUN: npu-opt %s --split-input-file --npu-lower-elementwise --npu-lower-reduce --npu-lower-fractalize --npu-lower-matmul --npu-lower-transpose | FileCheck %s

// Zero-sized work: an op whose output has no elements computes nothing, so
// each lowering erases it and the function is empty (no cce code, no sync).

// CHECK-LABEL: func.func @add_empty
// CHECK-NOT: cce.
// CHECK: return
func.func @add_empty(%a: memref<0xf16, "gm">, %b: memref<0xf16, "gm">, %c: memref<0xf16, "gm">) {
  "ascend.add"(%a, %b, %c) : (memref<0xf16, "gm">, memref<0xf16, "gm">, memref<0xf16, "gm">) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @cast_empty
// CHECK-NOT: cce.
// CHECK: return
func.func @cast_empty(%a: memref<4x0xf16, "gm">, %c: memref<4x0xf32, "gm">) {
  "ascend.cast"(%a, %c) {round_mode = "none"} : (memref<4x0xf16, "gm">, memref<4x0xf32, "gm">) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @reduce_no_rows
// CHECK-NOT: cce.
// CHECK: return
func.func @reduce_no_rows(%a: memref<0x16xf16, "gm">, %c: memref<0xf16, "gm">) {
  "ascend.reduce_max"(%a, %c) : (memref<0x16xf16, "gm">, memref<0xf16, "gm">) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @fractalize_empty
// CHECK-NOT: cce.
// CHECK: return
func.func @fractalize_empty(%a: memref<4x0xf16, "gm">, %an: memref<0x1x16x16xf16, "gm">,
                            %b: memref<0x32xf32, "gm">, %bn: memref<2x0x16x16xf32, "gm">) {
  "ascend.fractalize"(%a, %an) : (memref<4x0xf16, "gm">, memref<0x1x16x16xf16, "gm">) -> ()
  "ascend.defractalize"(%bn, %b) : (memref<2x0x16x16xf32, "gm">, memref<0x32xf32, "gm">) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @matmul_empty
// CHECK-NOT: cce.
// CHECK: return
func.func @matmul_empty(%a: memref<2x0x16x16xf16, "gm">, %b: memref<1x2x16x16xf16, "gm">,
                        %c: memref<1x0x16x16xf32, "gm">,
                        %ba: memref<0x2x1x16x16xf16, "gm">, %bb: memref<0x1x2x16x16xf16, "gm">,
                        %bc: memref<0x1x1x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<2x0x16x16xf16, "gm">, memref<1x2x16x16xf16, "gm">, memref<1x0x16x16xf32, "gm">) -> ()
  "ascend.batch_matmul"(%ba, %bb, %bc) : (memref<0x2x1x16x16xf16, "gm">, memref<0x1x2x16x16xf16, "gm">, memref<0x1x1x16x16xf32, "gm">) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @transpose_empty
// CHECK-NOT: cce.
// CHECK: return
func.func @transpose_empty(%a: memref<0x16xf16, "gm">, %c: memref<16x0xf16, "gm">) {
  "ascend.transpose"(%a, %c) {permutation = array<i64: 1, 0>} : (memref<0x16xf16, "gm">, memref<16x0xf16, "gm">) -> ()
  return
}
