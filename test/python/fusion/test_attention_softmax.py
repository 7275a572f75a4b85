"""The attention kernel's softmax precision (`npu-fuse-attention{softmax}`,
`npu-lower{attention-softmax}`), on the simulator.

In f16 the scores leave L0C rounded to f16; that rounding (|s| 2^-11 per
score, times the scale in the exponent) is the mode's own error and grows
with the scores. So the f16 kernel is checked against an emulation that
rounds the scores (and the scale) to f16 as it does, then computes the
softmax in float64, with the tolerances of the f32 tests
(`test_attention`): what is left is the shifted exponent's and P's f16
rounding, which both modes share. Odd seqs (padded keys), negative and
tiny scales, several query and key tiles per head (online softmax), f32
inputs (cast on chip) and f16 rows (BERT's form)."""

from __future__ import annotations

import numpy as np
import pytest

from attention_patterns import attention
from helpers import compile_and_simulate, compile_program
from test_attention import check_projections, close, inputs, numpy_attention

from npu.costmodel.attention.pattern import ATTENTION_ATTR, SOFTMAX_DEFAULT
from npu.ir import dict_attr_items, walk


def numpy_attention_f16(q, kt, v, scale: float | None = None) -> np.ndarray:
    """Attention whose scores are rounded to f16 as the f16 kernel's move
    rounds them (from the cube's f32), scaled with the scale's f16 value (a
    negative scale: the f16 product, taken before the max), then softmax in
    float64 and P rounded to f16 for P.V."""
    q, kt, v = (a.astype(np.float16).astype(np.float64) for a in (q, kt, v))
    scale = scale if scale is not None else 1 / np.sqrt(q.shape[-1])
    s = (q @ kt).astype(np.float32).astype(np.float16).astype(np.float64)
    a = float(np.float16(scale))
    if scale < 0:
        s, a = (s * a).astype(np.float16).astype(np.float64), 1.0
    x = a * s
    p = np.exp(x - x.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return p.astype(np.float16).astype(np.float64) @ v


def lowered(softmax: str, extra: str = "") -> str:
    return f"npu-lower{{cores=1 attention-softmax={softmax}{extra}}}"


def attrs_of(module) -> dict:
    (found,) = [op for op in walk(module.operation) if ATTENTION_ATTR in op.attributes]
    return dict_attr_items(found.attributes[ATTENTION_ATTR])


def check_f16(heads: int, seq: int, d: int = 64, scale: float | None = None,
              ins: list[np.ndarray] | None = None, fuse: str = ""):
    """The f16 kernel against the f16 emulation (and the float64 attention
    within the f16 scores' own error); `fuse`: npu-fuse-attention's options."""
    text = attention(heads, seq, d, scale=scale)
    ins = ins if ins is not None else inputs(heads, seq, d)
    pipeline = (f"npu-fuse-attention{{softmax=f16 {fuse}}},npu-lower{{cores=1}}" if fuse
                else lowered("f16"))
    fused, _, res = compile_and_simulate(text, pipeline, ins)
    for i in range(3):
        np.testing.assert_array_equal(fused[i], ins[i])
    close(fused[3], numpy_attention_f16(*ins[:3], scale))
    assert res.hazards == [], res.hazards
    return res


def test_option_recorded_in_the_attribute():
    text = attention(2, 100, 64)
    for softmax in ("f16", "f32"):
        g = attrs_of(compile_program(text, f"npu-fuse-attention{{softmax={softmax}}}"))
        assert g["softmax"] == softmax
    assert attrs_of(compile_program(text, "npu-fuse-attention"))["softmax"] == SOFTMAX_DEFAULT


@pytest.mark.parametrize("heads,seq,scale", [(2, 128, None), (2, 100, None), (3, 48, 1.0),
                                             (2, 100, -0.125), (2, 100, 1e-5),
                                             (2, 200, -0.3), (2, 200, 0.3)])
def test_f16_softmax(heads, seq, scale):
    """One tile per head (128, odd 100 and 48 with padded keys; f32 inputs
    cast on chip), two query tiles (200); negative scales (scaled before
    the max), a tiny one (the padded keys must still vanish: clamped after
    the shift, else exp(-65504 * 1e-5) = 0.52 each), scale 1 (no vmadd: the
    shift is a vadd)."""
    check_f16(heads, seq, scale=scale)


@pytest.mark.parametrize("key", [5, 99])
def test_f16_row_max_reaches_every_key_slab(key):
    """One key 15 above the rest in every row (see test_attention): a row
    max that missed its slab, or a padded key that won it, leaves exp(15)."""
    ins = inputs(2, 100, 64)
    ins[0][:, :, 0] = 4.0
    ins[1][:, 0, :] = 0.0
    ins[1][:, 0, key] = 30.0
    check_f16(2, 100, ins=ins)


@pytest.mark.parametrize("softmax", ["f16", "f32"])
def test_padded_keys_never_win_the_row_max(softmax):
    """Every valid score of a row about -30 after the scale: a padded key
    (score 0) taken into the row max would make every P underflow to 0 in
    f16 (a sum of 0: no finite context)."""
    ins = inputs(2, 100, 64)
    ins[0][:, :, 0] = 4.0
    ins[1][:, 0, :] = -60.0
    if softmax == "f16":
        check_f16(2, 100, ins=ins)
    else:
        fused, _, res = compile_and_simulate(attention(2, 100, 64), lowered("f32"), ins)
        close(fused[3], numpy_attention(*ins[:3]))
        assert res.hazards == []


def test_f16_online_softmax_over_key_tiles():
    """seq 512, tile=fewest: 3 key tiles per query row, the running offset
    and alpha."""
    module = compile_program(attention(2, 512, 64), "npu-fuse-attention{softmax=f16 tile=fewest}")
    assert attrs_of(module)["key_rows"] < 512
    check_f16(2, 512, fuse="tile=fewest")


def test_f16_online_softmax_masked_tail_and_loops():
    """16-row query tiles x 80-key tiles (a small UB share): 3 key tiles,
    the middle one in a loop, the last with 8 padded keys, 13 query tiles."""
    check_f16(2, 200, scale=-0.2, fuse="ub-fraction=0.07")


@pytest.mark.parametrize("seq,d", [(128, 64), (200, 128), (384, 32)])
def test_f16_softmax_on_f16_rows(seq, d):
    """BERT's form: the kernel reads each head's f16 rows (the casts hoisted
    into the projections' bias adds)."""
    check_projections(2, seq, d, lowered("f16"), numpy_attention_f16, expected_too=False)


def test_f32_softmax_when_selected():
    """softmax=f32 is the kernel of before the option: its results match
    the float64 attention at the f32 tolerance where the f16 mode's do not
    (large scores: the f16 rounding of s, times the scale)."""
    text = attention(1, 100, 64, scale=1.0)
    ins = inputs(1, 100, 64)
    want = numpy_attention(*ins[:3], 1.0)
    f32, _, _ = compile_and_simulate(text, lowered("f32"), ins)
    close(f32[3], want)
    f16, _, _ = compile_and_simulate(text, lowered("f16"), ins)
    with pytest.raises(AssertionError):
        close(f16[3], want)
    close(f16[3], numpy_attention_f16(*ins[:3], 1.0))


@pytest.mark.slow  # 12 s: a cycle comparison that bench/attention_softmax.py prints too
def test_f16_softmax_is_cheaper():
    """Half the vector repeats of the max and the shift, no cast of P."""
    text = attention(2, 512, 64)
    ins = inputs(2, 512, 64)
    _, _, f32 = compile_and_simulate(text, lowered("f32"), ins)
    _, _, f16 = compile_and_simulate(text, lowered("f16"), ins)
    assert f16.cycles < f32.cycles
    busy = {m: r.report["pipes"]["V"]["busy_cycles"] for m, r in (("f32", f32), ("f16", f16))}
    assert busy["f16"] < 0.85 * busy["f32"], busy


@pytest.mark.parametrize("softmax", ["f16", "f32"])
@pytest.mark.parametrize("row_max", ["vcmax", "transpose"])
@pytest.mark.parametrize("seq,key", [(40, 37), (100, 3), (200, 150)])
def test_row_max_either_way(softmax, row_max, seq, key):
    """npu-lower{attention-row-max}: the per-row vcmax or the transpose and
    tree of folds (48 rows, one tile per head; 112 rows; 112-row query
    tiles), with one key 15 above the rest in every row: a fold that mixed
    rows or lost a key leaves exp(15) in P."""
    ins = inputs(2, seq, 64)
    ins[0][:, :, 0] = 4.0
    ins[1][:, 0, :] = 0.0
    ins[1][:, 0, key] = 30.0
    text = attention(2, seq, 64)
    fused, _, res = compile_and_simulate(
        text, f"npu-lower{{cores=1 attention-softmax={softmax} attention-row-max={row_max}}}", ins)
    want = (numpy_attention_f16 if softmax == "f16" else numpy_attention)(*ins[:3])
    close(fused[3], want)
    assert res.hazards == [], res.hazards
    lowered_text = str(compile_program(
        text, f"npu-lower{{cores=1 attention-softmax={softmax} attention-row-max={row_max}}}"))
    assert ("cce.vcmax" in lowered_text) == (row_max == "vcmax")
