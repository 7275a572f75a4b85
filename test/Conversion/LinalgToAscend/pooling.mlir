// RUN: npu-opt %s --split-input-file --npu-linalg-to-ascend | FileCheck %s

// torch-mlir's MaxPool (3x3, stride 2, pads 1): the -inf tensor.pad is not
// materialised, it becomes the op's pads.
// CHECK-LABEL: func.func @max_pad
// CHECK-NOT: memref.alloc
// CHECK: "ascend.pool2d"(%arg0, %arg1) {count_include_pad = 1 : i64, dilations = array<i64: 1, 1>, kernel = array<i64: 3, 3>, kind = "max", pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (memref<1x3x9x9xf32, "gm">, memref<1x3x5x5xf32, "gm">)
// CHECK-NEXT: return
func.func @max_pad(%x: tensor<1x3x9x9xf32>) -> tensor<1x3x5x5xf32> {
  %cst = arith.constant 0xFF800000 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x3x9x9xf32> to tensor<1x3x11x11xf32>
  %0 = tensor.empty() : tensor<1x3x5x5xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32>
  %2 = tensor.empty() : tensor<3x3xf32>
  %3 = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%padded, %2 : tensor<1x3x11x11xf32>, tensor<3x3xf32>) outs(%1 : tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32>
  return %3 : tensor<1x3x5x5xf32>
}

// -----

// ceil_mode: torch-mlir pads 2 at the bottom/right where the last window
// reaches 1; the pads are trimmed to what the windows read.
// CHECK-LABEL: func.func @max_ceil
// CHECK: "ascend.pool2d"(%arg0, %arg1) {{.*}}kind = "max", pads = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>}
func.func @max_ceil(%x: tensor<1x3x9x9xf32>) -> tensor<1x3x5x5xf32> {
  %cst = arith.constant 0xFF800000 : f32
  %padded = tensor.pad %x low[0, 0, 0, 0] high[0, 0, 2, 2] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x3x9x9xf32> to tensor<1x3x11x11xf32>
  %0 = tensor.empty() : tensor<1x3x5x5xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32>
  %2 = tensor.empty() : tensor<2x2xf32>
  %3 = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%padded, %2 : tensor<1x3x11x11xf32>, tensor<2x2xf32>) outs(%1 : tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32>
  return %3 : tensor<1x3x5x5xf32>
}

// -----

// AveragePool with count_include_pad: the sum pool and its division by the
// constant 9 are one avg pool2d.
// CHECK-LABEL: func.func @avg_include_pad
// CHECK: "ascend.pool2d"(%arg0, %arg1) {count_include_pad = 1 : i64, {{.*}}kind = "avg", pads = array<i64: 1, 1, 1, 1>
// CHECK-NEXT: return
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @avg_include_pad(%x: tensor<1x3x9x9xf32>) -> tensor<1x3x5x5xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %nine = arith.constant 9.000000e+00 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %cst : f32
  } : tensor<1x3x9x9xf32> to tensor<1x3x11x11xf32>
  %0 = tensor.empty() : tensor<1x3x5x5xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32>
  %2 = tensor.empty() : tensor<3x3xf32>
  %3 = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%padded, %2 : tensor<1x3x11x11xf32>, tensor<3x3xf32>) outs(%1 : tensor<1x3x5x5xf32>) -> tensor<1x3x5x5xf32>
  %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%3 : tensor<1x3x5x5xf32>) outs(%0 : tensor<1x3x5x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %5 = arith.divf %in, %nine : f32
    linalg.yield %5 : f32
  } -> tensor<1x3x5x5xf32>
  return %4 : tensor<1x3x5x5xf32>
}

// -----

// A division that is not a count of the pool stays an elementwise op after
// a sum pool2d.
// CHECK-LABEL: func.func @sum_then_other
// CHECK: "ascend.pool2d"(%arg0, %[[S:.*]]) {count_include_pad = 1 : i64, {{.*}}kind = "sum", pads = array<i64: 0, 0, 0, 0>
// CHECK: "ascend.muls"(%[[S]], %arg1)
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @sum_then_other(%x: tensor<1x3x9x9xf32>) -> tensor<1x3x7x7xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %seven = arith.constant 7.000000e+00 : f32
  %0 = tensor.empty() : tensor<1x3x7x7xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32>
  %2 = tensor.empty() : tensor<3x3xf32>
  %3 = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %2 : tensor<1x3x9x9xf32>, tensor<3x3xf32>) outs(%1 : tensor<1x3x7x7xf32>) -> tensor<1x3x7x7xf32>
  %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%3 : tensor<1x3x7x7xf32>) outs(%0 : tensor<1x3x7x7xf32>) {
  ^bb0(%in: f32, %out: f32):
    %5 = arith.divf %in, %seven : f32
    linalg.yield %5 : f32
  } -> tensor<1x3x7x7xf32>
  return %4 : tensor<1x3x7x7xf32>
}

// -----

// GlobalAveragePool: the window is the whole map, a row reduction over
// [N*C, H*W] and the scale.
// CHECK-LABEL: func.func @global_avg
// CHECK: "ascend.reduce_sum"(%{{.*}}, %[[T:.*]]) : (memref<3x81xf32, "gm">, memref<3x1xf32, "gm">)
// CHECK: "ascend.muls"(%[[T]], %{{.*}}) {scalar = 0.012345679104328156 : f64}
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @global_avg(%x: tensor<1x3x9x9xf32>) -> tensor<1x3x1x1xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %n = arith.constant 8.100000e+01 : f32
  %0 = tensor.empty() : tensor<1x3x1x1xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x3x1x1xf32>) -> tensor<1x3x1x1xf32>
  %2 = tensor.empty() : tensor<9x9xf32>
  %3 = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %2 : tensor<1x3x9x9xf32>, tensor<9x9xf32>) outs(%1 : tensor<1x3x1x1xf32>) -> tensor<1x3x1x1xf32>
  %4 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%3 : tensor<1x3x1x1xf32>) outs(%0 : tensor<1x3x1x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %5 = arith.divf %in, %n : f32
    linalg.yield %5 : f32
  } -> tensor<1x3x1x1xf32>
  return %4 : tensor<1x3x1x1xf32>
}

// -----

// A map under one block per plane (2x2 output, f32) is widened: the input
// copied into an identity-filled [.., 5, 5 + 4] temporary, pooled, sliced.
// CHECK-LABEL: func.func @tiny
// CHECK: "ascend.broadcast"
// CHECK: "ascend.insert_slice"(%arg0, %[[P:.*]]) {offsets = array<i64: 0, 0, 0, 0>} : (memref<1x3x5x5xf32, "gm">, memref<1x3x5x9xf32, "gm">)
// CHECK: "ascend.pool2d"(%[[P]], %[[W:.*]]) {{.*}}kind = "max"{{.*}} : (memref<1x3x5x9xf32, "gm">, memref<1x3x2x4xf32, "gm">)
// CHECK: "ascend.slice"(%[[W]], %arg1)
func.func @tiny(%x: tensor<1x3x5x5xf32>) -> tensor<1x3x2x2xf32> {
  %cst = arith.constant 0xFF800000 : f32
  %0 = tensor.empty() : tensor<1x3x2x2xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %2 = tensor.empty() : tensor<3x3xf32>
  %3 = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %2 : tensor<1x3x5x5xf32>, tensor<3x3xf32>) outs(%1 : tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  return %3 : tensor<1x3x2x2xf32>
}
