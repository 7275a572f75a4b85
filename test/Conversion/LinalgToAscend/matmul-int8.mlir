// RUN: npu-opt %s --split-input-file --npu-linalg-to-ascend | FileCheck %s

// An integer matmul (i8 x i8 -> i32, as torch-mlir imports a MatMulInteger
// without zero points) goes to the int8 cube: the run-time A is fractalized
// into 16 x 32 blocks, the constant B laid out on the host in 32 x 16 ones,
// and the i32 Nz result defractalized into the output.
// CHECK-LABEL: func.func @int8_linear
// CHECK-SAME:  %arg2: memref<2x2x32x16xi8, "gm"> {npu.constant = dense<"0x
// CHECK:       "ascend.fractalize"(%arg0, %[[A:.*]]) : (memref<20x64xi8, "gm">, memref<2x2x16x32xi8, "gm">)
// CHECK:       "ascend.matmul"(%[[A]], %arg2, %[[C:.*]]) : (memref<2x2x16x32xi8, "gm">, memref<2x2x32x16xi8, "gm">, memref<2x2x16x16xi32, "gm">)
// CHECK:       "ascend.defractalize"(%[[C]], %arg1) : (memref<2x2x16x16xi32, "gm">, memref<20x24xi32, "gm">)
// CHECK-NEXT:  return
func.func @int8_linear(%x: tensor<20x64xi8>) -> tensor<20x24xi32> {
  %w = arith.constant dense<3> : tensor<64x24xi8>
  %z = arith.constant 0 : i32
  %e = tensor.empty() : tensor<20x24xi32>
  %f = linalg.fill ins(%z : i32) outs(%e : tensor<20x24xi32>) -> tensor<20x24xi32>
  %r = linalg.matmul ins(%x, %w : tensor<20x64xi8>, tensor<64x24xi8>) outs(%f : tensor<20x24xi32>) -> tensor<20x24xi32>
  return %r : tensor<20x24xi32>
}

// -----

// The other import form: operands sign-extended to i32, an i64 accumulator
// truncated to i32. The extension of the run-time operand is not made (the
// matmul reads the int8 tensor), the truncation is the i32 result itself;
// the result feeds a float cast in Nz (a whole number of column blocks).
#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @int8_widened
// CHECK-NOT:   "ascend.cast"(%arg0
// CHECK:       "ascend.fractalize"(%arg0, %[[A:.*]]) : (memref<20x64xi8, "gm">, memref<2x2x16x32xi8, "gm">)
// CHECK:       "ascend.matmul"(%[[A]], %{{.*}}, %[[C:.*]]) : ({{.*}}, memref<2x2x16x16xi32, "gm">)
// CHECK:       "ascend.cast"(%[[C]], %[[F:.*]]) {round_mode = "rint"} : (memref<2x2x16x16xi32, "gm">, memref<2x2x16x16xf32, "gm">)
// CHECK:       "ascend.defractalize"(%[[F]], %arg1)
func.func @int8_widened(%x: tensor<20x64xi8>) -> tensor<20x32xf32> {
  %w = arith.constant dense<-2> : tensor<64x32xi32>
  %z = arith.constant 0 : i64
  %e32 = tensor.empty() : tensor<20x64xi32>
  %xw = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<20x64xi8>) outs(%e32 : tensor<20x64xi32>) {
  ^bb0(%in: i8, %out: i32):
    %v = arith.extsi %in : i8 to i32
    linalg.yield %v : i32
  } -> tensor<20x64xi32>
  %e = tensor.empty() : tensor<20x32xi64>
  %f = linalg.fill ins(%z : i64) outs(%e : tensor<20x32xi64>) -> tensor<20x32xi64>
  %r = linalg.matmul ins(%xw, %w : tensor<20x64xi32>, tensor<64x32xi32>) outs(%f : tensor<20x32xi64>) -> tensor<20x32xi64>
  %e2 = tensor.empty() : tensor<20x32xi32>
  %t = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<20x32xi64>) outs(%e2 : tensor<20x32xi32>) {
  ^bb0(%in: i64, %out: i32):
    %v = arith.trunci %in : i64 to i32
    linalg.yield %v : i32
  } -> tensor<20x32xi32>
  %ef = tensor.empty() : tensor<20x32xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%t : tensor<20x32xi32>) outs(%ef : tensor<20x32xf32>) {
  ^bb0(%in: i32, %out: f32):
    %v = arith.sitofp %in : i32 to f32
    linalg.yield %v : f32
  } -> tensor<20x32xf32>
  return %y : tensor<20x32xf32>
}

