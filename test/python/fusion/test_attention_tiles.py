"""The attention tile chosen by modelled cost (`npu-fuse-attention{tile}`,
`npu.costmodel.attention.cost`) and the key tiles wider than L0B holds with V, whose
Q.K^T and P.V run in chunks of keys (`npu.costmodel.attention.plan.key_chunks`), on
the simulator: numerics of chunked tiles (even and uneven chunks, f32 and
f16 softmax, fractal Q/K/V and f16 rows), and the cost choice against the
fewest-tiles one."""

from __future__ import annotations

import numpy as np
import pytest

from attention_patterns import attention
from helpers import compile_and_simulate, compile_program
from test_attention import close, inputs, numpy_attention
from test_attention_softmax import attrs_of, numpy_attention_f16

from npu.costmodel.attention.plan import key_chunks
from npu.target import get_target


@pytest.mark.parametrize("d_blocks", [2, 4, 8])
def test_key_chunks_fit_l0b_twice(d_blocks):
    """A key tile whose K^T and V fit L0B is one chunk; a wider one is the
    fewest chunks of which two of K^T and two of V fit, as even as possible."""
    t = get_target("ascend910")
    per_key = (2 * d_blocks + 1) * 16 * 16 * 2
    for kb in range(1, 80):
        chunks = key_chunks(kb, d_blocks, t)
        assert sum(chunks) == kb and max(chunks) - min(chunks) <= 1
        half = t.capacity("l0b") // per_key // 2  # key blocks of a chunk two of which fit
        if kb * per_key <= t.capacity("l0b"):
            assert chunks == [kb]
        else:
            assert max(chunks) <= half and len(chunks) == -(-kb // half)


def reference(softmax: str):
    return numpy_attention_f16 if softmax == "f16" else numpy_attention


@pytest.mark.parametrize("softmax", ["f16", "f32"])
@pytest.mark.parametrize("seq,d,chunks", [(256, 64, [6, 5, 5]), (200, 128, [3, 3, 3, 2, 2])])
def test_chunked_key_tiles(softmax, seq, d, chunks):
    """All keys of a query tile in one key tile, on the cube in chunks (the
    last ones narrower; 200 keys: 8 padded keys masked in the last slab)."""
    text = attention(2, seq, d)
    g = attrs_of(compile_program(text, f"npu-fuse-attention{{softmax={softmax}}}"))
    assert g["key_rows"] == -(-seq // 16) * 16
    assert key_chunks(g["key_rows"] // 16, d // 16, get_target("ascend910")) == chunks
    ins = inputs(2, seq, d)
    fused, _, res = compile_and_simulate(text, f"npu-lower{{cores=1 attention-softmax={softmax}}}", ins)
    close(fused[3], reference(softmax)(*ins[:3]))
    assert res.hazards == [], res.hazards


@pytest.mark.parametrize("softmax", ["f16", "f32"])
def test_chunked_key_tiles_on_f16_rows(softmax):
    """BERT's form at seq 384: 64-row query tiles of all 384 keys (four
    chunks of 96), K and V resident in L1 over a head's six query tiles,
    K^T's chunks cut from K's rows (interleaved heads)."""
    heads, seq, d = 2, 384, 64
    text = attention(heads, seq, d, projections=True)
    g = attrs_of(compile_program(text, f"npu-hoist-casts,npu-fuse-attention{{softmax={softmax}}}"))
    assert (g["query_rows"], g["key_rows"]) == (64, 384)
    rng = np.random.default_rng(3)
    ins = [rng.standard_normal((1, seq, heads, d)).astype(np.float32) for _ in range(3)]
    ins.append(np.zeros((1, seq, heads, d), np.float32))
    fused, _, res = compile_and_simulate(text, f"npu-lower{{cores=1 attention-softmax={softmax}}}", ins)
    q, k, v = (a[0].transpose(1, 0, 2) for a in ins[:3])
    want = reference(softmax)(q, k.transpose(0, 2, 1), v).transpose(1, 0, 2)[None]
    close(fused[3], want)
    assert res.hazards == [], res.hazards


def test_cost_beats_fewest_tiles():
    """seq 384, BERT's form: the modelled-cost tile (64 rows x 384 keys: no
    online softmax) runs in fewer cycles than the fewest-tiles one (96 rows
    x 224 keys, two key tiles), and the model ranks them the same way."""
    heads, seq, d = 4, 384, 64
    text = attention(heads, seq, d, projections=True)
    ins = [np.random.default_rng(0).standard_normal((1, seq, heads, d)).astype(np.float32)
           for _ in range(3)] + [np.zeros((1, seq, heads, d), np.float32)]
    cycles, modelled = {}, {}
    for tile in ("cost", "fewest"):
        fuse = f"npu-hoist-casts,npu-fuse-attention{{tile={tile}}}"
        g = attrs_of(compile_program(text, fuse))
        modelled[tile] = (g["query_rows"], g["key_rows"])
        _, _, res = compile_and_simulate(text, f"npu-lower{{cores=1 attention-tile={tile}}}", ins)
        assert res.hazards == []
        cycles[tile] = res.cycles
    assert modelled == {"cost": (64, 384), "fewest": (96, 224)}, modelled
    assert cycles["cost"] < cycles["fewest"], cycles
