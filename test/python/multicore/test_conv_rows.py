"""Convs over more cores than their channel blocks: a grid of channel parts
and runs of output rows (npu-split-cores's conv rule, npu-lower-conv's
first / inner / last row plans), checked against one core, the numpy
reference and the race detector."""

from __future__ import annotations

import numpy as np
import pytest

from conv_programs import check_like_one_core, compiled, random_inputs, run
from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import SimulationError
from npu.target import get_target

X = 'memref<1x4x16x16x16xf16, "gm">'
Y = 'memref<1x4x16x16x16xf32, "gm">'
W = 'memref<36x4x16x16xf16, "gm">'
CONV = ('{strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, '
        'groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>}')
# conv -> + residual -> ReLU (the conv's epilogue) -> f16 -> conv: the second
# conv's rows read the first's halo rows, which other cores wrote.
CHAIN = f"""func.func @block(%x: {X}, %w1: {W}, %r: {Y}, %w2: {W}, %y: {Y}) {{
  %a = memref.alloc() : {Y}
  "ascend.conv2d"(%x, %w1, %a) {CONV} : ({X}, {W}, {Y}) -> ()
  %b = memref.alloc() : {Y}
  "ascend.add"(%a, %r, %b) : ({Y}, {Y}, {Y}) -> ()
  %c = memref.alloc() : {Y}
  "ascend.maxs"(%b, %c) {{scalar = 0.0 : f64}} : ({Y}, {Y}) -> ()
  %d = memref.alloc() : {X}
  "ascend.cast"(%c, %d) {{round_mode = "rint"}} : ({Y}, {X}) -> ()
  "ascend.conv2d"(%d, %w2, %y) {CONV} : ({X}, {W}, {Y}) -> ()
  return
}}
"""
# depthwise (block-diagonal fractals: block j of the output reads block j of
# the input), 2 blocks of 32 x 32: 2 channel parts x 8 runs of rows
XD = 'memref<1x2x32x32x16xf16, "gm">'
YD = 'memref<1x2x32x32x16xf32, "gm">'
WD = 'memref<9x2x16x16xf16, "gm">'
DEPTHWISE = f"""func.func @dw(%x: {XD}, %w: {WD}, %y: {YD}) {{
  "ascend.conv2d"(%x, %w, %y) {CONV.replace('"nc1hwc0"', '"nc1hwc0_bd"')} : ({XD}, {WD}, {YD}) -> ()
  return
}}
"""
# ResNet's max pool (3x3, stride 2, pad 1) over 16 -> 8 rows: runs of one row
P = 'memref<1x4x8x8x16xf16, "gm">'
POOL = f"""func.func @pool(%x: {X}, %y: {P}) {{
  "ascend.pool2d"(%x, %y) {{kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>,
      pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, count_include_pad = 1 : i64,
      layout = "nc1hwc0"}} : ({X}, {P}) -> ()
  return
}}
"""
BARRIER = '"cce.sync_all"() : () -> ()'


def _inputs(text: str) -> list[np.ndarray]:
    return random_inputs(text, 3, 6, 1 if "nc1hwc0_bd" in text else None)


def _compiled(text: str, cores: int) -> str:
    return compiled(text, cores, " split-cores-min-bytes=0" if cores > 1 else "")  # (refused on one core)


@pytest.mark.parametrize("text,cores,row_parts", [
    (CHAIN, 32, 8),     # 4 channel blocks x 8 runs of 2 rows: first, inner and last plans
    (CHAIN, 8, 4),      # 2 channel parts x 4 runs
    (DEPTHWISE, 16, 8),  # its input blocks follow its output blocks
    (POOL, 32, 8),
])
def test_convs_cut_by_rows_equal_one_core(text: str, cores: int, row_parts: int) -> None:
    """Against one core within an f16 ulp of the values (each core's conv is
    tiled for its own rows and channels, so f32 sums may associate
    otherwise), against numpy, with no race."""
    split = parse_module(text, make_context())
    run_pipeline(split, f"builtin.module(npu-split-cores{{cores={cores} min-bytes=0}})",
                 get_target())
    assert f"npu.core_part = array<i64: {row_parts}, 1>" in str(split)
    inputs = _inputs(text)
    check_like_one_core(run(_compiled(text, cores), inputs), run(_compiled(text, 1), inputs), text,
                        inputs, cores)


def test_the_split_names_its_rows() -> None:
    module = parse_module(CHAIN, make_context())
    run_pipeline(module, "builtin.module(npu-split-cores{cores=32 min-bytes=0 estimate=false})",
                 get_target())
    text = str(module)
    assert text.count("npu.core_part = array<i64: 8, 1>") == 2
    # the conv's output and the residual stay whole along H: the conv's
    # lowering computes the core's rows
    assert "memref<1x1x16x16x16xf32" in text


def test_deleting_any_barrier_is_caught() -> None:
    """Without it the second conv's cores read rows of the workspace that
    other cores have not written yet (uninitialised) or are writing (a race)."""
    inputs = _inputs(CHAIN)
    program = _compiled(CHAIN, 32)
    count = program.count(BARRIER)
    assert count >= 1
    at = -1
    for _ in range(count):
        at = program.index(BARRIER, at + 1)
        cut = program[:at] + program[at + len(BARRIER):]
        with pytest.raises(SimulationError) as e:
            run(cut, inputs)
        assert e.value.kind in ("race", "uninitialized")
