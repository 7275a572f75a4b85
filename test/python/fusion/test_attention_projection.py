"""The attention kernel computing its own Q, K, V projection
(npu-fuse-attention-projection + npu-lower-attention) on the simulator:
BERT's self-attention block from ONNX (three projections with or without
bias, split into heads, softmax attention, heads merged) against
onnxruntime and against the same program with the projection apart
(`fuse-attention-projection=false`), on odd shapes: seqs that are not
whole 16-row blocks, 1, 2 and 12 heads, head dims 32, 64 and 128, hidden
sizes other than H*D, one tile a head, query tiles a head and query tiles
that do not divide the sequence. Simulation is strict (bounds,
uninitialised reads, races)."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from attention_patterns import qkv_attention
from helpers import compile_and_simulate, compile_program
from test_matmul_epilogue import constant_inputs

import npu
from npu.costmodel.attention.projection import PROJECTION_ATTR
from npu.frontend import bert
from npu.ir import dict_attr_items, walk

FUSED, APART = "npu-lower{fuse-remarks=true}", "npu-lower{fuse-attention-projection=false}"


def self_attention(seq: int, hidden: int, heads: int, head_dim: int, bias: bool, seed: int = 0):
    """BERT's self-attention block (`npu.frontend.bert.self_attention`, biases
    large enough to matter) and a feed of x."""
    model = bert.self_attention(seq, hidden, heads, head_dim, bias, seed, bias_scale=0.5)
    x = np.random.default_rng(seed + 1).standard_normal((1, seq, hidden)).astype(np.float32)
    return model, x


def run(model, x, pipeline):
    kernel = npu.compile(model, target="ascend910", pipeline=pipeline)
    (y,), report = kernel(x)
    return y, report


def check(seq: int, hidden: int, heads: int, head_dim: int, bias: bool = True):
    """Fused and apart against onnxruntime (the inputs and weights are
    rounded to f16 on the way, as both programs do) and against each other."""
    model, x = self_attention(seq, hidden, heads, head_dim, bias)
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    fused, freport = run(model, x, FUSED)
    apart, areport = run(model, x, APART)
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(fused, want, rtol=2e-2, atol=1e-2 * scale)
    # The same values are rounded the same way: only the order of f32
    # accumulation inside the cube's pieces may differ.
    np.testing.assert_allclose(fused, apart, rtol=2e-3, atol=2e-3 * scale)
    return freport, areport


GROUPS = "builtin.module(npu-hoist-casts,npu-fuse-horizontal,npu-fuse-attention,npu-fuse,{})"


def plan_of(module) -> dict | None:
    """The `npu.projection` plan of the attention group (None: apart)."""
    found = [op for op in walk(module.operation) if PROJECTION_ATTR in op.attributes]
    return dict_attr_items(found[0].attributes[PROJECTION_ATTR]) if found else None


def projection_plan(model, pipeline: str = "npu-fuse-attention-projection") -> dict | None:
    """`plan_of` the frontend's module once the fusion passes ran."""
    return plan_of(npu.compile(model, target="ascend910", pipeline=GROUPS.format(pipeline)).module)


# -- BERT's form from ONNX ---------------------------------------------------


@pytest.mark.parametrize("seq,hidden,heads,head_dim,bias", [
    (128, 128, 2, 64, True),    # one tile a head, X resident in L1, the heads one pipeline
    (120, 96, 3, 32, False),    # odd seq (the transposes and fractalizes join), no bias
    (256, 128, 2, 64, True),    # query tiles a head: jobs spread over the previous head's steps
    pytest.param(128, 768, 12, 64, True, marks=pytest.mark.slow),   # BERT-base at seq 128
    pytest.param(512, 768, 2, 64, True, marks=pytest.mark.slow),    # X streamed in row strips
])
def test_projection_joins_the_attention(seq, hidden, heads, head_dim, bias):
    model, _ = self_attention(seq, hidden, heads, head_dim, bias)
    assert projection_plan(model) is not None
    assert projection_plan(model, "npu-fuse-attention-projection") is not None
    freport, areport = check(seq, hidden, heads, head_dim, bias)
    assert freport["cycles"] < areport["cycles"], (freport["cycles"], areport["cycles"])


def test_the_option_turns_it_off():
    """`npu-lower{fuse-attention-projection=false}` leaves the projection its
    own kernel, which writes Q, K and V to GM for the attention to read back;
    the fused kernel never does."""
    seq, hidden, heads, d = 128, 128, 2, 64
    model, x = self_attention(seq, hidden, heads, d, True)
    apart = npu.compile(model, target="ascend910", pipeline=APART)
    assert plan_of(apart.module) is None
    _, areport = apart(x)
    _, freport = run(model, x, "npu-lower")
    qkv = 3 * seq * heads * d * 2
    assert freport["bytes"]["ub_to_gm"] <= areport["bytes"]["ub_to_gm"] - qkv, (
        freport["bytes"], areport["bytes"])


# -- the same form written in ascend (any head count, odd seqs with a bias) ---


def qkv_inputs(text: str, seq: int, hidden: int, padding: float = 0.0) -> list[np.ndarray]:
    """x (Nz, its padding rows `padding`), the constants' own data, y."""
    ins = constant_inputs(text)
    rng = np.random.default_rng(seq + hidden)
    s1 = -(-seq // 16)
    x = (rng.standard_normal((hidden // 16, s1, 16, 16)) * 2 / np.sqrt(hidden)).astype(np.float16)
    x[:, -1, (seq % 16) or 16:, :] = padding
    ins[0] = x
    return ins


def check_qkv(heads: int, seq: int, head_dim: int, hidden: int, bias: bool = True,
              nz_out: bool = False, padding: float = 0.0):
    """Fused and apart against the reference of the ascend program, and the
    plan formed."""
    text = qkv_attention(heads, seq, head_dim, hidden, bias, nz_out)
    assert plan_of(compile_program(text, GROUPS.format("npu-fuse-attention-projection"))) \
        is not None
    ins = qkv_inputs(text, seq, hidden, padding)
    fused, expected, fres = compile_and_simulate(text, "npu-lower", ins)
    apart, _, ares = compile_and_simulate(text, APART, ins)
    y = len(ins) - 1
    want = numpy_qkv_attention(ins, heads, seq, head_dim, bias)
    if nz_out:  # the merged context as the f16 Nz A operand
        rows = want.reshape(seq, heads * head_dim).astype(np.float16)
        want = np.zeros(fused[y].shape, np.float16)
        for j in range(want.shape[0]):
            for i in range(-(-seq // 16)):
                block = rows[16 * i:16 * i + 16, 16 * j:16 * j + 16]
                want[j, i, :block.shape[0]] = block
        want = want.astype(np.float64)
    scale = float(np.abs(want).max())
    for got in (fused[y], apart[y]):
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-3, atol=2e-3 * scale)
    if not nz_out:  # the ascend program's own semantics (Q, K, V rounded once)
        np.testing.assert_allclose(fused[y].astype(np.float64), expected[y], rtol=5e-3,
                                   atol=5e-3 * scale)
    assert fres.hazards == [] and fres.cycles < ares.cycles, (fres.cycles, ares.cycles)
    return fres


def numpy_qkv_attention(ins: list[np.ndarray], heads: int, seq: int, head_dim: int,
                        bias: bool) -> np.ndarray:
    """y [1, S, H, D] in float64 from the f16 Q, K, V the f16 epilogue makes
    (README "Precision": C rounded to f16, the bias row added in f16 and
    rounded again), softmax(q k^T / sqrt(D)) with P rounded to f16 before
    P.V, as the kernels do."""
    x_nz, w_nz = ins[0], ins[1]
    x = x_nz.transpose(1, 2, 0, 3).reshape(x_nz.shape[1] * 16, -1)[:seq].astype(np.float64)
    w = w_nz.transpose(1, 2, 0, 3).reshape(w_nz.shape[1] * 16, -1).astype(np.float64)
    qkv = (x @ w).astype(np.float32).astype(np.float16)
    if bias:
        row = ins[2][:, 0, 0, :].reshape(-1).astype(np.float16)
        qkv = (qkv.astype(np.float32) + row.astype(np.float32)).astype(np.float16)
    width = heads * head_dim
    q, k, v = (qkv[:, i * width:(i + 1) * width].astype(np.float64)
               .reshape(seq, heads, head_dim).transpose(1, 0, 2) for i in range(3))
    s = q @ k.transpose(0, 2, 1) / np.sqrt(head_dim)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    ctx = p.astype(np.float16).astype(np.float64) @ v
    return ctx.transpose(1, 0, 2)[None]


@pytest.mark.parametrize("heads,seq,head_dim,hidden,bias,nz_out", [
    (1, 100, 64, 96, True, False),    # one head, odd seq, a hidden size other than H*D
    (2, 120, 32, 64, True, False),    # head dim 32, odd seq with a bias
    pytest.param(3, 40, 128, 128, False, False, marks=pytest.mark.slow),  # head dim 128, no bias
    (2, 200, 64, 128, True, False),   # query tiles that do not divide the seq (a loop of heads)
    (2, 120, 64, 64, True, True),     # the context written as the f16 Nz A operand
    pytest.param(12, 72, 32, 384, True, False, marks=pytest.mark.slow),
])
def test_projected_attention_matches_the_reference(heads, seq, head_dim, hidden, bias, nz_out):
    check_qkv(heads, seq, head_dim, hidden, bias, nz_out)


def test_padding_rows_of_x_never_reach_the_context():
    """The rows of X past the seq (an Nz operand's padding) are inf: apart,
    the row-major stores drop their rows of Q, K, V; fused, the kernel
    zeroes them in K's and V's tiles (else inf keys would make NaN)."""
    with np.errstate(invalid="ignore"):  # the reference's padded rows of C are NaN
        fres = check_qkv(2, 120, 64, 64, padding=np.inf)
    assert fres.hazards == []


@pytest.mark.parametrize("heads,seq,head_dim,hidden,bias", [
    (2, 100, 64, 384, True),   # odd seq: the last head's V jobs after its softmax
    (3, 40, 32, 96, True),     # three heads (the V jobs too small to move), odd seq
    (2, 120, 64, 64, False),   # no bias
    (1, 72, 128, 128, True),   # one head, head dim 128
])
def test_a_heads_jobs_in_one_scope_keep_the_numbers(heads, seq, head_dim, hidden, bias):
    """`npu-lower{attention-head-scope}` (one tile a head: a head's jobs in
    one scope on shared L0 sub-step slots, the last head's V jobs after its
    softmax) computes every value as a scope a job does: the same mads in
    the same order, the same roundings, so the outputs are equal bit for
    bit; and with 0 hazards and against the reference."""
    text = qkv_attention(heads, seq, head_dim, hidden, bias)
    ins = qkv_inputs(text, seq, hidden)
    one, _, ores = compile_and_simulate(text, "npu-lower", ins)
    per_job, _, jres = compile_and_simulate(text, "npu-lower{attention-head-scope=false}", ins)
    y = len(ins) - 1
    assert ores.hazards == [] and jres.hazards == []
    np.testing.assert_array_equal(one[y], per_job[y])
    want = numpy_qkv_attention(ins, heads, seq, head_dim, bias)
    np.testing.assert_allclose(one[y].astype(np.float64), want, rtol=2e-3,
                               atol=2e-3 * float(np.abs(want).max()))
