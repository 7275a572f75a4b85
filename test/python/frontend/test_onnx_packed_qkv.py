"""A packed Q, K, V projection taken apart by a transpose (torchvision Swin's
window attention: x @ W [C, 3C] + b, Reshape [B, S, 3, H, D], Transpose
(2, 0, 3, 1, 4), part i by a Gather, which folding makes a Slice and a
Reshape) becomes three projections by W's column thirds
(`frontend/onnx_packed_qkv`), against onnxruntime; shapes it does not
mean are left as exported."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import npu
from npu.frontend.onnx_fold import fold_constants, inferred_types
from npu.frontend.onnx_packed_qkv import split_packed_projections

B, S, H, D = 4, 49, 2, 32
C = H * D
RNG = np.random.default_rng(5)


def packed_attention(whole_reader: bool = False, weight_input: bool = False) -> onnx.ModelProto:
    """x [B, S, C] -> attention over H heads from one packed projection."""
    w = (RNG.standard_normal((C, 3 * C)) * C ** -0.5).astype(np.float32)
    b = (RNG.standard_normal(3 * C) * 0.1).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"),
             numpy_helper.from_array(np.array([B, S, 3, H, D], np.int64), "split"),
             numpy_helper.from_array(np.array(D ** -0.5, np.float32), "scale"),
             numpy_helper.from_array(np.array([B, S, C], np.int64), "merged")]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["p"], name="/attn/MatMul"),
             helper.make_node("Add", ["b", "p"], ["pb"], name="/attn/Add"),
             helper.make_node("Reshape", ["pb", "split"], ["r"], name="/attn/Reshape"),
             helper.make_node("Transpose", ["r"], ["t"], name="/attn/Transpose", perm=[2, 0, 3, 1, 4])]
    for i, part in enumerate("qkv"):
        inits.append(numpy_helper.from_array(np.array(i, np.int64), f"i{i}"))
        nodes.append(helper.make_node("Gather", ["t", f"i{i}"], [part], name=f"/attn/Gather_{i}", axis=0))
    nodes += [helper.make_node("Mul", ["q", "scale"], ["qs"], name="/attn/Mul"),
              helper.make_node("Transpose", ["k"], ["kt"], name="/attn/Transpose_1", perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["qs", "kt"], ["s"], name="/attn/MatMul_1"),
              helper.make_node("Softmax", ["s"], ["a"], name="/attn/Softmax", axis=-1),
              helper.make_node("MatMul", ["a", "v"], ["o"], name="/attn/MatMul_2"),
              helper.make_node("Transpose", ["o"], ["ot"], name="/attn/Transpose_2", perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["ot", "merged"], ["y"], name="/attn/Reshape_1")]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, S, C])]
    if whole_reader:  # the packed tensor is also a model output
        outputs.append(helper.make_tensor_value_info("t", TensorProto.FLOAT, None))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, C])]
    if weight_input:  # the projection's weight computed, not a constant
        inits = inits[1:]
        inputs.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [C, 3 * C]))
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _ops(model) -> list[str]:
    return [n.op_type for n in model.graph.node]


@pytest.mark.parametrize("fold", [False, True], ids=["gathers", "folded-slices"])
def test_the_parts_become_three_projections(fold):
    model = packed_attention()
    if fold:  # a constant Gather index folds to Slice + Reshape, as the import sees it
        fold_constants(model)
        assert "Slice" in _ops(model)
    assert len(split_packed_projections(model, inferred_types(model))) == 3
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    projections = [n for n in model.graph.node if n.op_type == "MatMul" and n.input[0] == "x"]
    assert [weights[n.input[1]].shape for n in projections] == [(C, C)] * 3
    assert "w" not in weights and "Slice" not in _ops(model) and "Gather" not in _ops(model)
    heads = [n for n in model.graph.node if n.op_type == "Transpose" and n.output[0] in "qkv"]
    assert [list(n.attribute[0].ints) for n in heads] == [[0, 2, 1, 3]] * 3


def test_the_split_model_matches_onnxruntime_and_fuses():
    model = packed_attention()
    x = RNG.standard_normal((B, S, C)).astype(np.float32)
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    (y,), report = npu.compile(model, cores=1)(x)
    ops = [row["op"] for row in report["per_op"]]
    assert "/attn/Transpose (Transpose)" not in ops and not [o for o in ops if "(Softmax)" in o], ops
    assert sum(o.endswith("projected/mm (MatMul)") for o in ops) == 1, ops  # one horizontal matmul
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("case", ["weight-not-constant", "packed-tensor-read-whole"])
def test_what_it_does_not_mean_is_left_alone(case):
    model = packed_attention(weight_input=case == "weight-not-constant",
                             whole_reader=case == "packed-tensor-read-whole")
    assert inferred_types(model) is not None
    before = _ops(model)
    assert split_packed_projections(model, inferred_types(model)) == []
    assert _ops(model) == before
