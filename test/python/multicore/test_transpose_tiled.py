"""A general transpose whose tensor does not fit UB (the element gather
holds the whole tensor there): MobileViT's [32, 16, 4] -> [4, 16, 32] f32
at 64x64, a batch of 14 x 14 maps whose chunks are not whole blocks. It
was refused at the op; npu-lower-transpose now cuts it into pieces along
an input dim (`passes/transpose_tiled.py`), each a box copied to a GM
scratch, gathered in UB and copied into the result's box. Exact against
numpy on one core and on many."""

from __future__ import annotations

import numpy as np
import pytest

from npu import diagnostics
from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import get_target

ONE = "builtin.module(npu-lower{cores=1})"
MANY = ("builtin.module(npu-lower{{cores={n} split-cores-min-bytes=0 split-cores-estimate=false "
        "split-cores-remarks=true}})")
ELEM = {np.float32: "f32", np.float16: "f16", np.int32: "i32"}


def _program(shape: tuple, perm: tuple, elem: str) -> str:
    out = [shape[p] for p in perm]
    src = f'memref<{"x".join(map(str, shape))}x{elem}, "gm">'
    dst = f'memref<{"x".join(map(str, out))}x{elem}, "gm">'
    return f"""func.func @t(%x: {src}, %y: {dst}) {{
  "ascend.transpose"(%x, %y) {{permutation = array<i64: {", ".join(map(str, perm))}>}} : ({src}, {dst}) -> ()
  return
}}
"""


def _run(shape: tuple, perm: tuple, dtype, pipeline: str):
    t = get_target("ascend910")
    module = parse_module(_program(shape, perm, ELEM[dtype]), make_context())
    with diagnostics.collecting():
        run_pipeline(module, pipeline, t)
    rng = np.random.default_rng(sum(shape) + len(perm))
    if dtype == np.int32:
        x = rng.integers(-2**31, 2**31 - 1, size=shape, dtype=np.int64).astype(np.int32)
    else:
        x = rng.standard_normal(shape).astype(dtype)
    out = [shape[p] for p in perm]
    result = simulate(module, [x, np.zeros(out, dtype)], target=t)
    assert result.hazards == []
    np.testing.assert_array_equal(result.outputs[1], x.transpose(perm))
    return result


CASES = [
    ((32, 16, 4), (2, 1, 0), np.float32),        # MobileViT 64x64's unfold
    ((21, 14, 14), (0, 2, 1), np.float32),       # 14 x 14 maps: chunks not whole blocks
    ((21, 14, 14), (2, 1, 0), np.float32),
    ((21, 14, 14), (0, 2, 1), np.float16),
    ((21, 14, 14), (2, 1, 0), np.float16),
    ((11, 10, 27), (2, 1, 0), np.int32),         # gather_in_boxes' tail: runs under a block
    ((30, 10, 11), (0, 2, 1), np.int32),         # last piece moved back to end at the end
    ((143, 54, 3), (2, 1, 0), np.float16),       # one cut is not enough: two
    ((9, 3, 7, 8, 13), (1, 3, 0, 4, 2), np.float16),
    ((8, 24, 20, 12), (3, 1, 2, 0), np.float32),
    ((2, 30, 40, 10), (0, 2, 1, 3), np.float16),  # rows under a block, refused until now
]


@pytest.mark.parametrize("shape,perm,dtype", CASES)
def test_too_large_for_ub_lowers_on_one_core(shape, perm, dtype) -> None:
    _run(shape, perm, dtype, ONE)


@pytest.mark.parametrize("shape,perm,dtype", CASES[:3] + CASES[7:8])
@pytest.mark.parametrize("cores", [2, 4])
def test_too_large_for_ub_lowers_on_many_cores(shape, perm, dtype, cores) -> None:
    """npu-split-cores leaves it whole (one core runs it); still exact."""
    _run(shape, perm, dtype, MANY.format(n=cores))



@pytest.mark.slow
def test_reversal_cut_twice() -> None:
    """[3, 200, 300] f32 reversed (refused until now): cut along dim 1, each
    piece again along dim 2 (6 s)."""
    _run((3, 200, 300), (2, 1, 0), np.float32, ONE)


def test_beside_a_split_op_runs_on_one_core() -> None:
    """In a program npu-split-cores cuts over 4 cores (an add), the tiled
    transpose runs on one of them: exact, no hazards."""
    x_t, y_t, b_t = ('memref<32x16x4xf32, "gm">', 'memref<4x16x32xf32, "gm">',
                     'memref<64x1024xf32, "gm">')
    src = f"""func.func @t(%x: {x_t}, %y: {y_t}, %a: {b_t}, %b: {b_t}) {{
  "ascend.add"(%a, %a, %b) : ({b_t}, {b_t}, {b_t}) -> ()
  "ascend.transpose"(%x, %y) {{permutation = array<i64: 2, 1, 0>}} : ({x_t}, {y_t}) -> ()
  return
}}
"""
    t = get_target("ascend910")
    module = parse_module(src, make_context())
    with diagnostics.collecting() as engine:
        run_pipeline(module, MANY.format(n=4), t)
    said = [d.message for d in engine.diagnostics if "npu-split-cores:" in d.message]
    assert any("ascend.add 4" in s and "ascend.transpose: 1 core" in s for s in said), said
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 16, 4)).astype(np.float32)
    a = rng.standard_normal((64, 1024)).astype(np.float32)
    result = simulate(module, [x, np.zeros((4, 16, 32), np.float32), a, np.zeros_like(a)], target=t)
    assert result.hazards == []
    assert result.report["block_dim"] == 4
    np.testing.assert_array_equal(result.outputs[1], x.transpose(2, 1, 0))
    np.testing.assert_array_equal(result.outputs[3], a + a)
