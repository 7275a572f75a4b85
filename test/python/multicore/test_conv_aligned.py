"""A 3x3 conv and the 1x1 conv of its output on the same runs of rows
(`passes/split_cores/aligned.py`): each core reads only the rows it wrote,
so no chip barrier separates them. Checked against numpy, the race
detector (a missing barrier would be a race) and one core within an f16
ulp (as test_conv_rows.py: each core's conv is tiled for its own rows, so
its f32 sums may associate otherwise)."""

from __future__ import annotations

import pytest

from conv_programs import check_like_one_core, compiled, random_inputs, run

X = 'memref<1x4x32x32x16xf16, "gm">'
Y = 'memref<1x4x32x32x16xf32, "gm">'
Y2 = 'memref<1x8x32x32x16xf32, "gm">'
W = 'memref<36x4x16x16xf16, "gm">'
W1 = 'memref<4x8x16x16xf16, "gm">'
C3 = ('{strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, '
      'groups = 1 : i64, layout = "nc1hwc0", kernel = array<i64: 3, 3>}')
C1 = C3.replace("pads = array<i64: 1, 1, 1, 1>", "pads = array<i64: 0, 0, 0, 0>").replace(
    "3, 3>", "1, 1>")
# conv3x3 -> ReLU -> f16 (its epilogue) -> conv1x1: a ResNet bottleneck's conv2, conv3
CHAIN = f"""func.func @bottleneck(%x: {X}, %w1: {W}, %w2: {W1}, %y: {Y2}) {{
  %a = memref.alloc() : {Y}
  "ascend.conv2d"(%x, %w1, %a) {C3} : ({X}, {W}, {Y}) -> ()
  %c = memref.alloc() : {Y}
  "ascend.maxs"(%a, %c) {{scalar = 0.0 : f64}} : ({Y}, {Y}) -> ()
  %d = memref.alloc() : {X}
  "ascend.cast"(%c, %d) {{round_mode = "rint"}} : ({Y}, {X}) -> ()
  "ascend.conv2d"(%d, %w2, %y) {C1} : ({X}, {W1}, {Y2}) -> ()
  return
}}
"""


def _compiled(cores: int) -> str:
    return compiled(CHAIN, cores)


@pytest.mark.parametrize("cores", [32, 8])
def test_row_aligned_convs_need_no_barrier(cores: int) -> None:
    program = _compiled(cores)
    assert '"cce.sync_all"' not in program  # was one: 1 x 8 then 1 x 16 grids
    inputs = random_inputs(CHAIN, 5, 6)
    check_like_one_core(run(program, inputs), run(_compiled(1), inputs), CHAIN, inputs, 8)
