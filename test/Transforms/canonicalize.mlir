// RUN: npu-opt %s --split-input-file --verify-diagnostics --npu-canonicalize | FileCheck %s

// GELU as torch.onnx writes it below opset 20 (and examples/ffn_block.onnx):
// (x * (1 + erf(x / sqrt2))) * 0.5. The 0.5 moves onto the gate (the adds),
// x * ((1 + erf(..)) * 0.5): the chain the GELU recipe matches.
// CHECK-LABEL: func.func @gelu_torch
// CHECK:       "ascend.adds"(%{{.*}}, %[[GATE:[a-z_0-9]+]]) {scalar = 1.000000e+00 : f64}
// CHECK-NEXT:  %[[HALF:.*]] = memref.alloc()
// CHECK-NEXT:  "ascend.muls"(%[[GATE]], %[[HALF]]) {scalar = 5.000000e-01 : f64}
// CHECK-NEXT:  "ascend.mul"(%arg0, %[[HALF]], %arg1)
// CHECK-NOT:   "ascend.muls"
// CHECK:       return
func.func @gelu_torch(%x: memref<32x64xf32, "gm">, %y: memref<32x64xf32, "gm">) {
  %s = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.muls"(%x, %s) {scalar = 0.70710678118654757 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %e = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.erf"(%s, %e) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %g = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.adds"(%e, %g) {scalar = 1.0 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %p = memref.alloc() : memref<32x64xf32, "gm">
  // expected-remark @+1 {{npu-canonicalize: the scalings of a product gathered in one place}}
  "ascend.mul"(%x, %g, %p) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  "ascend.muls"(%p, %y) {scalar = 0.5 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  return
}

// -----

// GELU as HF BERT traced writes it: (x * 0.5) * (1 + erf(x / sqrt2)).
// CHECK-LABEL: func.func @gelu_hf
// CHECK:       "ascend.adds"(%{{.*}}, %[[GATE:[a-z_0-9]+]]) {scalar = 1.000000e+00 : f64}
// CHECK-NEXT:  %[[HALF:.*]] = memref.alloc()
// CHECK-NEXT:  "ascend.muls"(%[[GATE]], %[[HALF]]) {scalar = 5.000000e-01 : f64}
// CHECK-NEXT:  "ascend.mul"(%arg0, %[[HALF]], %arg1)
// CHECK-NOT:   "ascend.muls"
func.func @gelu_hf(%x: memref<32x64xf32, "gm">, %y: memref<32x64xf32, "gm">) {
  %s = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.muls"(%x, %s) {scalar = 0.70710678118654757 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %e = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.erf"(%s, %e) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %h = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.muls"(%x, %h) {scalar = 0.5 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %g = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.adds"(%e, %g) {scalar = 1.0 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  // expected-remark @+1 {{npu-canonicalize: the scalings of a product gathered in one place}}
  "ascend.mul"(%h, %g, %y) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  return
}

// -----

// The canonical spelling x * (0.5 * (1 + erf(x / sqrt2))) is left as it is.
// CHECK-LABEL: func.func @gelu_canonical
// CHECK:       "ascend.adds"(%{{.*}}, %[[GATE:[a-z_0-9]+]]) {scalar = 1.000000e+00 : f64}
// CHECK-NEXT:  %[[HALF:.*]] = memref.alloc()
// CHECK-NEXT:  "ascend.muls"(%[[GATE]], %[[HALF]]) {scalar = 5.000000e-01 : f64}
// CHECK-NEXT:  "ascend.mul"(%arg0, %[[HALF]], %arg1)
func.func @gelu_canonical(%x: memref<32x64xf32, "gm">, %y: memref<32x64xf32, "gm">) {
  %s = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.muls"(%x, %s) {scalar = 0.70710678118654757 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %e = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.erf"(%s, %e) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %g = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.adds"(%e, %g) {scalar = 1.0 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %h = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.muls"(%g, %h) {scalar = 0.5 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  "ascend.mul"(%x, %h, %y) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  return
}

// -----

// GPT-2's gelu_new, 0.5 * x * (1 + tanh(c * (x + 0.044715 * x^3))): the 0.5
// moves onto the gate; the cube x * (x * x) has no adds operand, so its
// 0.044715 stays on the result, as the recipe expects.
// CHECK-LABEL: func.func @gelu_tanh
// CHECK:       "ascend.mul"(%arg0, %arg0, %[[SQ:[a-z_0-9]+]])
// CHECK-NEXT:  %[[CUBE:.*]] = memref.alloc()
// CHECK-NEXT:  "ascend.mul"(%arg0, %[[SQ]], %[[CUBE]])
// CHECK-NEXT:  %[[C:.*]] = memref.alloc()
// CHECK-NEXT:  "ascend.muls"(%[[CUBE]], %[[C]]) {scalar = 4.471500e-02 : f64}
// CHECK:       "ascend.tanh"
// CHECK:       "ascend.adds"(%{{.*}}, %[[GATE:[a-z_0-9]+]]) {scalar = 1.000000e+00 : f64}
// CHECK-NEXT:  %[[HALF:.*]] = memref.alloc()
// CHECK-NEXT:  "ascend.muls"(%[[GATE]], %[[HALF]]) {scalar = 5.000000e-01 : f64}
// CHECK-NEXT:  "ascend.mul"(%arg0, %[[HALF]], %arg1)
func.func @gelu_tanh(%x: memref<32x64xf32, "gm">, %y: memref<32x64xf32, "gm">) {
  %sq = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.mul"(%x, %x, %sq) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %cube = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.mul"(%x, %sq, %cube) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %c = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.muls"(%cube, %c) {scalar = 0.044715 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %in = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.add"(%x, %c, %in) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %s = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.muls"(%in, %s) {scalar = 0.79788456080286541 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %t = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.tanh"(%s, %t) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %h = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.muls"(%x, %h) {scalar = 0.5 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %g = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.adds"(%t, %g) {scalar = 1.0 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  // expected-remark @+1 {{npu-canonicalize: the scalings of a product gathered in one place}}
  "ascend.mul"(%h, %g, %y) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  return
}

// -----

// The cube written 0.044715 * x * x * x, ((0.044715 * x) * x) * x: its
// factor goes to the result of the product, once.
// CHECK-LABEL: func.func @cube_scaled_first
// CHECK:       "ascend.mul"(%arg0, %arg0, %[[SQ:[a-z_0-9]+]])
// CHECK:       "ascend.mul"(%[[SQ]], %arg0, %[[CUBE:[a-z_0-9]+]])
// CHECK-NEXT:  "ascend.muls"(%[[CUBE]], %arg1) {scalar = 4.471500e-02 : f64}
// CHECK-NOT:   "ascend.muls"
func.func @cube_scaled_first(%x: memref<32x64xf32, "gm">, %y: memref<32x64xf32, "gm">) {
  %c = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.muls"(%x, %c) {scalar = 0.044715 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %sq = memref.alloc() : memref<32x64xf32, "gm">
  // expected-remark @+1 {{npu-canonicalize: the scalings of a product gathered in one place}}
  "ascend.mul"(%c, %x, %sq) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  // expected-remark @+1 {{npu-canonicalize: the scalings of a product gathered in one place}}
  "ascend.mul"(%sq, %x, %y) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  return
}

// -----

// Consecutive scalings fold: (x * 3) * 0.25 is x * 0.75.
// CHECK-LABEL: func.func @fold
// CHECK-NEXT:  "ascend.muls"(%arg0, %arg1) {scalar = 7.500000e-01 : f64}
// CHECK-NEXT:  return
func.func @fold(%x: memref<32x64xf32, "gm">, %y: memref<32x64xf32, "gm">) {
  %a = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.muls"(%x, %a) {scalar = 3.0 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  // expected-remark @+1 {{npu-canonicalize: consecutive scalings folded into one}}
  "ascend.muls"(%a, %y) {scalar = 0.25 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  return
}

// -----

// Factors that cancel leave no scaling: (x * 2) * g * 0.5 is x * g.
// CHECK-LABEL: func.func @cancel
// CHECK-NEXT:  "ascend.mul"(%arg0, %arg1, %arg2)
// CHECK-NEXT:  return
func.func @cancel(%x: memref<32x64xf32, "gm">, %g: memref<32x64xf32, "gm">, %y: memref<32x64xf32, "gm">) {
  %a = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.muls"(%x, %a) {scalar = 2.0 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %p = memref.alloc() : memref<32x64xf32, "gm">
  // expected-remark @+1 {{npu-canonicalize: the scalings of a product gathered in one place}}
  "ascend.mul"(%a, %g, %p) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  "ascend.muls"(%p, %y) {scalar = 0.5 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  return
}

// -----

// Left alone: a scaled operand read twice, and a broadcast operand (moving
// its factor would scale the larger tensor).
// CHECK-LABEL: func.func @kept
// CHECK:       "ascend.muls"(%arg0, %[[H:[a-z_0-9]+]]) {scalar = 5.000000e-01 : f64}
// CHECK:       "ascend.mul"(%[[H]], %arg1, %{{.*}})
// CHECK-NEXT:  "ascend.add"(%[[H]],
// CHECK:       "ascend.muls"(%arg2, %[[B:[a-z_0-9]+]]) {scalar = 2.000000e+00 : f64}
// CHECK-NEXT:  "ascend.mul"(%arg0, %[[B]],
func.func @kept(%x: memref<32x64xf32, "gm">, %g: memref<32x64xf32, "gm">, %row: memref<1x64xf32, "gm">, %y: memref<32x64xf32, "gm">) {
  %h = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.muls"(%x, %h) {scalar = 0.5 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %p = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.mul"(%h, %g, %p) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  "ascend.add"(%h, %p, %y) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %b = memref.alloc() : memref<1x64xf32, "gm">
  "ascend.muls"(%row, %b) {scalar = 2.0 : f64} : (memref<1x64xf32, "gm">, memref<1x64xf32, "gm">) -> ()
  "ascend.mul"(%x, %b, %y) : (memref<32x64xf32, "gm">, memref<1x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  return
}

// -----

// Left alone when the buffers would be read or written at another time than
// the program says: x is overwritten between its scaling and the product
// (the product must read the scaled old x), and the result's buffer is read
// between the product and its scaling (it must not be written early).
// CHECK-LABEL: func.func @order_kept
// CHECK:       "ascend.muls"(%arg0, %[[H:[a-z_0-9]+]]) {scalar = 5.000000e-01 : f64}
// CHECK-NEXT:  "ascend.exp"(%arg1, %arg0)
// CHECK-NEXT:  "ascend.mul"(%[[H]], %arg1, %arg2)
// CHECK:       "ascend.mul"(%arg0, %arg1, %[[P:[a-z_0-9]+]])
// CHECK-NEXT:  "ascend.exp"(%arg3, %arg4)
// CHECK-NEXT:  "ascend.muls"(%[[P]], %arg3) {scalar = 2.500000e-01 : f64}
func.func @order_kept(%x: memref<32x64xf32, "gm">, %g: memref<32x64xf32, "gm">, %y: memref<32x64xf32, "gm">, %z: memref<32x64xf32, "gm">, %e: memref<32x64xf32, "gm">) {
  %h = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.muls"(%x, %h) {scalar = 0.5 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  "ascend.exp"(%g, %x) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  "ascend.mul"(%h, %g, %y) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %p = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.mul"(%x, %g, %p) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  "ascend.exp"(%z, %e) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  "ascend.muls"(%p, %z) {scalar = 0.25 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  return
}

// -----

// HF's gelu_fast writes the tanh argument factored, c * x * (1 + k*x*x):
// after c joins the gate, the cubic is expanded to c * (x + k * x^3), the
// form of the tanh GELU recipe.
// CHECK-LABEL: func.func @gelu_fast_argument
// CHECK:       "ascend.mul"(%arg0, %arg0, %[[SQ:[a-z_0-9]+]])
// CHECK:       "ascend.mul"(%arg0, %[[SQ]], %[[CUBE:[a-z_0-9]+]])
// CHECK:       "ascend.muls"(%[[CUBE]], %[[K:[a-z_0-9]+]]) {scalar = 4.471500e-02 : f64}
// CHECK:       "ascend.add"(%arg0, %[[K]], %[[SUM:[a-z_0-9]+]])
// CHECK-NEXT:  "ascend.muls"(%[[SUM]], %arg1) {scalar = 0.79788456{{[0-9]*}} : f64}
// CHECK-NOT:   "ascend.adds"
func.func @gelu_fast_argument(%x: memref<32x64xf32, "gm">, %y: memref<32x64xf32, "gm">) {
  %sq = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.mul"(%x, %x, %sq) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %k = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.muls"(%sq, %k) {scalar = 0.044715 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %p = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.adds"(%k, %p) {scalar = 1.0 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %xc = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.muls"(%x, %xc) {scalar = 0.79788456080286541 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  // expected-remark @+2 {{npu-canonicalize: the scalings of a product gathered in one place}}
  // expected-remark @+1 {{npu-canonicalize: x*(1 + k*x*x) expanded to x + k*x^3}}
  "ascend.mul"(%xc, %p, %y) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  return
}

// -----

// An erf gate is not a polynomial in x: x * (1 + erf(x)) stays as it is.
// CHECK-LABEL: func.func @erf_gate_kept
// CHECK:       "ascend.adds"(%{{.*}}, %[[G:[a-z_0-9]+]]) {scalar = 1.000000e+00 : f64}
// CHECK-NEXT:  "ascend.mul"(%arg0, %[[G]], %arg1)
func.func @erf_gate_kept(%x: memref<32x64xf32, "gm">, %y: memref<32x64xf32, "gm">) {
  %e = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.erf"(%x, %e) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  %g = memref.alloc() : memref<32x64xf32, "gm">
  "ascend.adds"(%e, %g) {scalar = 1.0 : f64} : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  "ascend.mul"(%x, %g, %y) : (memref<32x64xf32, "gm">, memref<32x64xf32, "gm">, memref<32x64xf32, "gm">) -> ()
  return
}
