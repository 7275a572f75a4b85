// RUN: npu-opt %s --split-input-file --npu-linalg-to-ascend | FileCheck %s

// ONNX Gather as torch-mlir lowers it: three generics wrap negative ids
// (select(ids < 0, ids + 30, ids)), then a generic reads the captured table
// with tensor.extract. The wrapping is skipped (ascend.gather wraps itself)
// and the gather writes the output argument directly.
// CHECK-LABEL: func.func @embedding
// CHECK-NOT: ascend.cmp
// CHECK-NOT: ascend.select
// CHECK-NOT: ascend.add
// CHECK: "ascend.gather"(%arg0, %{{.*}}, %{{.*}}) {axis = 0 : i64} : (memref<30x16xf32, "gm">, memref<10xi32, "gm">, memref<10x16xf32, "gm">) -> ()
// CHECK-NOT: "ascend.
// CHECK: return
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
func.func @embedding(%arg0: tensor<30x16xf32>, %arg1: tensor<2x5xi32>) -> tensor<2x5x16xf32> {
  %c0_i64 = arith.constant 0 : i64
  %c30_i32 = arith.constant 30 : i32
  %0 = tensor.empty() : tensor<2x5xi1>
  %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg1 : tensor<2x5xi32>) outs(%0 : tensor<2x5xi1>) {
  ^bb0(%in: i32, %out: i1):
    %7 = arith.extsi %in : i32 to i64
    %8 = arith.cmpi slt, %7, %c0_i64 : i64
    linalg.yield %8 : i1
  } -> tensor<2x5xi1>
  %2 = tensor.empty() : tensor<2x5xi32>
  %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg1 : tensor<2x5xi32>) outs(%2 : tensor<2x5xi32>) {
  ^bb0(%in: i32, %out: i32):
    %7 = arith.addi %in, %c30_i32 : i32
    linalg.yield %7 : i32
  } -> tensor<2x5xi32>
  %4 = linalg.generic {indexing_maps = [#map, #map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%1, %3, %arg1 : tensor<2x5xi1>, tensor<2x5xi32>, tensor<2x5xi32>) outs(%2 : tensor<2x5xi32>) {
  ^bb0(%in: i1, %in_0: i32, %in_1: i32, %out: i32):
    %7 = arith.select %in, %in_0, %in_1 : i32
    linalg.yield %7 : i32
  } -> tensor<2x5xi32>
  %collapsed = tensor.collapse_shape %4 [[0, 1]] : tensor<2x5xi32> into tensor<10xi32>
  %5 = tensor.empty() : tensor<10x16xf32>
  %6 = linalg.generic {indexing_maps = [#map1, #map], iterator_types = ["parallel", "parallel"]} ins(%collapsed : tensor<10xi32>) outs(%5 : tensor<10x16xf32>) {
  ^bb0(%in: i32, %out: f32):
    %7 = arith.index_cast %in : i32 to index
    %8 = linalg.index 1 : index
    %extracted = tensor.extract %arg0[%7, %8] : tensor<30x16xf32>
    linalg.yield %extracted : f32
  } -> tensor<10x16xf32>
  %expanded = tensor.expand_shape %6 [[0, 1], [2]] output_shape [2, 5, 16] : tensor<10x16xf32> into tensor<2x5x16xf32>
  return %expanded : tensor<2x5x16xf32>
}

// -----

// Gather along axis 1 without the wrapping (ids used as they are).
// CHECK-LABEL: func.func @axis_one
// CHECK: "ascend.gather"(%arg0, %arg1, %{{.*}}) {axis = 1 : i64} : (memref<30x16xf32, "gm">, memref<3xi32, "gm">, memref<30x3xf32, "gm">) -> ()
#map = affine_map<(d0, d1) -> (d0, d1)>
#map2 = affine_map<(d0, d1) -> (d1)>
func.func @axis_one(%arg0: tensor<30x16xf32>, %arg1: tensor<3xi32>) -> tensor<30x3xf32> {
  %5 = tensor.empty() : tensor<30x3xf32>
  %6 = linalg.generic {indexing_maps = [#map2, #map], iterator_types = ["parallel", "parallel"]} ins(%arg1 : tensor<3xi32>) outs(%5 : tensor<30x3xf32>) {
  ^bb0(%in: i32, %out: f32):
    %7 = arith.index_cast %in : i32 to index
    %8 = linalg.index 0 : index
    %extracted = tensor.extract %arg0[%8, %7] : tensor<30x16xf32>
    linalg.yield %extracted : f32
  } -> tensor<30x3xf32>
  return %6 : tensor<30x3xf32>
}
