// RUN: npu-opt %s --split-input-file --npu-linalg-to-ascend | FileCheck %s

// x (f32, ND) x W (constant): x is cast to f16 and fractalized on the NPU;
// W is cast and laid out in Nz on the host (a constant argument
// [ceil(24/16), ceil(32/16), 16, 16] f16); the f32 Nz result is
// defractalized straight into the output.
// CHECK-LABEL: func.func @linear
// CHECK-SAME: %arg2: memref<2x2x16x16xf16, "gm"> {npu.constant = dense<"0x
// CHECK: "ascend.cast"(%arg0, %[[H:.*]]) {round_mode = "rint"} : (memref<20x32xf32, "gm">, memref<20x32xf16, "gm">)
// CHECK: "ascend.fractalize"(%[[H]], %[[A:.*]]) : (memref<20x32xf16, "gm">, memref<2x2x16x16xf16, "gm">)
// CHECK: "ascend.matmul"(%[[A]], %arg2, %[[C:.*]]) : ({{.*}}, memref<2x2x16x16xf32, "gm">)
// CHECK: "ascend.defractalize"(%[[C]], %arg1)
// CHECK-NEXT: return
func.func @linear(%x: tensor<20x32xf32>) -> tensor<20x24xf32> {
  %w = arith.constant dense<0.5> : tensor<32x24xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<20x24xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<20x24xf32>) -> tensor<20x24xf32>
  %r = linalg.matmul ins(%x, %w : tensor<20x32xf32>, tensor<32x24xf32>) outs(%f : tensor<20x24xf32>) -> tensor<20x24xf32>
  return %r : tensor<20x24xf32>
}

// -----

// Two consecutive matmuls keep Nz between them: the first result is cast
// f32 -> f16 in its Nz shape and fed to the second; no defractalize /
// fractalize pair in between.
// CHECK-LABEL: func.func @chain
// CHECK: "ascend.matmul"(%{{.*}}, %{{.*}}, %[[C1:.*]]) :
// CHECK-NOT: "ascend.defractalize"
// CHECK: "ascend.cast"(%[[C1]], %[[C1H:.*]]) {round_mode = "rint"} : (memref<2x1x16x16xf32, "gm">, memref<2x1x16x16xf16, "gm">)
// CHECK-NOT: "ascend.defractalize"
// CHECK: "ascend.matmul"(%[[C1H]], %{{.*}}, %[[C2:.*]]) :
// CHECK: "ascend.defractalize"(%[[C2]], %arg3)
func.func @chain(%x: tensor<16x16xf32>, %a: tensor<16x32xf32>, %b: tensor<32x16xf32>) -> tensor<16x16xf32> {
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<16x32xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %h = linalg.matmul ins(%x, %a : tensor<16x16xf32>, tensor<16x32xf32>) outs(%f1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %e2 = tensor.empty() : tensor<16x16xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %r = linalg.matmul ins(%h, %b : tensor<16x32xf32>, tensor<32x16xf32>) outs(%f2 : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}

// -----

// A matmul result that also feeds a vector op is defractalized once, where
// that consumer needs it; a transposed constant (Gemm transB) is folded on
// the host before its Nz layout.
// CHECK-LABEL: func.func @matmul_then_add
// CHECK: "ascend.matmul"(%{{.*}}, %arg3, %[[C:.*]]) :
// CHECK: "ascend.defractalize"(%[[C]], %[[D:.*]]) :
// CHECK: "ascend.add"(%[[D]], %arg1, %arg2)
func.func @matmul_then_add(%x: tensor<16x16xf32>, %y: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %w = arith.constant dense<1.0> : tensor<16x16xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x16xf32>
  %wt = linalg.transpose ins(%w : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) permutation = [1, 0]
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %m = linalg.matmul ins(%x, %wt : tensor<16x16xf32>, tensor<16x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m, %y : tensor<16x16xf32>, tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}

// -----

// Elementwise ops between two matmuls stay in Nz when the matrices are whole
// fractals (no padding): the bias (a constant) is broadcast and fractalized
// on the host, relu runs on the Nz buffer, and the second matmul only casts
// it to f16. One defractalize, at the end.
// CHECK-LABEL: func.func @ffn
// CHECK-SAME: %[[BIAS:arg[0-9]+]]: memref<4x2x16x16xf32, "gm"> {npu.constant
// CHECK: "ascend.matmul"(%{{.*}}, %{{.*}}, %[[H:.*]]) : ({{.*}}, memref<4x2x16x16xf32, "gm">)
// CHECK-NOT: "ascend.defractalize"
// CHECK: "ascend.add"(%[[H]], %[[BIAS]], %[[HB:.*]]) : (memref<4x2x16x16xf32, "gm">, memref<4x2x16x16xf32, "gm">, memref<4x2x16x16xf32, "gm">)
// CHECK: "ascend.maxs"(%[[HB]], %[[A:.*]]) {scalar = 0.000000e+00 : f64}
// CHECK: "ascend.cast"(%[[A]], %[[AH:.*]]) {round_mode = "rint"} : (memref<4x2x16x16xf32, "gm">, memref<4x2x16x16xf16, "gm">)
// CHECK: "ascend.matmul"(%[[AH]],
// CHECK: "ascend.defractalize"
// CHECK-NOT: "ascend.defractalize"
func.func @ffn(%x: tensor<32x16xf32>) -> tensor<32x16xf32> {
  %w1 = arith.constant dense<0.25> : tensor<16x64xf32>
  %w2 = arith.constant dense<0.5> : tensor<64x16xf32>
  %b = arith.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0]> : tensor<64xf32>
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<32x64xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %h = linalg.matmul ins(%x, %w1 : tensor<32x16xf32>, tensor<16x64xf32>) outs(%f1 : tensor<32x64xf32>) -> tensor<32x64xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%h, %b : tensor<32x64xf32>, tensor<64xf32>) outs(%e1 : tensor<32x64xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    %r = arith.maximumf %s, %z : f32
    linalg.yield %r : f32
  } -> tensor<32x64xf32>
  %e2 = tensor.empty() : tensor<32x16xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<32x16xf32>) -> tensor<32x16xf32>
  %y = linalg.matmul ins(%a, %w2 : tensor<32x64xf32>, tensor<64x16xf32>) outs(%f2 : tensor<32x16xf32>) -> tensor<32x16xf32>
  return %y : tensor<32x16xf32>
}
