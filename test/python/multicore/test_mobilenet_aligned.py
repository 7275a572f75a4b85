"""A MobileNet block on the rows its input was written on
(`passes/split_cores/aligned.py`, `steer`): the depthwise 3x3 conv goes to
the row grid its 1x1 projection can follow with no chip barrier, where its
own best grid cut channels too and needed one before the projection.
Checked against one core, numpy, the race detector, and that the barrier
left (the depthwise conv's halo rows) is still needed."""

from __future__ import annotations

import numpy as np
import pytest

from conv_programs import check_like_one_core, compiled, random_inputs, run
from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import SimulationError
from npu.target import get_target

X = 'memref<1x1x32x32x16xf16, "gm">'  # the block's input: 16 channels on 32 x 32
H16 = 'memref<1x2x32x32x16xf16, "gm">'  # the expanded map, 32 channels
H32 = 'memref<1x2x32x32x16xf32, "gm">'
Y = 'memref<1x1x32x32x16xf32, "gm">'
WE = 'memref<1x2x16x16xf16, "gm">'  # 1x1 expand 16 -> 32
WD = 'memref<9x2x16x16xf16, "gm">'  # depthwise 3x3: block-diagonal fractals
WP = 'memref<2x1x16x16xf16, "gm">'  # 1x1 project 32 -> 16
C1 = ('{strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, '
      'groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 1, 1>}')
DW = C1.replace("0, 0, 0, 0>", "1, 1, 1, 1>").replace("1, 1>}", "3, 3>}").replace(
    '"nc1hwc0"', '"nc1hwc0_bd"')


def _relu6_f16(src: str, name: str) -> str:
    """ReLU6 and the cast to f16 of an f32 map (the conv's epilogue)."""
    return f"""  %{name}a = memref.alloc() : {H32}
  "ascend.maxs"(%{src}, %{name}a) {{scalar = 0.0 : f64}} : ({H32}, {H32}) -> ()
  %{name}b = memref.alloc() : {H32}
  "ascend.mins"(%{name}a, %{name}b) {{scalar = 6.0 : f64}} : ({H32}, {H32}) -> ()
  %{name} = memref.alloc() : {H16}
  "ascend.cast"(%{name}b, %{name}) {{round_mode = "rint"}} : ({H32}, {H16}) -> ()
"""


# expand 1x1 -> ReLU6 -> depthwise 3x3 -> ReLU6 -> project 1x1
BLOCK = f"""func.func @block(%x: {X}, %we: {WE}, %wd: {WD}, %wp: {WP}, %y: {Y}) {{
  %e = memref.alloc() : {H32}
  "ascend.conv2d"(%x, %we, %e) {C1} : ({X}, {WE}, {H32}) -> ()
{_relu6_f16("e", "e6")}  %d = memref.alloc() : {H32}
  "ascend.conv2d"(%e6, %wd, %d) {DW} : ({H16}, {WD}, {H32}) -> ()
{_relu6_f16("d", "d6")}  "ascend.conv2d"(%d6, %wp, %y) {C1} : ({H16}, {WP}, {Y}) -> ()
  return
}}
"""
BARRIER = '"cce.sync_all"() : () -> ()'


def _inputs() -> list[np.ndarray]:
    return random_inputs(BLOCK, 7, 4, diagonal=2)  # the depthwise weight's blocks are diagonal


def _compiled(cores: int) -> str:
    return compiled(BLOCK, cores)


def test_depthwise_on_its_projections_rows() -> None:
    """One barrier (the depthwise conv's halo rows), not two: its own best
    grid on 4 cores (2 channel parts x 2 runs) left the projection behind
    a barrier; on 1 x 4 the projection reads only its own rows."""
    module = parse_module(BLOCK, make_context())
    run_pipeline(module, "builtin.module(npu-fuse,npu-split-cores{cores=4})", get_target())
    text = str(module)
    assert text.count("cce.sync_all") == 1  # was 2
    assert text.count("npu.core_part = array<i64: 4, 1>") == 2  # the depthwise conv, the projection


def test_block_equals_one_core_and_its_barrier_is_needed() -> None:
    """Within an f16 ulp of one core (each core's convs are tiled for its
    own rows) and of numpy, no race; without the barrier left, the
    depthwise conv reads halo rows other cores have not written."""
    inputs = _inputs()
    program = _compiled(4)
    assert program.count(BARRIER) == 1
    check_like_one_core(run(program, inputs), run(_compiled(1), inputs), BLOCK, inputs, 4)
    with pytest.raises(SimulationError):
        run(program.replace(BARRIER, ""), inputs)
