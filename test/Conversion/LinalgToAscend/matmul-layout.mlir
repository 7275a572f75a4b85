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
