// RUN: npu-opt %s --npu-fuse --npu-lower-matmul=schedule=pipelined 2>/dev/null | FileCheck %s
// RUN: npu-opt %s --npu-fuse --npu-lower-matmul="schedule=pipelined drain-convert=false" 2>/dev/null | FileCheck %s --check-prefix=VCONV

// An epilogue computed in f16 under the pipelined schedule (four L0C pieces
// of one column block): the move rounds each piece to f16 (drain-convert)
// into one of two UB buffers allocated in the loop body, piece h into
// buffer h % 2, where the epilogue works in place and which it stores; so
// a piece's store never holds up the next piece's move and vector work.
// CHECK-LABEL: func.func @bias_gelu_cast
// CHECK:       scf.for
// CHECK:         %[[EVEN:.*]] = memref.alloc() : memref<1x3x16x16xf16, "ub">
// CHECK-NEXT:    %[[ODD:.*]] = memref.alloc() : memref<1x3x16x16xf16, "ub">
// CHECK:         scf.if
// CHECK:           "cce.copy_l0c_to_ub"({{.*}}, %[[EVEN]]) {{.*}}convert = "f32_to_f16"
// CHECK-NOT:       cce.vconv
// CHECK:           "cce.copy_ub_to_gm"(%[[EVEN]],
// CHECK:         scf.if
// CHECK:           "cce.copy_l0c_to_ub"({{.*}}, %[[ODD]]) {{.*}}convert = "f32_to_f16"
// CHECK:           "cce.copy_ub_to_gm"(%[[ODD]],
// CHECK:         scf.if
// CHECK:           "cce.copy_l0c_to_ub"({{.*}}, %[[EVEN]])
// CHECK:         scf.if
// CHECK:           "cce.copy_l0c_to_ub"({{.*}}, %[[ODD]])
// Without the move's conversion each piece lands in f32 in a buffer of its own.
// VCONV-LABEL: func.func @bias_gelu_cast
// VCONV:       scf.if
// VCONV:         %[[ACC:.*]] = memref.alloc() : memref<1x3x16x16xf32, "ub">
// VCONV-NEXT:    "cce.copy_l0c_to_ub"({{.*}}, %[[ACC]])
// VCONV-NOT:     convert
// VCONV-SAME:    -> ()
// VCONV:         "cce.vconv"
func.func @bias_gelu_cast(%a: memref<4x3x16x16xf16, "gm">, %b: memref<4x4x16x16xf16, "gm">, %bias: memref<4x3x16x16xf32, "gm"> {npu.constant = dense<0.25> : tensor<4x3x16x16xf32>}, %y: memref<4x3x16x16xf16, "gm">) {
  %c = memref.alloc() : memref<4x3x16x16xf32, "gm">
  "ascend.matmul"(%a, %b, %c) : (memref<4x3x16x16xf16, "gm">, memref<4x4x16x16xf16, "gm">, memref<4x3x16x16xf32, "gm">) -> ()
  %h = memref.alloc() : memref<4x3x16x16xf32, "gm">
  "ascend.add"(%c, %bias, %h) : (memref<4x3x16x16xf32, "gm">, memref<4x3x16x16xf32, "gm">, memref<4x3x16x16xf32, "gm">) -> ()
  %s = memref.alloc() : memref<4x3x16x16xf32, "gm">
  "ascend.muls"(%h, %s) {scalar = 0.70710678118654757 : f64} : (memref<4x3x16x16xf32, "gm">, memref<4x3x16x16xf32, "gm">) -> ()
  %e = memref.alloc() : memref<4x3x16x16xf32, "gm">
  "ascend.erf"(%s, %e) : (memref<4x3x16x16xf32, "gm">, memref<4x3x16x16xf32, "gm">) -> ()
  %p = memref.alloc() : memref<4x3x16x16xf32, "gm">
  "ascend.adds"(%e, %p) {scalar = 1.0 : f64} : (memref<4x3x16x16xf32, "gm">, memref<4x3x16x16xf32, "gm">) -> ()
  %q = memref.alloc() : memref<4x3x16x16xf32, "gm">
  "ascend.muls"(%p, %q) {scalar = 0.5 : f64} : (memref<4x3x16x16xf32, "gm">, memref<4x3x16x16xf32, "gm">) -> ()
  %g = memref.alloc() : memref<4x3x16x16xf32, "gm">
  "ascend.mul"(%h, %q, %g) : (memref<4x3x16x16xf32, "gm">, memref<4x3x16x16xf32, "gm">, memref<4x3x16x16xf32, "gm">) -> ()
  "ascend.cast"(%g, %y) {round_mode = "rint"} : (memref<4x3x16x16xf32, "gm">, memref<4x3x16x16xf16, "gm">) -> ()
  return
}
