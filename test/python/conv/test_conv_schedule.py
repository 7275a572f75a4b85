"""The conv kernel's schedule across bands and super tiles (`kernel.py`,
`weights.py`): the L0A/L0B halves alternate across bands, the L0C sets
across super tiles, a streamed conv's first super tile loads in pieces,
and resident weights load super tile by super tile where the first band
would wait for them. Each is checked against numpy and the program's own
bound (the busiest unit's work, from the target description)."""

from __future__ import annotations

import numpy as np

from helpers import assert_close, compile_and_simulate


def _t(shape: list[int]) -> str:
    return f'memref<{"x".join(map(str, shape))}xf16, "gm">'


def conv(c1: int, hw: int, co1: int, k: int, stride: int, pad: int, seed: int):
    """One f16 conv in the cube's layout (f16 bias and result), its inputs."""
    ho = (hw + 2 * pad - k) // stride + 1
    tx, tw = _t([1, c1, hw, hw, 16]), _t([c1 * k * k, co1, 16, 16])
    tb, ty = _t([co1 * 16]), _t([1, co1, ho, ho, 16])
    text = (f"func.func @f(%x: {tx}, %w: {tw}, %b: {tb}, %y: {ty}) {{\n"
            f'  "ascend.conv2d"(%x, %w, %b, %y) {{strides = array<i64: {stride}, {stride}>, '
            f"pads = array<i64: {pad}, {pad}, {pad}, {pad}>, dilations = array<i64: 1, 1>, "
            f'groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: {k}, {k}>}} : '
            f"({tx}, {tw}, {tb}, {ty}) -> ()\n  return\n}}\n")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, c1, hw, hw, 16)).astype(np.float16)
    w = (rng.standard_normal((c1 * k * k, co1, 16, 16)) / np.sqrt(c1 * k * k * 16)).astype(np.float16)
    b = rng.standard_normal(co1 * 16).astype(np.float16)
    return text, [x, w, b, np.zeros((1, co1, ho, ho, 16), np.float16)]


def run(*shape, seed: int = 0):
    text, args = conv(*shape, seed=seed)
    got, want, result = compile_and_simulate(text, "npu-lower{cores=1}", args)
    assert_close(got[-1], want[-1], np.float16)
    assert not result.hazards
    return result.cycles / result.report["bound_cycles"]


def test_resident_weights_arrive_super_tile_by_super_tile():
    """ResNet-50's layer3 conv3 (1x1 256 -> 1024 on 14x14, 512 KB of
    resident weights): 2.41x its own (cube) bound when the first super
    tile waited for every K1 row of all of Cout and super tiles within a
    band shared one L0C set; 1.68x now."""
    ratio = run(16, 14, 64, 1, 1, 0)
    assert ratio < 1.8, ratio


def test_first_streamed_super_tile_loads_in_pieces():
    """3x3 256 -> 256 on 14x14 (1.2 MB of weights, streamed per super
    tile): the cube waited ~7k cycles for the first tile's 295 KB (1.42x
    its bound); 1.30x now."""
    ratio = run(16, 14, 16, 3, 1, 1, seed=1)
    assert ratio < 1.36, ratio
