"""Parts of the real exports in test/models/ (made by its make_exports.py)
that use the data-movement and mask ops, cut out with onnx.utils and run
against onnxruntime.

The whole models also need the embedding Gather, int64 ids and the folding
of their shape plumbing (other parts of issue 26); these cuts start after
those and keep the nodes as the exporter wrote them:
* GPT-2 (TorchScript, sdpa), block 0 attention: Split of the fused qkv,
  Where of the causal mask (a runtime bool here), Softmax, IsNaN + Where
  (sdpa's NaN guard), the matmuls.
* ViT (TorchScript): the Concat of the class token with the patch embeddings,
  then the position embeddings.
"""

from __future__ import annotations

import os

import numpy as np
import onnx
import onnx.shape_inference
import onnx.utils
import onnxruntime

import npu

MODELS = os.path.join(os.path.dirname(__file__), "..", "..", "models")


def cut(tmp_path, name: str, inputs: list[str], outputs: list[str],
        shapes: dict[str, list[int]]) -> onnx.ModelProto:
    """The subgraph between `inputs` and `outputs`; inputs whose shape the
    exporter left unknown get `shapes` (outputs: `shapes` too, by name)."""
    out = str(tmp_path / f"{name}_part.onnx")
    onnx.utils.extract_model(os.path.join(MODELS, f"{name}.onnx"), out, inputs, outputs)
    m = onnx.load(out)
    m.graph.name = f"{name}_part"
    for value in list(m.graph.input) + list(m.graph.output):
        if value.name in shapes:
            if not value.type.tensor_type.shape.dim:
                for _ in shapes[value.name]:
                    value.type.tensor_type.shape.dim.add()
            for d, size in zip(value.type.tensor_type.shape.dim, shapes[value.name]):
                d.dim_value = size
    del m.graph.value_info[:]  # the exporter's symbolic dims: inferred again from the fixed inputs
    return onnx.shape_inference.infer_shapes(m)


def against_onnxruntime(m: onnx.ModelProto, feeds: dict):
    kernel = npu.compile(m)
    ours, report = kernel(*[feeds[n] for n in kernel.input_names])
    session = onnxruntime.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return ours, session.run(kernel.output_names, feeds), report


def test_gpt2_attention_block(tmp_path):
    mask_name = "/inner/Expand_output_0"
    m = cut(tmp_path, "gpt2_ts_sdpa", ["/inner/Add_output_0", mask_name], ["/inner/h.0/Add_output_0"],
            {mask_name: [1, 1, 16, 16]})
    types = {n.op_type for n in m.graph.node}
    assert {"Split", "Where", "IsNaN"} <= types
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 16, 32)).astype(np.float32)
    mask = np.tril(np.ones((16, 16), np.bool_)).reshape(1, 1, 16, 16)
    mask[..., 5, :2] = False  # a padded position too
    ours, ref, report = against_onnxruntime(m, {"/inner/Add_output_0": x, mask_name: mask})
    # The matmuls run in f16 on the cube (test_onnx_ops.py's CUBE tolerance).
    np.testing.assert_allclose(ours[0], ref[0], rtol=2e-2, atol=2e-2)
    split = [r for r in report["per_op"] if r["op"].endswith("(Split)")]
    assert split and split[0]["instructions"] <= 6  # three outputs, one copy in and out each


def test_vit_class_token_concat(tmp_path):
    cls = "/inner/embeddings/Expand_output_0"
    patches = "/inner/embeddings/patch_embeddings/Transpose_output_0"
    m = cut(tmp_path, "vit_ts_eager", [cls, patches], ["/inner/embeddings/Add_output_0"],
            {cls: [1, 1, 32], patches: [1, 16, 32], "/inner/embeddings/Add_output_0": [1, 17, 32]})
    assert "Concat" in {n.op_type for n in m.graph.node}
    rng = np.random.default_rng(1)
    feeds = {cls: rng.standard_normal((1, 1, 32)).astype(np.float32),
             patches: rng.standard_normal((1, 16, 32)).astype(np.float32)}
    ours, ref, _ = against_onnxruntime(m, feeds)
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-6, atol=1e-6)
