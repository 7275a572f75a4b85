"""Matmul A operands written in Nz by their producers (npu-fuse's Nz stores,
npu-fuse-attention's f16 Nz context) on the simulator: bit for bit the
values of the same pipeline with `fuse-nz-stores=false` (the cast rounds
once, the same way), close to the reference and the unfused lowering, with
rows and columns that are not whole 16-blocks, several chunks with a
moved-back tail, f16 and f32. Simulation is strict (bounds, uninitialised
reads, races)."""

from __future__ import annotations

import numpy as np
import pytest

from attention_patterns import attention
from helpers import assert_outputs_close, compile_and_simulate, compile_program
from row_patterns import nz_operand
from test_fused_kernels import inputs_for

from npu.costmodel.attention.pattern import ATTENTION_ATTR
from npu.costmodel.fusion.rows import FUSED_ATTR
from npu.ir import walk

OFF = "fuse-nz-stores=false"


def member_names(text: str, attr: str, pipeline: str) -> list[list[str]]:
    module = compile_program(text, pipeline)
    return [[o.name for o in walk(op) if o.name.startswith("ascend.")]
            for op in walk(module.operation) if attr in op.attributes]


def top_level_fractalizes(text: str, pipeline: str) -> int:
    module = compile_program(text, pipeline)
    func = next(op for op in walk(module.operation) if op.name == "func.func")
    return sum(o.operation.name == "ascend.fractalize"
               for o in func.regions[0].blocks[0].operations)


def check_against_off(text: str, options: str = "", rtol: float | None = None):
    """Nz stores on vs off: identical outputs, no hazards, fewer cycles; both
    match the reference (and the unfused lowering)."""
    ins = inputs_for(text)
    sep = " " if options else ""
    on, expected, res = compile_and_simulate(text, f"npu-lower{{{options}}}", ins)
    off, _, off_res = compile_and_simulate(text, f"npu-lower{{{options}{sep}{OFF}}}", ins)
    for a, b in zip(on, off):
        np.testing.assert_array_equal(a, b)
    if rtol is None:
        assert_outputs_close(on, expected)
    assert res.hazards == [], res.hazards
    assert res.cycles < off_res.cycles, (res.cycles, off_res.cycles)
    return on, res, off_res


@pytest.mark.parametrize("rows,n,source,elem,options", [
    (37, 48, "layernorm", "f16", ""),                 # odd rows, padding rows zeroed
    (100, 64, "cast", "f16", ""),                     # q_proj's input: a group of one cast
    (300, 64, "scale", "f32", "max-chunk=4096"),      # f32 Nz, 5 chunks and a moved-back tail
    (45, 32, "scale", "f16", "max-chunk=512"),        # 16-row chunks over an odd tail
])
def test_row_group_writes_nz(rows, n, source, elem, options):
    text = nz_operand(rows, n, source, elem, matmul_n=32 if elem == "f16" else 0)
    (members,) = member_names(text, FUSED_ATTR, "npu-fuse")
    assert members[-1] == "ascend.fractalize"
    assert top_level_fractalizes(text, "npu-fuse") == 0
    assert top_level_fractalizes(text, f"npu-fuse{{nz-stores=false}}") == 1
    on, _, _ = check_against_off(text, options)
    # The Nz result against numpy: the ND rows laid out in 16x16 blocks, zero padded.
    x = inputs_for(text)[0].reshape(rows, n)
    if source == "scale":
        nd = x * x.dtype.type(0.5)
    elif source == "cast":
        nd = x.astype(np.float16)
    else:
        nd = on[3].reshape(rows, n).astype(np.float16)  # the layernorm's own f32 result, cast
    r1 = -(-rows // 16)
    padded = np.zeros((r1 * 16, n), nd.dtype)
    padded[:rows] = nd
    want = padded.reshape(r1, 16, n // 16, 16).transpose(2, 0, 1, 3)
    a = on[4] if source == "layernorm" else on[1]
    np.testing.assert_array_equal(a, want)


def test_nd_tensor_still_stored_when_read_elsewhere():
    text = nz_operand(40, 32, "scale", "f16", nd_also=True)
    (members,) = member_names(text, FUSED_ATTR, "npu-fuse")
    assert members == ["ascend.muls", "ascend.fractalize"]
    on, _, _ = check_against_off(text)
    np.testing.assert_array_equal(on[2], (inputs_for(text)[0].reshape(40, 32) * np.float16(0.5)))


def test_not_whole_fractal_columns_keep_the_fractalize():
    # 24 f32 columns are whole 32-byte blocks (a row group) but not whole
    # 16-column fractals: the Nz tensor has padding columns, so no Nz store.
    text = nz_operand(20, 24, "scale", "f32")
    assert top_level_fractalizes(text, "npu-fuse") == 1


# 384: several query tiles per head, whose f16 context slabs stay apart from
# the steps' buffers (`nz_staging`).
@pytest.mark.parametrize("heads,seq,head_dim", [(2, 72, 32), (2, 128, 64), (1, 384, 32)])
def test_attention_writes_its_context_as_f16_nz(heads, seq, head_dim):
    text = attention(heads, seq, head_dim, projections=True, nz_out=True)
    (members,) = member_names(text, ATTENTION_ATTR, "npu-fuse-attention")
    assert members[-2:] == ["ascend.cast", "ascend.fractalize"]
    (off_members,) = member_names(text, ATTENTION_ATTR, "npu-fuse-attention{nz-out=false}")
    assert "ascend.cast" not in off_members[-3:]
    ins = [np.random.default_rng(0).standard_normal(a.shape).astype(np.float32) * 1.5
           for a in inputs_for(text)[:3]] + [inputs_for(text)[3]]
    on, expected, res = compile_and_simulate(text, "npu-lower", ins)
    off, _, off_res = compile_and_simulate(text, f"npu-lower{{{OFF}}}", ins)
    np.testing.assert_array_equal(on[3], off[3])
    got, want = on[3].astype(np.float64), expected[3].astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3 * float(np.abs(want).max()))
    s1 = -(-seq // 16)
    if seq % 16:  # the padding rows of the last row block are zeros, as the fractalize writes
        assert not on[3][:, s1 - 1, seq % 16:, :].any()
    assert res.hazards == [], res.hazards
    assert res.cycles < off_res.cycles, (res.cycles, off_res.cycles)


def test_bert_layer_same_output_with_and_without_nz_stores():
    """A small BERT layer (odd seq 72: padded query rows): the layer input's
    cast, ln1's f16 copy and the attention context are written as Nz A
    operands; the output is bit for bit the one without, and matches
    onnxruntime."""
    import onnxruntime

    import npu
    from npu.frontend.bert import bert_layer

    model = bert_layer(72, 128, 2, 256)
    x = np.random.default_rng(1).standard_normal((1, 72, 128)).astype(np.float32)
    runs = {}
    for pipeline in ("npu-lower", f"npu-lower{{{OFF}}}"):
        kernel = npu.compile(model, target="ascend910", where="bert.onnx", pipeline=pipeline)
        (y,), report = kernel(x)
        assert report["hazards"] == []
        runs[pipeline] = (y, report["cycles"])
    (y, cycles), (y_off, cycles_off) = runs.values()
    np.testing.assert_array_equal(y, y_off)
    assert cycles < cycles_off, (cycles, cycles_off)
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=1e-2 * float(np.abs(want).max()))
