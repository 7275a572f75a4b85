"""The small-channel conv's last K fractal (the 7x7 stem's 13th: one
kernel point of 49): read in img2col's normal mode where the map's slots
4..15 are zeros (`ConvShape.single_tail`), and shared by two bands in one
chunk (`passes/lower_conv/tail_pairs.py`). Numerics against onnxruntime."""

from __future__ import annotations

import re

import numpy as np
import pytest

import npu
from conv_cases import conv_model, ort_run, random_input

CUBE = dict(rtol=2e-2, atol=2e-2)


def _lower(text: str) -> str:
    from npu.ir import make_context, parse_module
    from npu.pipeline import run_pipeline
    from npu.target import get_target

    ctx = make_context()
    with ctx:
        module = parse_module(text, ctx)
        run_pipeline(module, "npu-lower-conv", get_target("ascend910"))
        return str(module)


def _cce(m) -> str:
    return _lower(npu.compile(m, cores=1).stages["ascend"])


def _stem_5hd(h: int, w: int) -> str:
    """The 7x7/2 3->16 conv on an NC1HWC0 input (as bench/conv.py's "stem")."""
    ho, wo = (h - 1) // 2 + 1, (w - 1) // 2 + 1
    x, wz = f'memref<1x1x{h}x{w}x16xf16, "gm">', 'memref<13x1x16x16xf16, "gm">'
    y = f'memref<1x1x{ho}x{wo}x16xf16, "gm">'
    return (f'func.func @conv(%x: {x}, %w: {wz}, %y: {y}) {{\n'
            f'  "ascend.conv2d"(%x, %w, %y) {{strides = array<i64: 2, 2>, '
            f'pads = array<i64: 3, 3, 3, 3>, dilations = array<i64: 1, 1>, groups = 1 : i64, '
            f'layout = "nc1hwc0_c4", kernel = array<i64: 7, 7>}} : ({x}, {wz}, {y}) -> ()\n'
            f'  return\n}}\n')


def _img2cols(text: str) -> list[str]:
    return [line for line in text.splitlines() if "cce.img2col_l1_to_l0a" in line]


@pytest.mark.parametrize("image", [True, False])
def test_last_fractal_in_normal_mode(image):
    """7x7: kernel point 48 alone in the last K fractal, fetched in the
    normal mode (16 slots of the point, the ones past its channels zero);
    every other fractal in the small-channel mode. A 4-channel image has no
    zero row to fill slots 4..15 from: all stay small."""
    m = conv_model(c=3, cout=16, k=7, h=40, w=32, stride=2, pads=(3, 3, 3, 3), dtype=np.float16)
    lines = _img2cols(_cce(m) if image else _lower(_stem_5hd(40, 32)))
    normal = [x for x in lines if "small_channel" not in x]
    assert normal and all("fetch_h = 6" in x and "fetch_w = 6" in x for x in normal), normal
    assert len(lines) - len(normal) == 12 * len(normal)
    four = conv_model(c=4, cout=16, k=7, h=40, w=32, stride=2, pads=(3, 3, 3, 3), dtype=np.float16)
    assert all("small_channel" in x for x in _img2cols(_cce(four)))


@pytest.mark.parametrize("w, bands", [(112, 4), (64, 3)])
def test_bands_share_their_last_chunk(w, bands):
    """Each pair of bands: the first stops before its last fractal, the
    second starts with it (mads of one K fractal, the first not
    accumulating); with an odd count the last band keeps its own."""
    m = conv_model(c=3, cout=64, k=7, h=64, w=w, stride=2, pads=(3, 3, 3, 3), dtype=np.float16)
    mads = re.findall(r'"cce.mad".*?\{(.*?)\}', _cce(m))
    firsts = [a for a in mads if "accumulate = false" in a]
    one = [a for a in firsts if re.search(r"\bn = 16\b", a)]
    # each band: two halves of Cout (two accumulators)
    assert len(firsts) == 2 * bands and len(one) == 2 * (bands // 2), firsts


@pytest.mark.parametrize("h, cores, unroll", [(64, 1, True), (58, 1, False), (120, 2, True),
                                              (100, 4, False)])
def test_shared_chunks_match_onnxruntime(monkeypatch, h, cores, unroll):
    """Odd and even band counts, bands straight and in loops (two a
    loop iteration: the pair), row runs on several cores."""
    from npu.passes.lower_conv import kernel as conv_kernel

    if not unroll:
        monkeypatch.setattr(conv_kernel, "UNROLL_BANDS", 0)
    m = conv_model(c=3, cout=32, k=7, h=h, w=48, stride=2, pads=(3, 3, 3, 3), dtype=np.float16)
    x = random_input(m)
    compiled = npu.compile(m, pipeline=f"npu-lower{{emit=cce cores={cores}}}")
    shared = re.findall(r'"cce.mad".*accumulate = false[^}]*\bn = 16\b', str(compiled.module))
    assert shared, "no band starts with its last fractal"
    (got,), _ = compiled(x)
    np.testing.assert_allclose(got.astype(np.float32), ort_run(m, {"x": x})[0].astype(np.float32),
                               **CUBE)


def test_stem_image_cycles():
    """ResNet's 224x224 stem reading its image, one core: 57,304 cycles
    (1.90x the ideal) before the shared tail chunks and the drain slots
    over the UB its staging leaves (3 -> 6); 54,440 (1.81x) after."""
    from test_stem_image import _stem_ideal

    m = conv_model(c=3, cout=64, k=7, h=224, w=224, stride=2, pads=(3, 3, 3, 3), dtype=np.float16)
    _, report = npu.compile(m, cores=1)(random_input(m))
    (row,) = [r for r in report["per_op"] if "conv" in r["op"]]
    assert row["exclusive_cycles"] <= 1.83 * _stem_ideal(3, 224, 224, 64, 7, 112, 112), row
