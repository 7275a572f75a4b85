// The ops of one BERT-base encoder layer at sequence length 512 (fp16):
// the (512, 768, 768) projection and the (512, 768, 3072) feed-forward
// matmuls with their fractal conversions, the attention transpose, the
// softmax's row max and exp, the GELU's tanh and the residual add.
//
// The input of bench/tune.py (kept out of examples/: simulating it with
// numerics takes half a minute, too long for the pinned-examples test).
//   npu-tune bench/bert_layer_ops.mlir -o record.json
//   npu-run bench/bert_layer_ops.mlir --check --tuning-record record.json
func.func @bert_layer_ops(
    %x: memref<512x768xf16, "gm">, %w: memref<768x768xf16, "gm">, %w1: memref<768x3072xf16, "gm">,
    %xn: memref<48x32x16x16xf16, "gm">, %wn: memref<48x48x16x16xf16, "gm">,
    %w1n: memref<192x48x16x16xf16, "gm">,
    %pn: memref<48x32x16x16xf32, "gm">, %p: memref<512x768xf32, "gm">,
    %hn: memref<192x32x16x16xf32, "gm">,
    %q: memref<12x512x64xf16, "gm">, %qt: memref<12x64x512xf16, "gm">,
    %s: memref<6144x512xf16, "gm">, %smax: memref<6144xf16, "gm">, %e: memref<6144x512xf16, "gm">,
    %g: memref<512x3072xf16, "gm">, %gt: memref<512x3072xf16, "gm">,
    %r: memref<512x768xf16, "gm">, %y: memref<512x768xf16, "gm">) {
  "ascend.fractalize"(%x, %xn) : (memref<512x768xf16, "gm">, memref<48x32x16x16xf16, "gm">) -> ()
  "ascend.fractalize"(%w, %wn) : (memref<768x768xf16, "gm">, memref<48x48x16x16xf16, "gm">) -> ()
  "ascend.fractalize"(%w1, %w1n) : (memref<768x3072xf16, "gm">, memref<192x48x16x16xf16, "gm">) -> ()
  "ascend.matmul"(%xn, %wn, %pn) : (memref<48x32x16x16xf16, "gm">, memref<48x48x16x16xf16, "gm">, memref<48x32x16x16xf32, "gm">) -> ()
  "ascend.matmul"(%xn, %w1n, %hn) : (memref<48x32x16x16xf16, "gm">, memref<192x48x16x16xf16, "gm">, memref<192x32x16x16xf32, "gm">) -> ()
  "ascend.defractalize"(%pn, %p) : (memref<48x32x16x16xf32, "gm">, memref<512x768xf32, "gm">) -> ()
  "ascend.transpose"(%q, %qt) {permutation = array<i64: 0, 2, 1>} : (memref<12x512x64xf16, "gm">, memref<12x64x512xf16, "gm">) -> ()
  "ascend.reduce_max"(%s, %smax) : (memref<6144x512xf16, "gm">, memref<6144xf16, "gm">) -> ()
  "ascend.exp"(%s, %e) : (memref<6144x512xf16, "gm">, memref<6144x512xf16, "gm">) -> ()
  "ascend.tanh"(%g, %gt) : (memref<512x3072xf16, "gm">, memref<512x3072xf16, "gm">) -> ()
  "ascend.add"(%r, %x, %y) : (memref<512x768xf16, "gm">, memref<512x768xf16, "gm">, memref<512x768xf16, "gm">) -> ()
  return
}
