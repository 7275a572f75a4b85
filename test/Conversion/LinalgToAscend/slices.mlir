// RUN: npu-opt %s --split-input-file --npu-linalg-to-ascend | FileCheck %s

// Split (two extract_slices) writes each part straight into its output.
// CHECK-LABEL: func.func @split
// CHECK-NOT: memref.alloc
// CHECK: "ascend.slice"(%arg0, %arg1) {offsets = array<i64: 0, 0>, strides = array<i64: 1, 1>} : (memref<3x7xf32, "gm">, memref<3x3xf32, "gm">)
// CHECK: "ascend.slice"(%arg0, %arg2) {offsets = array<i64: 0, 3>, strides = array<i64: 1, 1>} : (memref<3x7xf32, "gm">, memref<3x4xf32, "gm">)
func.func @split(%x: tensor<3x7xf32>) -> (tensor<3x3xf32>, tensor<3x4xf32>) {
  %a = tensor.extract_slice %x[0, 0] [3, 3] [1, 1] : tensor<3x7xf32> to tensor<3x3xf32>
  %b = tensor.extract_slice %x[0, 3] [3, 4] [1, 1] : tensor<3x7xf32> to tensor<3x4xf32>
  return %a, %b : tensor<3x3xf32>, tensor<3x4xf32>
}

// -----

// A rank-reducing slice: the full-rank slice, then a view.
// CHECK-LABEL: func.func @rank_reducing
// CHECK: "ascend.slice"(%arg0, %{{.*}}) {offsets = array<i64: 1, 0, 2>, strides = array<i64: 1, 1, 2>} : (memref<3x4x9xf16, "gm">, memref<1x4x3xf16, "gm">)
func.func @rank_reducing(%x: tensor<3x4x9xf16>) -> tensor<4x3xf16> {
  %a = tensor.extract_slice %x[1, 0, 2] [1, 4, 3] [1, 1, 2] : tensor<3x4x9xf16> to tensor<4x3xf16>
  return %a : tensor<4x3xf16>
}

// -----

// Concat: one insert_slice per operand into the output; a constant operand is
// a host constant argument.
// CHECK-LABEL: func.func @concat
// CHECK: "ascend.insert_slice"(%arg0, %arg1) {offsets = array<i64: 0, 0>} : (memref<3x7xf32, "gm">, memref<3x9xf32, "gm">)
// CHECK: "ascend.insert_slice"(%arg2, %arg1) {offsets = array<i64: 0, 7>} : (memref<3x2xf32, "gm">, memref<3x9xf32, "gm">)
func.func @concat(%x: tensor<3x7xf32>) -> tensor<3x9xf32> {
  %c = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %r = tensor.concat dim(1) %x, %c : (tensor<3x7xf32>, tensor<3x2xf32>) -> tensor<3x9xf32>
  return %r : tensor<3x9xf32>
}

// -----

// An all-constant slice folds on the host (GPT-2's causal buffer).
// CHECK-LABEL: func.func @constant_slice
// CHECK-NOT: "ascend.slice"
func.func @constant_slice(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %c = arith.constant dense<[[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]> : tensor<3x3xf32>
  %s = tensor.extract_slice %c[1, 1] [2, 2] [1, 1] : tensor<3x3xf32> to tensor<2x2xf32>
  %e = tensor.empty() : tensor<2x2xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %s : tensor<2x2xf32>, tensor<2x2xf32>) outs(%e : tensor<2x2xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<2x2xf32>
  return %m : tensor<2x2xf32>
}

// -----

// torch-mlir's negative-step Slice: a generic reading tensor.extract at
// 8 - j (a reversal), then a slice with stride 2.
// CHECK-LABEL: func.func @reverse
// CHECK: "ascend.slice"(%arg0, %[[R:.*]]) {offsets = array<i64: 0, 8>, strides = array<i64: 1, -1>} : (memref<5x9xf32, "gm">, memref<5x9xf32, "gm">)
// CHECK: "ascend.slice"(%[[R]], %arg1) {offsets = array<i64: 0, 0>, strides = array<i64: 1, 2>} : (memref<5x9xf32, "gm">, memref<5x4xf32, "gm">)
func.func @reverse(%x: tensor<5x9xf32>) -> tensor<5x4xf32> {
  %c8 = arith.constant 8 : index
  %e = tensor.empty() : tensor<5x9xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<5x9xf32>) outs(%e : tensor<5x9xf32>) {
  ^bb0(%in: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %k = arith.subi %c8, %j : index
    %v = tensor.extract %x[%i, %k] : tensor<5x9xf32>
    linalg.yield %v : f32
  } -> tensor<5x9xf32>
  %s = tensor.extract_slice %g[0, 0] [5, 4] [1, 2] : tensor<5x9xf32> to tensor<5x4xf32>
  return %s : tensor<5x4xf32>
}

// -----

// Trilu: the mask depends on the loop indices only, so it is computed on the
// host and reaches the device as a constant i8 condition of one select.
// CHECK-LABEL: func.func @trilu
// CHECK-SAME: %arg2: memref<4x6xi8, "gm"> {npu.constant = dense<
// CHECK: "ascend.select"(%arg2, %arg0, %{{.*}}, %arg1)
func.func @trilu(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %c1 = arith.constant 1 : i64
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x6xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%in: f32, %o: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %j = linalg.index 1 : index
    %jj = arith.index_cast %j : index to i64
    %k = arith.addi %ii, %c1 : i64
    %m = arith.cmpi sle, %jj, %k : i64
    %s = arith.select %m, %in, %z : f32
    linalg.yield %s : f32
  } -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// -----

// Bools at the boundary are i8 0/1 arguments marked npu.bool; And of two is
// min in f16 (exact on 0/1) cast back.
// CHECK-LABEL: func.func @and
// CHECK-SAME: %arg0: memref<3x5xi8, "gm"> {npu.bool, npu.input = "arg0"}
// CHECK-SAME: %arg2: memref<3x5xi8, "gm"> {npu.bool, npu.output = "result0"}
// CHECK: "ascend.cast"(%arg0, %{{.*}}) {round_mode = "rint"} : (memref<3x5xi8, "gm">, memref<3x5xf16, "gm">)
// CHECK: "ascend.min"
// CHECK: "ascend.cast"(%{{.*}}, %arg2) {round_mode = "rint"} : (memref<3x5xf16, "gm">, memref<3x5xi8, "gm">)
func.func @and(%a: tensor<3x5xi1>, %b: tensor<3x5xi1>) -> tensor<3x5xi1> {
  %e = tensor.empty() : tensor<3x5xi1>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<3x5xi1>, tensor<3x5xi1>) outs(%e : tensor<3x5xi1>) {
  ^bb0(%x: i1, %y: i1, %o: i1):
    %z = arith.andi %x, %y : i1
    linalg.yield %z : i1
  } -> tensor<3x5xi1>
  return %r : tensor<3x5xi1>
}
