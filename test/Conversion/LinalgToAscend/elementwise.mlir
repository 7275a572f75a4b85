// RUN: npu-opt %s --split-input-file --npu-linalg-to-ascend | FileCheck %s

// A bias add broadcast along rows reads the 1-D bias through a [1, N] view
// (ascend ops broadcast numpy-style); max with a constant 0 is one maxs that
// writes the output argument directly.
// CHECK-LABEL: func.func @bias_relu
// CHECK-SAME: %arg0: memref<4x8xf32, "gm"> {npu.input = "arg0"}
// CHECK-SAME: %arg2: memref<4x8xf32, "gm"> {npu.output = "result0"}
// CHECK: %[[B:.*]] = memref.expand_shape %arg1 {{\[\[}}0, 1]] output_shape [1, 8]
// CHECK: %[[S:.*]] = memref.alloc() : memref<4x8xf32, "gm">
// CHECK: "ascend.add"(%arg0, %[[B]], %[[S]])
// CHECK: "ascend.maxs"(%[[S]], %arg2) {scalar = 0.000000e+00 : f64}
// CHECK-NEXT: return
func.func @bias_relu(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %c0 = arith.constant 0.0 : f32
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %s = arith.addf %a, %bb : f32
    %m = arith.maximumf %s, %c0 : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Scalars fold into the scalar forms: c - x is muls(-1) then adds(c),
// x / 4 is an exact muls(0.25), and the relu-style select(cmpf(x, c), x, c)
// is mins; exp and tanh are unary ops.
// CHECK-LABEL: func.func @scalars
// CHECK: "ascend.muls"(%arg0, %{{.*}}) {scalar = -1.000000e+00 : f64}
// CHECK: "ascend.adds"({{.*}}) {scalar = 3.000000e+00 : f64}
// CHECK: "ascend.muls"({{.*}}) {scalar = 2.500000e-01 : f64}
// CHECK: "ascend.exp"
// CHECK: "ascend.tanh"
// CHECK: "ascend.mins"({{.*}}, %arg1) {scalar = 6.000000e+00 : f64}
func.func @scalars(%x: tensor<16xf32>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %c3 = arith.constant 3.0 : f32
  %c4 = arith.constant 4.0 : f32
  %c6 = arith.constant 6.0 : f32
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.subf %c3, %a : f32
    %d = arith.divf %s, %c4 : f32
    %x1 = math.exp %d : f32
    %t = math.tanh %x1 : f32
    %p = arith.cmpf olt, %t, %c6 : f32
    %m = arith.select %p, %t, %c6 : f32
    linalg.yield %m : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}

// -----

// Division by a constant is a multiplication by its reciprocal (a vector
// division would be a transcendental op broadcasting a one-element operand).
// CHECK-LABEL: func.func @div_by_three
// CHECK: "ascend.muls"(%arg0, %arg1) {scalar = 0.33333333333333331 : f64}
func.func @div_by_three(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %e = tensor.empty() : tensor<2x5xf32>
  %c = arith.constant 3.0 : f32
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<2x5xf32>) outs(%e : tensor<2x5xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %c : f32
    linalg.yield %d : f32
  } -> tensor<2x5xf32>
  return %r : tensor<2x5xf32>
}

// -----

// Integer powers are products (x^3 = x*x*x by squaring), a transposing
// input map is an ascend.transpose into loop order first.
// CHECK-LABEL: func.func @cube_of_transpose
// CHECK: "ascend.transpose"(%arg0, %[[T:.*]]) {permutation = array<i64: 1, 0>}
// CHECK: "ascend.mul"(%[[T]], %[[T]], %[[SQ:.*]]) :
// CHECK: "ascend.mul"(%[[T]], %[[SQ]], %arg1)
func.func @cube_of_transpose(%x: tensor<3x5xf32>) -> tensor<5x3xf32> {
  %e = tensor.empty() : tensor<5x3xf32>
  %c = arith.constant 3.0 : f32
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<3x5xf32>) outs(%e : tensor<5x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = math.powf %a, %c : f32
    linalg.yield %p : f32
  } -> tensor<5x3xf32>
  return %r : tensor<5x3xf32>
}
