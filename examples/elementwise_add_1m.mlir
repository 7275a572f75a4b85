// fp16 add of two 1,048,576-element tensors.
// npu-run examples/elementwise_add_1m.mlir --check
func.func @add_1m(%a: memref<1048576xf16, "gm">, %b: memref<1048576xf16, "gm">,
                  %c: memref<1048576xf16, "gm">) {
  "ascend.add"(%a, %b, %c) : (memref<1048576xf16, "gm">, memref<1048576xf16, "gm">, memref<1048576xf16, "gm">) -> ()
  return
}
