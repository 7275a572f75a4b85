// RUN: npu-opt %s | npu-opt | FileCheck %s
// Every ascend op parses, verifies and prints back (generic form), twice.

// CHECK-LABEL: func.func @cube(
// CHECK:      "ascend.matmul"(%arg0, %arg1, %arg2) : (memref<4x2x16x16xf16, "gm">, memref<3x4x16x16xf16, "gm">, memref<3x2x16x16xf32, "gm">) -> ()
// CHECK-NEXT: "ascend.matmul"(%arg0, %arg1, %arg3) : (memref<4x2x16x16xf16, "gm">, memref<3x4x16x16xf16, "gm">, memref<3x2x16x16xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.batch_matmul"(%arg4, %arg5, %arg6) : (memref<5x4x2x16x16xf16, "gm">, memref<5x3x4x16x16xf16, "gm">, memref<5x3x2x16x16xf32, "gm">) -> ()
// CHECK-NEXT: return
func.func @cube(%a: memref<4x2x16x16xf16, "gm">, %b: memref<3x4x16x16xf16, "gm">, %c: memref<3x2x16x16xf32, "gm">,
                %c16: memref<3x2x16x16xf16, "gm">,
                %ba: memref<5x4x2x16x16xf16, "gm">, %bb: memref<5x3x4x16x16xf16, "gm">, %bc: memref<5x3x2x16x16xf32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<4x2x16x16xf16, "gm">, memref<3x4x16x16xf16, "gm">, memref<3x2x16x16xf32, "gm">) -> ()
  "ascend.matmul"(%a, %b, %c16) : (memref<4x2x16x16xf16, "gm">, memref<3x4x16x16xf16, "gm">, memref<3x2x16x16xf16, "gm">) -> ()
  "ascend.batch_matmul"(%ba, %bb, %bc) : (memref<5x4x2x16x16xf16, "gm">, memref<5x3x4x16x16xf16, "gm">, memref<5x3x2x16x16xf32, "gm">) -> ()
  return
}

// int8 cube: a [N1, M1, 16, 32] and b [K1, N1, 32, 16] (K0 = 32), c i32 [K1, M1, 16, 16]
// CHECK-LABEL: func.func @cube_int8(
// CHECK:      "ascend.matmul"(%arg0, %arg1, %arg2) : (memref<3x2x16x32xi8, "gm">, memref<4x3x32x16xi8, "gm">, memref<4x2x16x16xi32, "gm">) -> ()
// CHECK-NEXT: "ascend.batch_matmul"(%arg3, %arg4, %arg5) : (memref<2x1x1x16x32xi8, "gm">, memref<2x1x1x32x16xi8, "gm">, memref<2x1x1x16x16xi32, "gm">) -> ()
// CHECK-NEXT: return
func.func @cube_int8(%a: memref<3x2x16x32xi8, "gm">, %b: memref<4x3x32x16xi8, "gm">, %c: memref<4x2x16x16xi32, "gm">,
                     %ba: memref<2x1x1x16x32xi8, "gm">, %bb: memref<2x1x1x32x16xi8, "gm">, %bc: memref<2x1x1x16x16xi32, "gm">) {
  "ascend.matmul"(%a, %b, %c) : (memref<3x2x16x32xi8, "gm">, memref<4x3x32x16xi8, "gm">, memref<4x2x16x16xi32, "gm">) -> ()
  "ascend.batch_matmul"(%ba, %bb, %bc) : (memref<2x1x1x16x32xi8, "gm">, memref<2x1x1x32x16xi8, "gm">, memref<2x1x1x16x16xi32, "gm">) -> ()
  return
}

// CHECK-LABEL: func.func @layout(
// CHECK:      "ascend.fractalize"(%arg0, %arg1) : (memref<30x50xf16, "gm">, memref<4x2x16x16xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.defractalize"(%arg1, %arg0) : (memref<4x2x16x16xf16, "gm">, memref<30x50xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.fractalize"(%arg2, %arg3) : (memref<3x16x16xf32, "gm">, memref<3x1x1x16x16xf32, "gm">) -> ()
// CHECK-NEXT: "ascend.defractalize"(%arg3, %arg2) : (memref<3x1x1x16x16xf32, "gm">, memref<3x16x16xf32, "gm">) -> ()
// CHECK-NEXT: "ascend.transpose"(%arg4, %arg5) {permutation = array<i64: 2, 0, 1>} : (memref<2x3x4xf32, "gm">, memref<4x2x3xf32, "gm">) -> ()
// CHECK-NEXT: "ascend.fractalize"(%arg6, %arg7) : (memref<30x50xi8, "gm">, memref<2x2x16x32xi8, "gm">) -> ()
// CHECK-NEXT: "ascend.defractalize"(%arg8, %arg9) : (memref<4x2x16x16xi32, "gm">, memref<30x50xi32, "gm">) -> ()
// CHECK-NEXT: return
func.func @layout(%nd: memref<30x50xf16, "gm">, %nz: memref<4x2x16x16xf16, "gm">,
                  %bnd: memref<3x16x16xf32, "gm">, %bnz: memref<3x1x1x16x16xf32, "gm">,
                  %x: memref<2x3x4xf32, "gm">, %xt: memref<4x2x3xf32, "gm">,
                  %i8: memref<30x50xi8, "gm">, %i8nz: memref<2x2x16x32xi8, "gm">,
                  %acc: memref<4x2x16x16xi32, "gm">, %i32: memref<30x50xi32, "gm">) {
  "ascend.fractalize"(%nd, %nz) : (memref<30x50xf16, "gm">, memref<4x2x16x16xf16, "gm">) -> ()
  "ascend.defractalize"(%nz, %nd) : (memref<4x2x16x16xf16, "gm">, memref<30x50xf16, "gm">) -> ()
  "ascend.fractalize"(%bnd, %bnz) : (memref<3x16x16xf32, "gm">, memref<3x1x1x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%bnz, %bnd) : (memref<3x1x1x16x16xf32, "gm">, memref<3x16x16xf32, "gm">) -> ()
  "ascend.transpose"(%x, %xt) {permutation = array<i64: 2, 0, 1>} : (memref<2x3x4xf32, "gm">, memref<4x2x3xf32, "gm">) -> ()
  // int8 fractalizes into a matmul A operand's 16 x 32 blocks; i32 (an int8
  // matmul's C) leaves Nz like f32.
  "ascend.fractalize"(%i8, %i8nz) : (memref<30x50xi8, "gm">, memref<2x2x16x32xi8, "gm">) -> ()
  "ascend.defractalize"(%acc, %i32) : (memref<4x2x16x16xi32, "gm">, memref<30x50xi32, "gm">) -> ()
  return
}

// CHECK-LABEL: func.func @binary(
// CHECK:      "ascend.add"(%arg0, %arg0, %arg0) : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.sub"(%arg0, %arg1, %arg0) : (memref<8x64xf16, "gm">, memref<64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.mul"(%arg2, %arg0, %arg0) : (memref<8x1xf16, "gm">, memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.div"(%arg3, %arg3, %arg3) : (memref<8x64xf32, "gm">, memref<8x64xf32, "gm">, memref<8x64xf32, "gm">) -> ()
// CHECK-NEXT: "ascend.max"(%arg4, %arg5, %arg4) : (memref<8x64xi32, "gm">, memref<1xi32, "gm">, memref<8x64xi32, "gm">) -> ()
// CHECK-NEXT: "ascend.min"(%arg1, %arg2, %arg0) : (memref<64xf16, "gm">, memref<8x1xf16, "gm">, memref<8x64xf16, "gm">) -> ()
// CHECK-NEXT: return
func.func @binary(%x: memref<8x64xf16, "gm">, %row: memref<64xf16, "gm">, %col: memref<8x1xf16, "gm">,
                  %f: memref<8x64xf32, "gm">, %i: memref<8x64xi32, "gm">, %one: memref<1xi32, "gm">) {
  "ascend.add"(%x, %x, %x) : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
  "ascend.sub"(%x, %row, %x) : (memref<8x64xf16, "gm">, memref<64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
  "ascend.mul"(%col, %x, %x) : (memref<8x1xf16, "gm">, memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
  "ascend.div"(%f, %f, %f) : (memref<8x64xf32, "gm">, memref<8x64xf32, "gm">, memref<8x64xf32, "gm">) -> ()
  "ascend.max"(%i, %one, %i) : (memref<8x64xi32, "gm">, memref<1xi32, "gm">, memref<8x64xi32, "gm">) -> ()
  "ascend.min"(%row, %col, %x) : (memref<64xf16, "gm">, memref<8x1xf16, "gm">, memref<8x64xf16, "gm">) -> ()
  return
}

// CHECK-LABEL: func.func @scalar(
// CHECK:      "ascend.adds"(%arg0, %arg1) {scalar = 1.000000e+00 : f64} : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.muls"(%arg0, %arg1) {scalar = -2.500000e+00 : f64} : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.maxs"(%arg2, %arg2) {scalar = 0.000000e+00 : f64} : (memref<100xf32, "gm">, memref<100xf32, "gm">) -> ()
// CHECK-NEXT: "ascend.mins"(%arg2, %arg2) {scalar = 6.000000e+00 : f64} : (memref<100xf32, "gm">, memref<100xf32, "gm">) -> ()
// CHECK-NEXT: "ascend.clamp"(%arg0, %arg1) {max = 1.000000e+00 : f64, min = -1.000000e+00 : f64} : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
// CHECK-NEXT: return
func.func @scalar(%x: memref<8x64xf16, "gm">, %y: memref<8x64xf16, "gm">, %f: memref<100xf32, "gm">) {
  "ascend.adds"(%x, %y) {scalar = 1.0 : f64} : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
  "ascend.muls"(%x, %y) {scalar = -2.5 : f64} : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
  "ascend.maxs"(%f, %f) {scalar = 0.0 : f64} : (memref<100xf32, "gm">, memref<100xf32, "gm">) -> ()
  "ascend.mins"(%f, %f) {scalar = 6.0 : f64} : (memref<100xf32, "gm">, memref<100xf32, "gm">) -> ()
  "ascend.clamp"(%x, %y) {min = -1.0 : f64, max = 1.0 : f64} : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
  return
}

// CHECK-LABEL: func.func @unary(
// CHECK:      "ascend.relu"(%arg0, %arg1) : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.abs"(%arg0, %arg1) : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.neg"(%arg0, %arg1) : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.exp"(%arg0, %arg1) : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.ln"(%arg2, %arg2) : (memref<100xf32, "gm">, memref<100xf32, "gm">) -> ()
// CHECK-NEXT: "ascend.sqrt"(%arg2, %arg2) : (memref<100xf32, "gm">, memref<100xf32, "gm">) -> ()
// CHECK-NEXT: "ascend.rsqrt"(%arg0, %arg1) : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.reciprocal"(%arg0, %arg1) : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.tanh"(%arg2, %arg2) : (memref<100xf32, "gm">, memref<100xf32, "gm">) -> ()
// CHECK-NEXT: "ascend.sigmoid"(%arg0, %arg1) : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
// CHECK-NEXT: return
func.func @unary(%x: memref<8x64xf16, "gm">, %y: memref<8x64xf16, "gm">, %f: memref<100xf32, "gm">) {
  "ascend.relu"(%x, %y) : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
  "ascend.abs"(%x, %y) : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
  "ascend.neg"(%x, %y) : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
  "ascend.exp"(%x, %y) : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
  "ascend.ln"(%f, %f) : (memref<100xf32, "gm">, memref<100xf32, "gm">) -> ()
  "ascend.sqrt"(%f, %f) : (memref<100xf32, "gm">, memref<100xf32, "gm">) -> ()
  "ascend.rsqrt"(%x, %y) : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
  "ascend.reciprocal"(%x, %y) : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
  "ascend.tanh"(%f, %f) : (memref<100xf32, "gm">, memref<100xf32, "gm">) -> ()
  "ascend.sigmoid"(%x, %y) : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
  return
}

// CHECK-LABEL: func.func @cast(
// CHECK:      "ascend.cast"(%arg0, %arg1) {round_mode = "none"} : (memref<4x32xf16, "gm">, memref<4x32xf32, "gm">) -> ()
// CHECK-NEXT: "ascend.cast"(%arg1, %arg0) {round_mode = "rint"} : (memref<4x32xf32, "gm">, memref<4x32xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.cast"(%arg0, %arg2) {round_mode = "floor"} : (memref<4x32xf16, "gm">, memref<4x32xi32, "gm">) -> ()
// CHECK-NEXT: "ascend.cast"(%arg1, %arg2) {round_mode = "ceil"} : (memref<4x32xf32, "gm">, memref<4x32xi32, "gm">) -> ()
// CHECK-NEXT: "ascend.cast"(%arg3, %arg0) {round_mode = "none"} : (memref<4x32xi8, "gm">, memref<4x32xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.cast"(%arg0, %arg3) {round_mode = "trunc"} : (memref<4x32xf16, "gm">, memref<4x32xi8, "gm">) -> ()
// CHECK-NEXT: "ascend.cast"(%arg1, %arg2) {round_mode = "round"} : (memref<4x32xf32, "gm">, memref<4x32xi32, "gm">) -> ()
// CHECK-NEXT: return
func.func @cast(%h: memref<4x32xf16, "gm">, %f: memref<4x32xf32, "gm">, %i: memref<4x32xi32, "gm">,
                %b: memref<4x32xi8, "gm">) {
  "ascend.cast"(%h, %f) {round_mode = "none"} : (memref<4x32xf16, "gm">, memref<4x32xf32, "gm">) -> ()
  "ascend.cast"(%f, %h) {round_mode = "rint"} : (memref<4x32xf32, "gm">, memref<4x32xf16, "gm">) -> ()
  "ascend.cast"(%h, %i) {round_mode = "floor"} : (memref<4x32xf16, "gm">, memref<4x32xi32, "gm">) -> ()
  "ascend.cast"(%f, %i) {round_mode = "ceil"} : (memref<4x32xf32, "gm">, memref<4x32xi32, "gm">) -> ()
  "ascend.cast"(%b, %h) {round_mode = "none"} : (memref<4x32xi8, "gm">, memref<4x32xf16, "gm">) -> ()
  "ascend.cast"(%h, %b) {round_mode = "trunc"} : (memref<4x32xf16, "gm">, memref<4x32xi8, "gm">) -> ()
  "ascend.cast"(%f, %i) {round_mode = "round"} : (memref<4x32xf32, "gm">, memref<4x32xi32, "gm">) -> ()
  return
}

// CHECK-LABEL: func.func @reduce(
// CHECK:      "ascend.reduce_sum"(%arg0, %arg1) : (memref<8x64xf16, "gm">, memref<8xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.reduce_max"(%arg0, %arg1) : (memref<8x64xf16, "gm">, memref<8xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.reduce_sum"(%arg2, %arg3) : (memref<100xf32, "gm">, memref<1xf32, "gm">) -> ()
// CHECK-NEXT: return
func.func @reduce(%x: memref<8x64xf16, "gm">, %r: memref<8xf16, "gm">, %v: memref<100xf32, "gm">, %s: memref<1xf32, "gm">) {
  "ascend.reduce_sum"(%x, %r) : (memref<8x64xf16, "gm">, memref<8xf16, "gm">) -> ()
  "ascend.reduce_max"(%x, %r) : (memref<8x64xf16, "gm">, memref<8xf16, "gm">) -> ()
  "ascend.reduce_sum"(%v, %s) : (memref<100xf32, "gm">, memref<1xf32, "gm">) -> ()
  return
}

// CHECK-LABEL: func.func @frontend_ops(
// CHECK:      "ascend.erf"(%arg0, %arg0) : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.cmp"(%arg0, %arg1, %arg2) {predicate = "lt"} : (memref<8x64xf16, "gm">, memref<64xf16, "gm">, memref<8x64xi8, "gm">) -> ()
// CHECK-NEXT: "ascend.select"(%arg2, %arg0, %arg1, %arg0) : (memref<8x64xi8, "gm">, memref<8x64xf16, "gm">, memref<64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.broadcast"(%arg1, %arg0) : (memref<64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.reduce_sum"(%arg3, %arg4) {axis = 0 : i64} : (memref<4x8x3xf32, "gm">, memref<8x3xf32, "gm">) -> ()
// CHECK-NEXT: "ascend.reduce_max"(%arg3, %arg5) {axis = -2 : i64} : (memref<4x8x3xf32, "gm">, memref<4x1x3xf32, "gm">) -> ()
// CHECK-NEXT: "ascend.reduce_min"(%arg3, %arg6) : (memref<4x8x3xf32, "gm">, memref<4x8xf32, "gm">) -> ()
// CHECK-NEXT: "ascend.cast"(%arg7, %arg2) {round_mode = "rint"} : (memref<8x64xi32, "gm">, memref<8x64xi8, "gm">) -> ()
// CHECK-NEXT: return
func.func @frontend_ops(%x: memref<8x64xf16, "gm">, %row: memref<64xf16, "gm">, %m: memref<8x64xi8, "gm">,
                        %t: memref<4x8x3xf32, "gm">, %s0: memref<8x3xf32, "gm">, %k1: memref<4x1x3xf32, "gm">,
                        %s2: memref<4x8xf32, "gm">, %i: memref<8x64xi32, "gm">) {
  "ascend.erf"(%x, %x) : (memref<8x64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
  "ascend.cmp"(%x, %row, %m) {predicate = "lt"} : (memref<8x64xf16, "gm">, memref<64xf16, "gm">, memref<8x64xi8, "gm">) -> ()
  "ascend.select"(%m, %x, %row, %x) : (memref<8x64xi8, "gm">, memref<8x64xf16, "gm">, memref<64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
  "ascend.broadcast"(%row, %x) : (memref<64xf16, "gm">, memref<8x64xf16, "gm">) -> ()
  "ascend.reduce_sum"(%t, %s0) {axis = 0 : i64} : (memref<4x8x3xf32, "gm">, memref<8x3xf32, "gm">) -> ()
  "ascend.reduce_max"(%t, %k1) {axis = -2 : i64} : (memref<4x8x3xf32, "gm">, memref<4x1x3xf32, "gm">) -> ()
  "ascend.reduce_min"(%t, %s2) : (memref<4x8x3xf32, "gm">, memref<4x8xf32, "gm">) -> ()
  "ascend.cast"(%i, %m) {round_mode = "rint"} : (memref<8x64xi32, "gm">, memref<8x64xi8, "gm">) -> ()
  return
}

// CHECK-LABEL: func.func @gather(
// CHECK:      "ascend.gather"(%arg0, %arg1, %arg2) {axis = 0 : i64} : (memref<101x48xf32, "gm">, memref<2x7xi32, "gm">, memref<2x7x48xf32, "gm">) -> ()
// CHECK-NEXT: "ascend.gather"(%arg3, %arg4, %arg5) {axis = -2 : i64} : (memref<8x40x16xf16, "gm">, memref<3xi32, "gm">, memref<8x3x16xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.gather_elements"(%arg3, %arg6, %arg7) {axis = 1 : i64} : (memref<8x40x16xf16, "gm">, memref<8x50x16xi32, "gm">, memref<8x50x16xf16, "gm">) -> ()
// CHECK-NEXT: return
func.func @gather(%table: memref<101x48xf32, "gm">, %ids: memref<2x7xi32, "gm">, %out: memref<2x7x48xf32, "gm">,
                  %t3: memref<8x40x16xf16, "gm">, %i3: memref<3xi32, "gm">, %o3: memref<8x3x16xf16, "gm">,
                  %ie: memref<8x50x16xi32, "gm">, %oe: memref<8x50x16xf16, "gm">) {
  "ascend.gather"(%table, %ids, %out) {axis = 0 : i64} : (memref<101x48xf32, "gm">, memref<2x7xi32, "gm">, memref<2x7x48xf32, "gm">) -> ()
  "ascend.gather"(%t3, %i3, %o3) {axis = -2 : i64} : (memref<8x40x16xf16, "gm">, memref<3xi32, "gm">, memref<8x3x16xf16, "gm">) -> ()
  "ascend.gather_elements"(%t3, %ie, %oe) {axis = 1 : i64} : (memref<8x40x16xf16, "gm">, memref<8x50x16xi32, "gm">, memref<8x50x16xf16, "gm">) -> ()
  return
}

// CHECK-LABEL: func.func @slices(
// CHECK:      "ascend.slice"(%arg0, %arg1) {offsets = array<i64: 1, 8>, strides = array<i64: 2, -1>} : (memref<5x9xf32, "gm">, memref<2x4xf32, "gm">) -> ()
// CHECK-NEXT: "ascend.insert_slice"(%arg1, %arg2) {offsets = array<i64: 0, 3>} : (memref<2x4xf32, "gm">, memref<2x7xf32, "gm">) -> ()
// CHECK-NEXT: "ascend.slice"(%arg3, %arg4) {offsets = array<i64: 0>, strides = array<i64: 1>} : (memref<40xi8, "gm">, memref<33xi8, "gm">) -> ()
// CHECK-NEXT: return
func.func @slices(%x: memref<5x9xf32, "gm">, %s: memref<2x4xf32, "gm">, %c: memref<2x7xf32, "gm">,
                  %b: memref<40xi8, "gm">, %bs: memref<33xi8, "gm">) {
  "ascend.slice"(%x, %s) {offsets = array<i64: 1, 8>, strides = array<i64: 2, -1>} : (memref<5x9xf32, "gm">, memref<2x4xf32, "gm">) -> ()
  "ascend.insert_slice"(%s, %c) {offsets = array<i64: 0, 3>} : (memref<2x4xf32, "gm">, memref<2x7xf32, "gm">) -> ()
  "ascend.slice"(%b, %bs) {offsets = array<i64: 0>, strides = array<i64: 1>} : (memref<40xi8, "gm">, memref<33xi8, "gm">) -> ()
  return
}

// CHECK-LABEL: func.func @conv(
// CHECK:      "ascend.conv2d"(%arg0, %arg1, %arg2, %arg3) {dilations = array<i64: 1, 1>, groups = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (memref<1x3x9x9xf16, "gm">, memref<8x3x3x3xf16, "gm">, memref<8xf32, "gm">, memref<1x8x9x9xf32, "gm">) -> ()
// CHECK-NEXT: "ascend.conv2d"(%arg0, %arg1, %arg4) {dilations = array<i64: 2, 2>, groups = 1 : i64, pads = array<i64: 0, 1, 2, 1>, strides = array<i64: 2, 1>} : (memref<1x3x9x9xf16, "gm">, memref<8x3x3x3xf16, "gm">, memref<1x8x4x7xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.conv2d"(%arg5, %arg6, %arg7) {dilations = array<i64: 1, 1>, groups = 4 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (memref<2x4x5x5xf16, "gm">, memref<8x1x3x3xf16, "gm">, memref<2x8x3x3xf32, "gm">) -> ()
// CHECK-NEXT: return
func.func @conv(%x: memref<1x3x9x9xf16, "gm">, %w: memref<8x3x3x3xf16, "gm">, %b: memref<8xf32, "gm">,
                %y: memref<1x8x9x9xf32, "gm">, %y2: memref<1x8x4x7xf16, "gm">,
                %dx: memref<2x4x5x5xf16, "gm">, %dw: memref<8x1x3x3xf16, "gm">, %dy: memref<2x8x3x3xf32, "gm">) {
  "ascend.conv2d"(%x, %w, %b, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64} : (memref<1x3x9x9xf16, "gm">, memref<8x3x3x3xf16, "gm">, memref<8xf32, "gm">, memref<1x8x9x9xf32, "gm">) -> ()
  "ascend.conv2d"(%x, %w, %y2) {strides = array<i64: 2, 1>, pads = array<i64: 0, 1, 2, 1>, dilations = array<i64: 2, 2>, groups = 1 : i64} : (memref<1x3x9x9xf16, "gm">, memref<8x3x3x3xf16, "gm">, memref<1x8x4x7xf16, "gm">) -> ()
  "ascend.conv2d"(%dx, %dw, %dy) {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 4 : i64} : (memref<2x4x5x5xf16, "gm">, memref<8x1x3x3xf16, "gm">, memref<2x8x3x3xf32, "gm">) -> ()
  return
}

// CHECK-LABEL: func.func @conv_int8(
// CHECK:      "ascend.conv2d"(%arg0, %arg1, %arg2, %arg3) {dilations = array<i64: 1, 1>, groups = 1 : i64, pad_value = -128 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (memref<1x40x9x9xf16, "gm">, memref<8x40x3x3xi8, "gm">, memref<8xi32, "gm">, memref<1x8x9x9xi32, "gm">) -> ()
// CHECK-NEXT: "ascend.conv2d"(%arg4, %arg5, %arg6) {dilations = array<i64: 1, 1>, groups = 1 : i64, kernel = array<i64: 3, 3>, layout = "nc1hwc0", pad_value = 3 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (memref<1x3x9x9x16xf16, "gm">, memref<18x1x16x32xi8, "gm">, memref<1x1x5x5x16xi32, "gm">) -> ()
// CHECK-NEXT: return
func.func @conv_int8(%x: memref<1x40x9x9xf16, "gm">, %w: memref<8x40x3x3xi8, "gm">, %b: memref<8xi32, "gm">,
                     %y: memref<1x8x9x9xi32, "gm">, %x5: memref<1x3x9x9x16xf16, "gm">,
                     %wz: memref<18x1x16x32xi8, "gm">, %y5: memref<1x1x5x5x16xi32, "gm">) {
  "ascend.conv2d"(%x, %w, %b, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, pad_value = -128 : i64} : (memref<1x40x9x9xf16, "gm">, memref<8x40x3x3xi8, "gm">, memref<8xi32, "gm">, memref<1x8x9x9xi32, "gm">) -> ()
  "ascend.conv2d"(%x5, %wz, %y5) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>, pad_value = 3 : i64} : (memref<1x3x9x9x16xf16, "gm">, memref<18x1x16x32xi8, "gm">, memref<1x1x5x5x16xi32, "gm">) -> ()
  return
}

// CHECK-LABEL: func.func @conv_5hd(
// CHECK:      "ascend.conv2d"(%arg0, %arg1, %arg2, %arg3) {dilations = array<i64: 1, 1>, groups = 1 : i64, kernel = array<i64: 3, 3>, layout = "nc1hwc0", pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
// CHECK-NEXT: "ascend.conv2d"(%arg4, %arg5, %arg6) {dilations = array<i64: 1, 1>, groups = 1 : i64, kernel = array<i64: 7, 7>, layout = "nc1hwc0_c4", pads = array<i64: 3, 3, 3, 3>, strides = array<i64: 2, 2>}
func.func @conv_5hd(%x: memref<1x2x6x6x16xf16, "gm">, %w: memref<18x1x16x16xf16, "gm">, %b: memref<16xf32, "gm">, %y: memref<1x1x6x6x16xf32, "gm">,
                    %sx: memref<1x1x16x16x16xf16, "gm">, %sw: memref<13x1x16x16xf16, "gm">, %sy: memref<1x1x8x8x16xf16, "gm">) {
  "ascend.conv2d"(%x, %w, %b, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>} : (memref<1x2x6x6x16xf16, "gm">, memref<18x1x16x16xf16, "gm">, memref<16xf32, "gm">, memref<1x1x6x6x16xf32, "gm">) -> ()
  "ascend.conv2d"(%sx, %sw, %sy) {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0_c4", kernel = array<i64: 7, 7>} : (memref<1x1x16x16x16xf16, "gm">, memref<13x1x16x16xf16, "gm">, memref<1x1x8x8x16xf16, "gm">) -> ()
  return
}

// CHECK-LABEL: func.func @conv_diagonal(
// CHECK: "ascend.conv2d"(%arg0, %arg1, %arg2) {dilations = array<i64: 1, 1>, groups = 1 : i64, kernel = array<i64: 3, 3>, layout = "nc1hwc0_bd", pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
func.func @conv_diagonal(%x: memref<1x2x7x7x16xf16, "gm">, %w: memref<9x2x16x16xf16, "gm">, %y: memref<1x2x4x4x16xf16, "gm">) {
  "ascend.conv2d"(%x, %w, %y) {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0_bd", kernel = array<i64: 3, 3>} : (memref<1x2x7x7x16xf16, "gm">, memref<9x2x16x16xf16, "gm">, memref<1x2x4x4x16xf16, "gm">) -> ()
  return
}

// CHECK-LABEL: func.func @pool2d(
// CHECK:      "ascend.pool2d"(%arg0, %arg1) {count_include_pad = 1 : i64, dilations = array<i64: 1, 1>, kernel = array<i64: 3, 3>, kind = "max", pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (memref<1x3x9x9xf16, "gm">, memref<1x3x5x5xf16, "gm">) -> ()
// CHECK-NEXT: "ascend.pool2d"(%arg2, %arg3) {count_include_pad = 0 : i64, dilations = array<i64: 2, 1>, kernel = array<i64: 2, 3>, kind = "avg", pads = array<i64: 0, 1, 1, 0>, strides = array<i64: 1, 2>} : (memref<2x4x7x8xf32, "gm">, memref<2x4x6x4xf32, "gm">) -> ()
// CHECK-NEXT: return
func.func @pool2d(%x: memref<1x3x9x9xf16, "gm">, %y: memref<1x3x5x5xf16, "gm">,
                  %a: memref<2x4x7x8xf32, "gm">, %b: memref<2x4x6x4xf32, "gm">) {
  "ascend.pool2d"(%x, %y) {kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 1 : i64} : (memref<1x3x9x9xf16, "gm">, memref<1x3x5x5xf16, "gm">) -> ()
  "ascend.pool2d"(%a, %b) {kind = "avg", kernel = array<i64: 2, 3>, strides = array<i64: 1, 2>, dilations = array<i64: 2, 1>, pads = array<i64: 0, 1, 1, 0>, count_include_pad = 0 : i64} : (memref<2x4x7x8xf32, "gm">, memref<2x4x6x4xf32, "gm">) -> ()
  return
}

// CHECK-LABEL: func.func @pool2d_5hd(
// CHECK:      "ascend.pool2d"(%arg0, %arg1) {count_include_pad = 1 : i64, dilations = array<i64: 1, 1>, kernel = array<i64: 3, 3>, kind = "max", layout = "nc1hwc0", pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (memref<1x4x9x9x16xf16, "gm">, memref<1x4x5x5x16xf16, "gm">) -> ()
func.func @pool2d_5hd(%x: memref<1x4x9x9x16xf16, "gm">, %y: memref<1x4x5x5x16xf16, "gm">) {
  "ascend.pool2d"(%x, %y) {kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = 1 : i64, layout = "nc1hwc0"} : (memref<1x4x9x9x16xf16, "gm">, memref<1x4x5x5x16xf16, "gm">) -> ()
  return
}
