"""The vnchwconv plans of npu-lower-fractalize, executed by a small numpy model
of vnchwconv written from dialects/README.md, independently of the simulator:
a wrong offset or stride shows up as a wrong Nz layout here first."""

from __future__ import annotations

import numpy as np
import pytest

from npu.passes.lower_fractalize import forward_passes, inverse_passes, split_repeats

BLOCK = 32


def vnchwconv(bufs: dict[str, np.ndarray], p, e: int) -> None:
    """README semantics on flat element buffers (block = 32 bytes)."""
    per = BLOCK // e
    src, dst = bufs[p.src_buf], bufs[p.dst_buf]
    for r in range(p.repeat):
        s0 = (p.src_block + r * p.src_rep) * per
        d0 = (p.dst_block + r * p.dst_rep) * per
        rows = np.stack([src[s0 + o * per: s0 + o * per + per] for o in p.src_offsets])
        if e == 2:
            out = rows.T  # 16x16: row j of S^T
            for j in range(16):
                dst[d0 + p.dst_offsets[j] * per: d0 + p.dst_offsets[j] * per + per] = out[j]
        else:
            for t in range(8):  # S is 16x8; row t of S^T in two halves
                for half in (0, 1):
                    o = p.dst_offsets[2 * t + half] * per
                    dst[d0 + o: d0 + o + per] = rows[half * 8:(half + 1) * 8, t]


def nz_of(x: np.ndarray) -> np.ndarray:
    R, C = x.shape
    R1, C1 = -(-R // 16), -(-C // 16)
    pad = np.zeros((R1 * 16, C1 * 16), x.dtype)
    pad[:R, :C] = x
    return pad.reshape(R1, 16, C1, 16).transpose(2, 0, 1, 3)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("t,C1", [(1, 1), (1, 3), (5, 48), (2, 4), (7, 2), (16, 3), (9, 2)])
def test_forward_and_inverse_passes(dtype, t, C1):
    e = np.dtype(dtype).itemsize
    rng = np.random.default_rng(t * 100 + C1)
    x = rng.standard_normal((16 * t, 16 * C1)).astype(dtype)
    bufs = {"strip": x.reshape(-1).copy(), "tmp": np.zeros(x.size, dtype)}
    for p in forward_passes(t, C1, e):
        for q in split_repeats(p, 255, 255):
            # t = 16 (f16) or t >= 8 (f32): strides past 8 bits, one repeat each
            assert q.repeat <= 255 and q.src_rep <= 255 and q.dst_rep <= 255
            vnchwconv(bufs, q, e)
    out = bufs["strip"].reshape(C1, t, 16, 16)
    np.testing.assert_array_equal(out, nz_of(x))
    bufs["tmp"][:] = 0
    for p in inverse_passes(t, C1, e):
        for q in split_repeats(p, 255, 255):
            assert q.src_rep <= 255 and q.dst_rep <= 255
            vnchwconv(bufs, q, e)
    np.testing.assert_array_equal(bufs["strip"].reshape(16 * t, 16 * C1), x)


def test_fill_ub_instruction_counts_match_the_thesis():
    # 80x768 fp16: one pass-1 vnchwconv of 240 repeats, five pass-2 ones of 48.
    passes = forward_passes(5, 48, 2)
    assert [p.repeat for p in passes] == [240] + [48] * 5
    naive = forward_passes(1, 48, 2)
    assert [p.repeat for p in naive] == [48, 48]
