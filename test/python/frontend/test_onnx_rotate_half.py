"""The rotary embedding's rotate_half (`Concat(-x[..., D/2:], x[..., :D/2])`,
LLaMA/Qwen2/Mistral/Gemma/Phi-3) as a matmul by a signed permutation folded
into the projection's weight and bias when x is a projection split into
heads (`onnx_rotate_half`), against onnxruntime; left as exported
otherwise."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import helper

import npu
from npu.frontend.onnx_fold import inferred_types
from npu.frontend.onnx_rotate_half import rotate_halves_as_matmuls
from onnx_models import model

S, HIDDEN, HEADS, D = 16, 64, 4, 16


def _rotary(projected: bool, bias: bool = True, normed: bool = False, part: int = D, fused: bool = False):
    """q * cos + rotate_half(q) * sin of q's first `part` columns (Phi,
    StableLM: a part of each head); `fused`: q the first third of a QKV
    projection's columns (Phi-3)."""
    rng = np.random.default_rng(7)
    angles = np.arange(S)[:, None] * (1.0 / 100 ** (np.arange(part // 2) / (part // 2)))[None, :]
    angles = np.concatenate([angles, angles], axis=-1)
    inits = [("cos", np.cos(angles).astype(np.float32)), ("sin", np.sin(angles).astype(np.float32)),
             ("half", np.array([part // 2], np.int64)), ("end", np.array([2**62], np.int64)),
             ("part", np.array([part], np.int64)),
             ("zero", np.array([0], np.int64)), ("last", np.array([-1], np.int64))]
    nodes = []
    if projected:
        cols = HEADS * D * (3 if fused else 1)
        inits += [("w", (rng.standard_normal((HIDDEN, cols)) / 8).astype(np.float32)),
                  ("heads", np.array([1, S, HEADS, D], np.int64)), ("q_end", np.array([HEADS * D], np.int64))]
        nodes.append(helper.make_node("MatMul", ["x", "w"], ["p0"], name="q_proj"))
        p = "p0"
        if bias:
            inits.append(("b", (rng.standard_normal(cols) * 0.3).astype(np.float32)))
            nodes.append(helper.make_node("Add", ["b", "p0"], ["p1"], name="q_bias"))
            p = "p1"
        if fused:
            nodes.append(helper.make_node("Slice", [p, "zero", "q_end", "last"], ["p2"], name="q_cols"))
            p = "p2"
        nodes.append(helper.make_node("Reshape", [p, "heads"], ["r"], name="split"))
        heads = "r"
        if normed:  # Qwen3's per-head RMSNorm: g * (r * 1 / sqrt(mean(r^2) + eps))
            inits += [("one", np.array(1.0, np.float32)), ("eps", np.array(1e-6, np.float32)),
                      ("g", rng.uniform(0.5, 1.5, D).astype(np.float32))]
            nodes += [helper.make_node("Mul", ["r", "r"], ["sq"], name="square"),
                      helper.make_node("ReduceMean", ["sq"], ["ms"], name="mean", axes=[-1]),
                      helper.make_node("Add", ["ms", "eps"], ["mse"], name="eps_add"),
                      helper.make_node("Sqrt", ["mse"], ["rms"], name="rms"),
                      helper.make_node("Div", ["one", "rms"], ["inv"], name="inv"),
                      helper.make_node("Mul", ["r", "inv"], ["rn"], name="normed"),
                      helper.make_node("Mul", ["g", "rn"], ["rg"], name="gain")]
            heads = "rg"
        nodes.append(helper.make_node("Transpose", [heads], ["q"], name="to_heads", perm=[0, 2, 1, 3]))
        inputs = [("x", [1, S, HIDDEN])]
    else:
        inputs = [("q", [1, HEADS, S, D])]
    q = "q"
    if part < D:
        nodes.append(helper.make_node("Slice", ["q", "zero", "part", "last"], ["q_part"], name="rotated_part"))
        q = "q_part"
    nodes += [helper.make_node("Slice", [q, "zero", "half", "last"], ["x1"], name="lower"),
              helper.make_node("Slice", [q, "half", "end", "last"], ["x2"], name="upper"),
              helper.make_node("Neg", ["x2"], ["nx2"], name="neg"),
              helper.make_node("Concat", ["nx2", "x1"], ["rot"], name="rotate_half", axis=-1),
              helper.make_node("Mul", [q, "cos"], ["qc"], name="by_cos"),
              helper.make_node("Mul", ["rot", "sin"], ["rs"], name="by_sin"),
              helper.make_node("Add", ["qc", "rs"], ["y"], name="rotary")]
    return model(nodes, inputs, [("y", [1, HEADS, S, part])], inits)


@pytest.mark.parametrize("projected,bias,normed,part,fused", [
    (True, True, False, D, False), (True, False, False, D, False), (True, False, True, D, False),
    (True, True, False, D // 2, False), (True, True, False, D, True), (False, False, False, D, False)],
    ids=["projection_with_bias", "projection", "head_rmsnorm", "half_head", "fused_qkv", "input"])
def test_rotary_embedding_matches_onnxruntime(projected, bias, normed, part, fused):
    m = _rotary(projected, bias, normed, part, fused)
    rewritten = type(m)()
    rewritten.CopyFrom(m)
    done = rotate_halves_as_matmuls(rewritten, inferred_types(rewritten))
    kept = [n.op_type for n in rewritten.graph.node]
    if projected:  # folded into a second projection of x (of the part's columns)
        assert done == ["rotate_half"] and kept.count("MatMul") == 2
        assert "Concat" not in kept and "Neg" not in kept
        assert kept.count("Slice") == (part < D) + fused  # the part of q, q's columns of QKV
    else:  # no projection to fold R into: left as exported
        assert done == [] and "Concat" in kept and "MatMul" not in kept
    name = m.graph.input[0].name
    shape = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(8).standard_normal(shape).astype(np.float32)
    (y,), report = npu.compile(m, cores=1)(x)
    (want,) = onnxruntime.InferenceSession(m.SerializeToString()).run(None, {name: x})
    np.testing.assert_allclose(y, want, rtol=1e-2, atol=1e-2)  # the cube's f16 operands
    assert report["hazards"] == []


def test_a_concat_that_is_not_rotate_half_is_left():
    """The upper half not negated: a plain swap of halves, not rewritten."""
    m = _rotary(False)
    for node in m.graph.node:
        if node.op_type == "Neg":
            node.op_type = "Relu"
    assert rotate_halves_as_matmuls(m, inferred_types(m)) == []
