"""A 3x3 conv and the 1x1 conv of its output on the same runs of rows
(`passes/split_cores/aligned.py`): each core reads only the rows it wrote,
so no chip barrier separates them. Checked against numpy, the race
detector (a missing barrier would be a race) and one core within an f16
ulp (as test_conv_rows.py: each core's conv is tiled for its own rows, so
its f32 sums may associate otherwise)."""

from __future__ import annotations

import numpy as np
import pytest

from npu.ir import NUMPY_DTYPES, is_memref, make_context, memref_element, memref_shape, parse_module
from npu.pipeline import run_pipeline
from npu.reference import evaluate
from npu.simulator import simulate
from npu.target import get_target

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


def _inputs() -> list[np.ndarray]:
    module = parse_module(CHAIN, make_context())
    func = module.body.operations[0]
    rng = np.random.default_rng(5)
    return [(rng.uniform(-1, 1, memref_shape(a.type)) / (6 if len(memref_shape(a.type)) == 4
                                                          else 1)
             ).astype(NUMPY_DTYPES[memref_element(a.type)])
            for a in func.regions[0].blocks[0].arguments if is_memref(a.type)]


def _compiled(cores: int) -> str:
    module = parse_module(CHAIN, make_context())
    run_pipeline(module, f"builtin.module(npu-lower{{cores={cores} emit=cce}})", get_target())
    return module.operation.get_asm(print_generic_op_form=True)


@pytest.mark.parametrize("cores", [32, 8])
def test_row_aligned_convs_need_no_barrier(cores: int) -> None:
    program = _compiled(cores)
    assert '"cce.sync_all"' not in program  # was one: 1 x 8 then 1 x 16 grids
    inputs = _inputs()
    many = simulate(parse_module(program, make_context()), inputs, target=get_target())
    one = simulate(parse_module(_compiled(1), make_context()), inputs, target=get_target())
    assert many.hazards == [] and many.report["block_dim"] == 8
    np.testing.assert_allclose(many.outputs[-1], one.outputs[-1], rtol=1e-3, atol=1e-3)
    module = parse_module(CHAIN, make_context())
    want = evaluate(module.body.operations[0], inputs)[-1]
    np.testing.assert_allclose(many.outputs[-1], want, rtol=3e-3, atol=3e-3)
    assert many.cycles < one.cycles
