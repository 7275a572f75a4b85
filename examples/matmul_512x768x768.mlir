// C = A x B for the BERT shape of thesis 6.4.1: A 512x768, B 768x768 fp16
// in ND, C 512x768 fp32 in ND. The inputs are fractalized to Nz (GM
// temporaries %an, %bn passed in, destination-passing style), multiplied by
// ascend.matmul (output-stationary, tiles (256, 128, 256) chosen by the cost
// model), and the Nz result %cn is defractalized into C.
//
//   npu-run examples/matmul_512x768x768.mlir --check
//   npu-opt examples/matmul_512x768x768.mlir --npu-lower-fractalize --npu-lower-matmul
func.func @matmul_512x768x768(%a: memref<512x768xf16, "gm">, %b: memref<768x768xf16, "gm">,
                              %c: memref<512x768xf32, "gm">,
                              %an: memref<48x32x16x16xf16, "gm">,
                              %bn: memref<48x48x16x16xf16, "gm">,
                              %cn: memref<48x32x16x16xf32, "gm">) {
  "ascend.fractalize"(%a, %an) : (memref<512x768xf16, "gm">, memref<48x32x16x16xf16, "gm">) -> ()
  "ascend.fractalize"(%b, %bn) : (memref<768x768xf16, "gm">, memref<48x48x16x16xf16, "gm">) -> ()
  "ascend.matmul"(%an, %bn, %cn) : (memref<48x32x16x16xf16, "gm">, memref<48x48x16x16xf16, "gm">, memref<48x32x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%cn, %c) : (memref<48x32x16x16xf32, "gm">, memref<512x768xf32, "gm">) -> ()
  return
}
