// RUN: npu-opt %s --split-input-file --npu-linalg-to-ascend | FileCheck %s

// linalg.transpose then a reshape: the reshape is a view, and the
// temporary the transpose wrote becomes the output argument itself (seen
// through views): no alloc, no copy.
// CHECK-LABEL: func.func @transpose_reshape
// CHECK-NOT: memref.alloc
// CHECK: "ascend.transpose"(%arg0, %{{.*}}) {permutation = array<i64: 2, 0, 1>} : (memref<2x3x4xf32, "gm">, memref<4x2x3xf32, "gm">)
// CHECK-NOT: "ascend.
// CHECK: return
func.func @transpose_reshape(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %e = tensor.empty() : tensor<4x2x3xf32>
  %t = linalg.transpose ins(%x : tensor<2x3x4xf32>) outs(%e : tensor<4x2x3xf32>) permutation = [2, 0, 1]
  %r = tensor.collapse_shape %t [[0], [1, 2]] : tensor<4x2x3xf32> into tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// -----

// linalg.broadcast: the input viewed with size-1 axes, one ascend.broadcast.
// CHECK-LABEL: func.func @broadcast_rows
// CHECK: %[[V:.*]] = memref.expand_shape %arg0 {{\[\[}}0, 1]] output_shape [1, 24]
// CHECK: "ascend.broadcast"(%[[V]], %arg1) : (memref<1x24xf32, "gm">, memref<5x24xf32, "gm">)
func.func @broadcast_rows(%x: tensor<24xf32>) -> tensor<5x24xf32> {
  %e = tensor.empty() : tensor<5x24xf32>
  %b = linalg.broadcast ins(%x : tensor<24xf32>) outs(%e : tensor<5x24xf32>) dimensions = [0]
  return %b : tensor<5x24xf32>
}

// -----

// Ops on constants only are evaluated on the host: the exp of a constant
// becomes a constant argument added to the input; no ascend.exp.
// CHECK-LABEL: func.func @folded
// CHECK-SAME: %arg2: memref<1x8xf32, "gm"> {npu.constant = dense<{{\[\[}}1.000000e+00, 1.64872122, 2.71828198
// CHECK-NOT: "ascend.exp"
// CHECK: "ascend.add"(%arg0, %arg2, %arg1)
func.func @folded(%x: tensor<3x8xf32>) -> tensor<3x8xf32> {
  %c = arith.constant dense<[0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]> : tensor<8xf32>
  %e8 = tensor.empty() : tensor<8xf32>
  %x8 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%c : tensor<8xf32>) outs(%e8 : tensor<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %y = math.exp %a : f32
    linalg.yield %y : f32
  } -> tensor<8xf32>
  %e = tensor.empty() : tensor<3x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %x8 : tensor<3x8xf32>, tensor<8xf32>) outs(%e : tensor<3x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<3x8xf32>
  return %r : tensor<3x8xf32>
}
