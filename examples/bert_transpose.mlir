// BERT attention transpose: (12, 512, 64) -> (12, 64, 512) fp16, i.e.
// dst[i, j, k] = src[i, k, j].
// npu-run examples/bert_transpose.mlir --check
func.func @bert_transpose(%src: memref<12x512x64xf16, "gm">, %dst: memref<12x64x512xf16, "gm">) {
  "ascend.transpose"(%src, %dst) {permutation = array<i64: 0, 2, 1>} : (memref<12x512x64xf16, "gm">, memref<12x64x512xf16, "gm">) -> ()
  return
}
