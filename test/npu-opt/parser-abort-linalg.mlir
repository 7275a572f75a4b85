// linalg.generic's custom parser casts every iterator type to a string and
// aborted the process (an LLVM assertion) on any other attribute: npu-run
// fuzz case run-2671 swapped "parallel" with a 30. A located error instead;
// string iterator types, however spaced, still parse.
// RUN: not npu-opt %s --split-input-file 2>&1 | FileCheck %s
// CHECK-NOT: Assertion

#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @not_a_string(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  // CHECK: parser-abort-linalg.mlir:[[@LINE+1]]:84: error: linalg.generic's iterator_types must be strings ("parallel", "reduction", "window")
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", 30]} ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @an_iterator_type_attribute(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  // CHECK: parser-abort-linalg.mlir:[[@LINE+1]]:72: error: linalg.generic's iterator_types must be strings
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = [#linalg.iterator_type<parallel>, "parallel"]} ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----
#map = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @strings
// CHECK: iterator_types = ["parallel", "parallel"]
func.func @strings(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#map, #map], iterator_types = [ "parallel" ,"parallel" ]} ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
