func.func @mixed_types(%a: memref<64xf16, "gm">, %b: memref<64xf32, "gm">, %c: memref<64xf16, "gm">) {
  "ascend.add"(%a, %b, %c) : (memref<64xf16, "gm">, memref<64xf32, "gm">, memref<64xf16, "gm">) -> ()
  return
}
