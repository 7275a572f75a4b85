// matmul (via Nz) -> + bias -> relu -> reshape -> transpose; every
// intermediate a GM temporary (the graph of test/python/gm/test_gm_plan.py).
func.func @chain(%a: memref<64x32xf16, "gm">, %b: memref<32x48xf16, "gm">,
                 %bias: memref<48xf32, "gm">, %out: memref<4x48x16xf32, "gm">) {
  %an = memref.alloc() : memref<2x4x16x16xf16, "gm">
  "ascend.fractalize"(%a, %an) : (memref<64x32xf16, "gm">, memref<2x4x16x16xf16, "gm">) -> ()
  %bn = memref.alloc() : memref<3x2x16x16xf16, "gm">
  "ascend.fractalize"(%b, %bn) : (memref<32x48xf16, "gm">, memref<3x2x16x16xf16, "gm">) -> ()
  %cn = memref.alloc() : memref<3x4x16x16xf32, "gm">
  "ascend.matmul"(%an, %bn, %cn) : (memref<2x4x16x16xf16, "gm">, memref<3x2x16x16xf16, "gm">, memref<3x4x16x16xf32, "gm">) -> ()
  memref.dealloc %an : memref<2x4x16x16xf16, "gm">
  memref.dealloc %bn : memref<3x2x16x16xf16, "gm">
  %c = memref.alloc() : memref<64x48xf32, "gm">
  "ascend.defractalize"(%cn, %c) : (memref<3x4x16x16xf32, "gm">, memref<64x48xf32, "gm">) -> ()
  %s = memref.alloc() : memref<64x48xf32, "gm">
  "ascend.add"(%c, %bias, %s) : (memref<64x48xf32, "gm">, memref<48xf32, "gm">, memref<64x48xf32, "gm">) -> ()
  %sf = memref.collapse_shape %s [[0, 1]] : memref<64x48xf32, "gm"> into memref<3072xf32, "gm">
  %r = memref.alloc() : memref<3072xf32, "gm">
  "ascend.relu"(%sf, %r) : (memref<3072xf32, "gm">, memref<3072xf32, "gm">) -> ()
  %r3 = memref.expand_shape %r [[0, 1, 2]] output_shape [4, 16, 48] : memref<3072xf32, "gm"> into memref<4x16x48xf32, "gm">
  "ascend.transpose"(%r3, %out) {permutation = array<i64: 0, 2, 1>} : (memref<4x16x48xf32, "gm">, memref<4x48x16xf32, "gm">) -> ()
  return
}
