"""ResNet-50's 3x3 and 1x1 layers against their ideal on one ascend910 core
(issue 27): max(the cube bound, the compulsory GM bytes over the core's GM
rate), both from the target description, as bench/conv.py computes it.
Each layer also matches numpy."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from helpers import assert_close, compile_and_simulate
from npu.costmodel.conv import tiling
from npu.passes import lower_conv
from npu.target import get_target
from test_conv_schedule import conv


def ideal(c1: int, hw: int, co1: int, k: int, stride: int, pad: int) -> float:
    """max(cube, GM bytes / rate) of one f16 conv: its MACs over the cube's
    16x16x16 blocks a cycle; the input pixels some window reads, the
    weights and the output once each over the gm_to_l1 rate."""
    t = get_target("ascend910")
    ho = (hw + 2 * pad - k) // stride + 1
    cube = t.cube_cycles(ho * ho * co1 * c1 * k * k)
    read = len({i * stride - pad + j for i in range(ho) for j in range(k)} & set(range(hw)))
    gm = 2 * 16 * (c1 * read * read + co1 * c1 * 16 * k * k + co1 * ho * ho)
    return max(cube, gm / t.path("gm_to_l1").bytes_per_cycle)


def run(*shape, seed: int = 0):
    text, args = conv(*shape, seed=seed)
    got, want, result = compile_and_simulate(text, "npu-lower{cores=1}", args)
    assert_close(got[-1], want[-1], np.float16)
    assert not result.hazards
    return got[-1], result.cycles


def test_1x1_64_to_256_56_within_1_3x_ideal():
    """1x1 64 -> 256 on 56x56 (GM-bound: 1.6 MB of output, ideal 31,872):
    MTE3-bound at 46,634 cycles (1.46x) when each half of a super tile left
    in its own store (each store's flag holds MTE3 for the GM latency);
    38,156 (1.20x) with one store per super tile (and each half of the
    last chunk drained right after its own mad)."""
    _, cycles = run(4, 56, 16, 1, 1, 0)
    assert cycles < 1.3 * ideal(4, 56, 16, 1, 1, 0), (cycles, ideal(4, 56, 16, 1, 1, 0))


@pytest.mark.parametrize("shape", [(4, 28, 16, 1, 1, 0), (4, 28, 32, 1, 2, 0)])
def test_one_store_per_super_tile_is_bit_identical(shape, monkeypatch):
    """The same tiles stored per super tile or per half: the same bits
    (a 1x1 conv, and a 1x1 stride-2 one reading rows apart, both tiled with
    one store per super tile)."""
    c1, hw, co1, k, stride, pad = shape
    ho = (hw - k) // stride + 1
    s = tiling.ConvShape(c1, hw, hw, co1, k, k, ho, ho, stride, 1, pad, out_bytes=2,
                         row_skip=stride > k)
    assert tiling.choose_tiling(s, get_target("ascend910")).one_store
    merged, _ = run(*shape, seed=3)
    choose = lower_conv.choose_tiling  # the same tiling, its halves stored apart
    monkeypatch.setattr(lower_conv, "choose_tiling",
                        lambda *a, **k: replace(choose(*a, **k), one_store=False))
    halves, _ = run(*shape, seed=3)
    assert np.array_equal(merged.view(np.uint16), halves.view(np.uint16))
