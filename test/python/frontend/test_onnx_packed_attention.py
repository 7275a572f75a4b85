"""torch's packed nn.MultiheadAttention (torchvision's ViT, nn.TransformerEncoder)
written as HF's separate Q, K, V projections (`frontend/onnx_packed_attention`):
the rewritten graph computes what the export does (onnxruntime on both), the
real exports reach the fused attention with its projection on chip and match
onnxruntime, and graphs that differ in one op, perm, axis or constant, or
read an intermediate value elsewhere, are left as they are."""

from __future__ import annotations

import os

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from npu.frontend.onnx_fold import inferred_types
from npu.frontend.onnx_packed_attention import unpack_attentions

MHA = os.path.join(os.path.dirname(__file__), "..", "..", "models", "mha")


def packed_mha(seq: int = 16, embed: int = 32, heads: int = 4, batch: int = 1,
               batch_first: bool = True, bias: bool = True, split_perm=(3, 1, 2, 0, 4),
               indices=(0, 1, 2), scale=None, weight_input: bool = False,
               extra_output: str | None = None, alpha: float = 1.0, flat: bool = False,
               dynamo_keys: bool = False) -> onnx.ModelProto:
    """Self-attention as torch.onnx exports nn.MultiheadAttention (opset 17,
    before folding: the Gathers by scalar indices), random weights; `flat`:
    the need_weights=True spelling (3-D heads, only q scaled); `dynamo_keys`:
    K^T as the dynamo exporter writes it."""
    rng = np.random.default_rng(5)
    s, b, e, h, d = seq, batch, embed, heads, embed // heads
    inits = {"w_in": (rng.standard_normal((e, 3 * e)) / np.sqrt(e)).astype(np.float32),
             "w_out": (rng.standard_normal((e, e)) / np.sqrt(e)).astype(np.float32),
             "b_out": (rng.standard_normal(e) * 0.1).astype(np.float32),
             "packed_shape": np.array([s, b, 3, e], np.int64), "zero": np.array([0], np.int64),
             "three": np.array([3], np.int64), "split_shape": np.array([s, b * h, d], np.int64),
             "heads_shape": np.array([b, h, s, d], np.int64), "rows_shape": np.array([s * b, e], np.int64),
             "out_shape": np.array([s, b, e], np.int64),
             "scale": np.array([d ** (-0.5 if flat else -0.25)], np.float32) if scale is None else scale}
    if bias:
        inits["b_in"] = (rng.standard_normal(3 * e) * 0.1).astype(np.float32)
    node = helper.make_node
    rows = "xt" if batch_first else "x"
    nodes = [node("Transpose", ["x"], ["xt"], perm=[1, 0, 2], name="to_seq_first")] if batch_first else []
    nodes += [node("MatMul", [rows, "w_in"], ["p" if bias else "pb"], name="in_proj")]
    nodes += [node("Add", ["b_in", "p"], ["pb"], name="in_bias")] if bias else []
    nodes += [node("Reshape", ["pb", "packed_shape"], ["r"], name="pack"),
              node("Unsqueeze", ["r", "zero"], ["u"], name="unsqueeze"),
              node("Transpose", ["u"], ["t"], perm=list(split_perm), name="split"),
              node("Squeeze", ["t", "three"], ["sq"], name="squeeze")]
    for name, index in zip("qkv", indices):
        inits[f"i{name}"] = np.array(index, np.int64)
        nodes += [node("Gather", ["sq", f"i{name}"], [f"{name}0"], axis=0, name=f"take_{name}"),
                  node("Reshape", [f"{name}0", "split_shape"], [f"{name}1"], name=f"{name}_split")]
        if flat:  # need_weights=True: [B*H, S, D] heads, K^T in one Transpose, q scaled
            nodes.append(node("Transpose", [f"{name}1"], [f"{name}h"], perm=[1, 2, 0] if name == "k"
                              else [1, 0, 2], name=f"{name}_swap"))
        else:
            nodes += [node("Transpose", [f"{name}1"], [f"{name}2"], perm=[1, 0, 2], name=f"{name}_swap"),
                      node("Reshape", [f"{name}2", "heads_shape"], [f"{name}h"], name=f"{name}_heads")]
    if flat:
        nodes += [node("Mul", ["qh", "scale"], ["qs"], name="q_scale"),
                  node("MatMul", ["qs", "kh"], ["scores"], name="scores")]
    else:
        if dynamo_keys:  # K^T from k's [B*H, S, D]: Transpose (0, 2, 1), Reshape [B, H, D, S]
            inits["kt_shape"] = np.array([b, h, d, s], np.int64)
            nodes = [n for n in nodes if n.name != "k_heads"]
            nodes += [node("Transpose", ["k2"], ["k3"], perm=[0, 2, 1], name="k_t"),
                      node("Reshape", ["k3", "kt_shape"], ["kt"], name="k_t_heads")]
        else:
            nodes.append(node("Transpose", ["kh"], ["kt"], perm=[0, 1, 3, 2], name="k_t"))
        nodes += [node("Mul", ["qh", "scale"], ["qs"], name="q_scale"),
                  node("Mul", ["kt", "scale"], ["ks"], name="k_scale"),
                  node("MatMul", ["qs", "ks"], ["scores"], name="scores")]
    nodes += [node("Softmax", ["scores"], ["probs"], axis=-1, name="softmax"),
              node("MatMul", ["probs", "vh"], ["ctx"], name="context"),
              node("Transpose", ["ctx"], ["ct"], perm=[1, 0, 2] if flat else [2, 0, 1, 3],
                   name="merge_heads"),
              node("Reshape", ["ct", "rows_shape"], ["cr"], name="merge"),
              node("Gemm", ["cr", "w_out", "b_out"], ["o"], transB=1, alpha=alpha, name="out_proj"),
              node("Reshape", ["o", "out_shape"], ["y" if not batch_first else "ys"], name="unmerge")]
    if batch_first:
        nodes.append(node("Transpose", ["ys"], ["y"], perm=[1, 0, 2], name="to_batch_first"))
    inits["w_out"] = np.ascontiguousarray(inits["w_out"].T)  # Gemm's transB: [out, in]
    dims = [b, s, e] if batch_first else [s, b, e]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)]
    if weight_input:
        inputs.append(helper.make_tensor_value_info("w_in", TensorProto.FLOAT, [e, 3 * e]))
        del inits["w_in"]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)]
    if extra_output:
        outputs.append(helper.make_empty_tensor_value_info(extra_output))
    graph = helper.make_graph(nodes, "mha", inputs, outputs,
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _run(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    return onnxruntime.InferenceSession(model.SerializeToString()).run(None, feeds)


def _feeds(model: onnx.ModelProto) -> dict:
    rng = np.random.default_rng(1)
    return {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim])
            .astype(np.float32) for i in model.graph.input}


@pytest.mark.parametrize("kw", [{}, {"batch_first": False}, {"bias": False}, {"batch": 2},
                                {"batch": 3, "batch_first": False}, {"indices": (2, 0, 1)},
                                {"flat": True}, {"flat": True, "batch": 2, "batch_first": False},
                                {"dynamo_keys": True}, {"dynamo_keys": True, "batch": 2}])
def test_the_rewritten_attention_computes_the_same(kw):
    model = packed_mha(**kw)
    feeds = _feeds(model)
    (want,) = _run(model, feeds)
    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(model)
    assert unpack_attentions(rewritten, inferred_types(rewritten)) == ["scores"]
    ops = [n.op_type for n in rewritten.graph.node]
    assert not {"Gather", "Squeeze", "Unsqueeze", "Gemm"} & set(ops)
    # three projections, Q.K^T, P.V and out_proj; the two scales are one
    assert ops.count("MatMul") == 6 and ops.count("Mul") == 1
    scaled = next(n for n in rewritten.graph.node if n.op_type == "Mul")
    # the scores scaled once (flat: q, as exported)
    assert ("scores" in scaled.output) != kw.get("flat", False)
    weights = {t.name: t.dims for t in rewritten.graph.initializer}
    assert sorted(list(weights[n.input[1]]) for n in rewritten.graph.node
                  if n.op_type == "MatMul" and n.input[1] in weights) == [[32, 32]] * 4
    (got,) = _run(rewritten, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kw", [
    {"split_perm": (3, 2, 1, 0, 4), "batch": 16},                    # S and B swapped (S = B)
    {"scale": np.full((1, 4, 1, 1), 0.5, np.float32)},               # a scale per head
    {"weight_input": True},                                          # the weight is no constant
    {"extra_output": "q1"},                                          # q's split read elsewhere
    {"extra_output": "sq"},                                          # the split read elsewhere
    {"alpha": 0.5},                                                  # out_proj's Gemm scaled
    {"flat": True, "split_perm": (3, 2, 1, 0, 4), "batch": 16},
    {"flat": True, "extra_output": "k1"},
    {"dynamo_keys": True, "extra_output": "k3"},
])
def test_near_misses_are_left_alone(kw):
    model = packed_mha(**kw)
    before = model.SerializeToString()
    types = inferred_types(model)
    assert types is not None
    assert unpack_attentions(model, types) == []
    assert model.SerializeToString() == before


def _fused(path: str) -> tuple:
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from helpers import compile_remarks

    return compile_remarks(path, pipeline="npu-lower{cores=1 fuse-remarks=true}")


@pytest.mark.parametrize("name", ["encoder_bf_post", "encoder_sbe_pre"])
def test_torch_encoders_reach_the_fused_attention_and_match_onnxruntime(name):
    path = os.path.join(MHA, f"{name}.onnx")
    kernel, remarks = _fused(path)
    fused = [r for r in remarks if "fused attention (" in r]
    with_projection = [r for r in remarks if "attention computes its Q/K/V projection" in r]
    assert len(fused) == 2 and len(with_projection) == 2, remarks
    x = _feeds(onnx.load(path))
    (y,), report = kernel(x["x"])
    (want,) = onnxruntime.InferenceSession(path).run(None, x)
    assert report["hazards"] == []
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=1e-2)
