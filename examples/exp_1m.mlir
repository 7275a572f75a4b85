// fp16 exp of a 1,048,576-element tensor.
// npu-run examples/exp_1m.mlir --check
func.func @exp_1m(%x: memref<1048576xf16, "gm">, %y: memref<1048576xf16, "gm">) {
  "ascend.exp"(%x, %y) : (memref<1048576xf16, "gm">, memref<1048576xf16, "gm">) -> ()
  return
}
