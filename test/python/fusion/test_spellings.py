"""Every standard spelling of one computation reaches the same kernels and
cycles (npu-canonicalize): GELU in its erf and tanh forms and operand
orders, the attention scale on the scores, on Q or split over Q and K, K^T
by one or two transposes, pre- or post-norm layers. Each spelling is an
ONNX model (`npu.frontend.spellings`, onnx.helper) checked against
onnxruntime, and its cycles against the reference spelling's (within 3%)."""

from __future__ import annotations

import functools

import numpy as np
import onnxruntime
import pytest

import npu
from npu.frontend import spellings as sp

# How far a spelling's cycles may be from its reference spelling's.
SPREAD = 0.03


def run(model, shape, pipeline: str = "npu-lower") -> tuple[int, list[str]]:
    """Cycles and the per-op rows (ONNX node names) of `model`, after
    checking its output against onnxruntime."""
    kernel = npu.compile(model, where="spelling.onnx", pipeline=pipeline)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    (y,), report = kernel(x)
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    # Matmuls with f16 operands and f32 accumulation: ~1e-3 relative each.
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=1e-2 * float(np.abs(want).max()))
    return report["cycles"], [row["op"].split(" ")[0] for row in report["per_op"]]


@functools.cache
def ffn(gelu: str, pipeline: str = "npu-lower") -> tuple[int, list[str]]:
    return run(sp.ffn_block(64, 128, 512, gelu), (64, 128), pipeline)


@functools.cache
def attention(scale: str, k_t: str, pipeline: str = "npu-lower") -> tuple[int, list[str]]:
    return run(sp.attention_block(64, 128, 2, scale, k_t), (1, 64, 128), pipeline)


@functools.cache
def layer(spelling: sp.Spelling) -> tuple[int, list[str]]:
    return run(sp.layer(32, 64, 2, 128, spelling), (1, 32, 64))


def within(cycles: int, reference: int) -> bool:
    return abs(cycles - reference) <= SPREAD * reference


@pytest.mark.parametrize("gelu", sp.ERF_GELUS + sp.TANH_GELUS)
def test_gelu_spellings_reach_the_recipe(gelu):
    reference = "canonical" if gelu in sp.ERF_GELUS else "tanh_op"
    cycles, ops = ffn(gelu)
    # The whole GELU runs in ffn_in's drains (the recipe in its epilogue):
    # no op of the chain is left as a kernel of its own.
    assert ops == ["ffn_in", "ffn_out"], ops
    assert within(cycles, ffn(reference)[0]), (cycles, ffn(reference)[0])


@pytest.mark.parametrize("gelu", ["tanh", "torch"])
def test_gelu_on_a_unit_dim_view_reaches_the_recipe(gelu):
    """GPT-2's MLP: the Gemm's result reshaped to [1, S, 4H] for its GELU
    and back: the view keeps the Nz result (no defractalize / fractalize
    pair), so the GELU still runs in ffn_in's drains."""
    cycles, ops = run(sp.ffn_block(64, 128, 512, gelu, gemm=True, unit_dims=True), (64, 128))
    assert ops == ["ffn_in", "ffn_out"], ops
    assert within(cycles, ffn("tanh_op" if gelu == "tanh" else "canonical")[0])


def test_gemm_with_transposed_weights_runs_as_matmul():
    """nn.Linear as torch.onnx writes it on 2-D rows: Gemm(x, W [out, in],
    transB=1); the constant weight is transposed on the host."""
    cycles, ops = run(sp.ffn_block(64, 128, 512, "torch", gemm=True), (64, 128))
    assert ops == ["ffn_in", "ffn_out"] and within(cycles, ffn("canonical")[0])


def test_gelu_spellings_differed_without_canonicalisation():
    """What the pass is for: the torch.onnx spelling missed the recipe."""
    off = "npu-lower{canonicalize=false}"
    assert not within(ffn("torch", off)[0], ffn("canonical", off)[0])
    assert ffn("canonical", off)[0] == ffn("canonical")[0]


@pytest.mark.parametrize("scale", sp.SCALES)
@pytest.mark.parametrize("k_t", sp.K_TRANSPOSES)
def test_attention_scale_spellings_fuse(scale, k_t):
    cycles, ops = attention(scale, k_t)
    # One attention kernel (reported as the scores matmul): no softmax, no
    # scaling and no transpose of K of its own.
    assert "scores" in ops and not {"softmax", "scale", "q_scale", "k_scale", "k_t"} & set(ops)
    assert within(cycles, attention("scores", "one")[0]), (cycles, attention("scores", "one")[0])


def test_sdpa_scale_missed_the_fused_attention_without_canonicalisation():
    off = "npu-lower{canonicalize=false}"
    assert not within(attention("qk", "one", off)[0], attention("scores", "one", off)[0])


@pytest.mark.parametrize("spelling", [
    sp.Spelling(norm="pre"),
    sp.Spelling(gelu="torch", scale="qk", k_t="two"),
    sp.Spelling(gelu="hf", scale="div", norm="pre"),
    sp.Spelling(ln="ops"),
    sp.Spelling(gelu="torch", scale="q", norm="pre", ln="ops"),
], ids=["pre-norm", "torch-gelu-sdpa", "hf-gelu-div-pre-norm", "layernorm-ops",
        "torch-gelu-q-pre-norm-layernorm-ops"])
def test_layer_spellings(spelling):
    """A whole small layer: post-norm (BERT) and pre-norm (GPT-2), with the
    layernorms as the op or spelled out, fuse the same kernels (attention,
    GELU in ffn_in's epilogue, each layernorm one row kernel, reported as
    its first op)."""
    cycles, ops = layer(spelling)
    reference, ref_ops = layer(sp.Spelling())
    assert not {"softmax", "gelu", "scale", "q_scale", "k_scale"} & set(ops), ops
    assert {"scores", "ffn_in", "ffn_out"} <= set(ops) & set(ref_ops)
    norms = {"ln1", "ln2"} if spelling.ln == "op" else {"ln1_mean", "ln2_mean"}
    assert norms <= set(ops), ops
    assert within(cycles, reference), (cycles, reference)


def test_spelling_fields_are_checked():
    with pytest.raises(ValueError, match="gelu must be one of"):
        sp.Spelling(gelu="sigmoid")
