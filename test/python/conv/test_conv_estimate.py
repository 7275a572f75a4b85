"""The conv tiling model's estimate against the simulator (issue 26, "an
honest cost model"): npu-lower-conv takes its tiling on that estimate, and
bench/fusion_estimates.py --cnn reports it beside the simulated span of
every conv of ResNet-18/50 and MobileNetV2."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from npu.costmodel.conv.first_band import ahead_pieces, first_tile_left
from npu.costmodel.conv.tiling import ConvShape, choose_tiling, conv_shape, piece_cap, weight_pieces
from npu.ir import make_context, parse_module
from npu.passes.lower_conv.weights import ConvWeights
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import get_target

T = get_target("ascend910")


def conv_text(c: int, h: int, cout: int, k: int, stride: int, pad: int,
              out: str = "f16") -> tuple[str, list]:
    """One f16 `ascend.conv2d` in NC1HWC0 with fractal-Z weights, and its
    bias and result in `out`."""
    c1, co1 = c // 16, cout // 16
    dtype = np.float32 if out == "f32" else np.float16
    ho = (h + 2 * pad - k) // stride + 1
    t_x = f'memref<1x{c1}x{h}x{h}x16xf16, "gm">'
    t_w = f'memref<{c1 * k * k}x{co1}x16x16xf16, "gm">'
    t_b = f'memref<{cout}x{out}, "gm">'
    t_y = f'memref<1x{co1}x{ho}x{ho}x16x{out}, "gm">'
    text = (f'func.func @conv(%x: {t_x}, %w: {t_w}, %b: {t_b}, %y: {t_y}) {{\n'
            f'  "ascend.conv2d"(%x, %w, %b, %y) {{strides = array<i64: {stride}, {stride}>, '
            f'pads = array<i64: {pad}, {pad}, {pad}, {pad}>, dilations = array<i64: 1, 1>, '
            f'groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: {k}, {k}>}} : '
            f'({t_x}, {t_w}, {t_b}, {t_y}) -> ()\n  return\n}}\n')
    inputs = [np.zeros((1, c1, h, h, 16), np.float16), np.zeros((c1 * k * k, co1, 16, 16), np.float16),
              np.zeros(cout, dtype), np.zeros((1, co1, ho, ho, 16), dtype)]
    return text, inputs


# ResNet-50's 1x1 1024->256 on 14x14 (layer3.x.conv1: 512 KB of weights),
# ResNet-18's 1x1/2 256->512 downsample on 14x14 and its 3x3/2 128->256 on
# 28x28: estimated 1.42x, 1.33x and 1.27x too fast before the model saw the
# resident weights' arrival hold up the first band.
# MobileNetV2's last projection, 1x1 960->320 on 7x7 into f32: estimated
# 1.26x too fast (super tiles of 19 and 1 blocks, whose first tile's chunks
# waited for one run of five weight pieces), before the model saw the run.
SHAPES = [(1024, 14, 256, 1, 1, 0), (256, 14, 512, 1, 2, 0), (128, 28, 256, 3, 2, 1),
          (960, 7, 320, 1, 1, 0, "f32")]


@pytest.mark.parametrize("shape", SHAPES,
                         ids=lambda s: f"{s[3]}x{s[3]}/{s[4]} {s[0]}->{s[2]} {s[1]}" + "".join(s[6:]))
def test_estimate_within_20_percent_of_the_simulated_conv(shape):
    text, inputs = conv_text(*shape)
    module = parse_module(text, make_context())
    op = next(o for o in module.body.operations[0].regions[0].blocks[0].operations
              if o.operation.name == "ascend.conv2d")
    tiling = choose_tiling(conv_shape(op.operation), T, T.capacity("ub"))
    run_pipeline(module, "npu-lower{cores=1 prefetch=false}", T)
    cycles = simulate(module, inputs, target=T, numerics=False).cycles
    assert 0.8 <= cycles / tiling.cycles <= 1.2, (cycles, tiling)


def test_weights_load_before_the_first_band_only_when_it_opens_a_run():
    """The lowering flushes the resident weights before the first band when
    that band is one of a run of bands alike (a 1x1 map without padding),
    not when it is code of its own (the top padding row of a 3x3)."""
    one = ConvShape(c1=64, h=14, w=14, co1=16, kh=1, kw=1, ho=14, wo=14, stride_h=1,
                    dilation_h=1, pad_top=0)
    three = ConvShape(c1=16, h=14, w=14, co1=16, kh=3, kw=3, ho=14, wo=14, stride_h=1,
                      dilation_h=1, pad_top=1)
    assert one.weights_up_front(3) and not one.weights_up_front(8)  # 8 + 6 rows: unlike
    assert not three.weights_up_front(3) and not one.weights_up_front(14)


def test_unrolled_run_of_bands_keeps_its_weight_pieces_unless_mte2_bounds_it():
    """The first band of a run of bands alike loads its weights in pieces
    when the run is straight code (at most UNROLL_BANDS bands) and the cube
    bounds the conv; in a loop, or where each piece's flag would cost MTE2
    a GM latency, the weights all load up front."""
    one = ConvShape(c1=64, h=14, w=14, co1=16, kh=1, kw=1, ho=14, wo=14, stride_h=1,
                    dilation_h=1, pad_top=0)
    assert not one.weights_up_front(3, mte2_bound=False)
    assert one.weights_up_front(3, mte2_bound=True)
    tall = replace(one, h=200, ho=200)  # 67 bands of 3 rows: a loop
    assert tall.weights_up_front(3, mte2_bound=False)


def test_first_band_weight_pieces_stop_doubling_at_the_cap():
    """3x3/2 128->128 56's first band: 18 chunks of 448 cube cycles, so
    pieces of at most sqrt(350 * 18 / 448) = 4 chunks (its last 8 chunks
    had waited for one 131 KB piece)."""
    assert [rows for _, rows in weight_pieces(72, 4)] == [4, 4, 8, 16, 32, 8]
    assert piece_cap(18, 448, 350) == 4
    pieces = weight_pieces(72, 4, 4)
    assert [rows for _, rows in pieces] == [4, 4, 8, 16, 16, 16, 8]
    assert sum(rows for _, rows in pieces) == 72 and pieces[-1][0] == 64


def test_first_tile_waits_for_the_run_of_pieces_after_its_first_chunk():
    """1x1 960->320 7x7, super tiles of 19 and 1 blocks, chunks of 3 K rows:
    the five pieces after the first go out in one run, so the first tile's
    chunks past the first wait for all of them, and its work on them is
    left when the second tile's weights land; piece by piece only its last
    piece's would be."""
    pieces = weight_pieces(60, 3, 6)
    assert [rows for _, rows in pieces] == [3, 3, 6, 12, 18, 18]
    ahead = ahead_pieces(4, 3, 19, False, T)
    row_cycles, row_load = 6000 / 60, 19 * 512 / 64
    later = [60 * 512 / 64]
    assert ahead == 5
    left = first_tile_left(pieces, later, ahead, True, row_cycles, row_load, 350)
    assert left == pytest.approx(57 * row_cycles - later[0] - 350)
    assert first_tile_left(pieces, later, ahead, False, row_cycles, row_load, 350) == \
        pytest.approx(18 * row_cycles - later[0] - 350)


@pytest.mark.parametrize("m1,kc,n1,diagonal", [(4, 3, 19, False), (4, 8, 8, False),
                                                (1, 1, 1, True), (14, 2, 4, False)])
def test_ahead_pieces_is_the_lowerings(m1, kc, n1, diagonal):
    """The estimate's run after the first chunk is the one npu-lower-conv issues."""
    s = ConvShape(c1=60, h=7, w=7, co1=20, kh=1, kw=1, ho=7, wo=7, stride_h=1,
                  dilation_h=1, pad_top=0, diagonal=diagonal)
    lowering = ConvWeights.ahead_pieces(SimpleNamespace(s=s, t=SimpleNamespace(kc=kc, n1=n1),
                                                        target=T), m1)
    assert ahead_pieces(m1, kc, n1, diagonal, T) == lowering
