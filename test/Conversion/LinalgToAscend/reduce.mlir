// RUN: npu-opt %s --split-input-file --npu-linalg-to-ascend | FileCheck %s

// Softmax-style row statistics: a max over the last axis (init -inf is the
// neutral element, so it is not read) kept as [4, 1], which the subtraction
// broadcasts.
// CHECK-LABEL: func.func @row_max_sub
// CHECK: "ascend.reduce_max"(%arg0, %[[M:.*]]) : (memref<4x24xf32, "gm">, memref<4x1xf32, "gm">)
// CHECK: "ascend.sub"(%arg0, %[[M]], %arg1)
func.func @row_max_sub(%x: tensor<4x24xf32>) -> tensor<4x24xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e1 = tensor.empty() : tensor<4x1xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<4x1xf32>) -> tensor<4x1xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<4x24xf32>) outs(%init : tensor<4x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<4x1xf32>
  %e = tensor.empty() : tensor<4x24xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %m : tensor<4x24xf32>, tensor<4x1xf32>) outs(%e : tensor<4x24xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<4x24xf32>
  return %s : tensor<4x24xf32>
}

// -----

// A sum of squares over axis 0 (ReduceSum axes=[0]): the body's x*x is
// computed first, then reduced along axis 0 (kept as 1; the [1, 10]
// result is the output argument seen through a view).
// CHECK-LABEL: func.func @sum_squares_axis0
// CHECK: "ascend.mul"(%arg0, %arg0, %[[SQ:.*]]) :
// CHECK: %[[OUT:.*]] = memref.expand_shape %arg1 {{\[\[}}0, 1]] output_shape [1, 10]
// CHECK: "ascend.reduce_sum"(%[[SQ]], %[[OUT]]) {axis = 0 : i64} : (memref<6x10xf32, "gm">, memref<1x10xf32, "gm">)
func.func @sum_squares_axis0(%x: tensor<6x10xf32>) -> tensor<10xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<10xf32>
  %init = linalg.fill ins(%z : f32) outs(%e : tensor<10xf32>) -> tensor<10xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<6x10xf32>) outs(%init : tensor<10xf32>) {
  ^bb0(%a: f32, %o: f32):
    %sq = arith.mulf %a, %a : f32
    %s = arith.addf %sq, %o : f32
    linalg.yield %s : f32
  } -> tensor<10xf32>
  return %r : tensor<10xf32>
}
