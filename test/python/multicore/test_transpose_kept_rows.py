"""A transpose that keeps its last dim, whose rows are not whole 32-byte
blocks: ShuffleNet's channel shuffle in NCHW ([1, 2, C/2, H, W] ->
[1, C/2, 2, H, W]: whole H*W planes reordered). Too large for the element
gather (which holds the tensor in UB) it was refused; npu-lower-transpose
now copies each row through a UB slot (its last block moved back to end at
the row's end), and npu-split-cores cuts the result's rows over the cores
(`KEPT_ROWS`). Exact against numpy on one core and on many."""

from __future__ import annotations

import numpy as np
import pytest

from npu import diagnostics
from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import get_target

MANY = ("builtin.module(npu-lower{{cores={n} split-cores-min-bytes=0 split-cores-estimate=false "
        "split-cores-remarks=true}})")


def _program(shape: tuple, perm: tuple, elem: str) -> str:
    out = [shape[p] for p in perm]
    src = f'memref<{"x".join(map(str, shape))}x{elem}, "gm">'
    dst = f'memref<{"x".join(map(str, out))}x{elem}, "gm">'
    return f"""func.func @shuffle(%x: {src}, %y: {dst}) {{
  "ascend.transpose"(%x, %y) {{permutation = array<i64: {", ".join(map(str, perm))}>}} : ({src}, {dst}) -> ()
  return
}}
"""


def _run(shape: tuple, perm: tuple, dtype, pipeline: str) -> tuple:
    t = get_target("ascend910")
    module = parse_module(_program(shape, perm, "f32" if dtype == np.float32 else "f16"),
                          make_context())
    with diagnostics.collecting() as engine:
        run_pipeline(module, pipeline, t)
    said = [d.message for d in engine.diagnostics if "npu-split-cores:" in d.message]
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(dtype)
    out = [shape[p] for p in perm]
    result = simulate(module, [x, np.zeros(out, dtype)], target=t)
    assert result.hazards == []
    assert np.array_equal(result.outputs[1], x.transpose(perm))
    return result, said


@pytest.mark.parametrize("shape,perm,dtype", [
    ((1, 2, 48, 6, 6), (0, 2, 1, 3, 4), np.float32),   # ShuffleNet at 96x96: 36 f32 planes
    ((1, 3, 32, 7, 7), (0, 2, 1, 3, 4), np.float32),   # three groups, 49 f32 planes
    ((1, 2, 64, 5, 5), (0, 2, 1, 3, 4), np.float16),   # 25 f16 planes
    ((4, 3, 5, 36), (2, 0, 1, 3), np.float32),         # any permutation of the rows
])
def test_rows_not_whole_blocks_move_whole(shape, perm, dtype) -> None:
    one, _ = _run(shape, perm, dtype, "builtin.module(npu-lower{cores=1})")
    many, said = _run(shape, perm, dtype, MANY.format(n=4))
    assert any("ascend.transpose 4" in s for s in said), said
    assert many.report["block_dim"] == 4
    assert many.cycles < one.cycles


def test_a_shuffle_of_whole_block_planes_splits_too() -> None:
    """ShuffleNet's first stage (28x28 planes, whole blocks) took one core."""
    one, _ = _run((1, 2, 24, 8, 8), (0, 2, 1, 3, 4), np.float32,
                  "builtin.module(npu-lower{cores=1})")
    many, said = _run((1, 2, 24, 8, 8), (0, 2, 1, 3, 4), np.float32, MANY.format(n=8))
    assert any("ascend.transpose 8" in s for s in said), said
    assert many.cycles < one.cycles


@pytest.mark.parametrize("shape,perm,dtype", [
    ((1, 2, 232, 2, 2), (0, 2, 1, 3, 4), np.float32),  # ShuffleNetV2 x1.0 at 64x64: 2x2 planes
    ((1, 2, 1200, 1, 3), (0, 2, 1, 3, 4), np.float16),
    ((3, 700, 5), (1, 0, 2), np.float32),              # a last chunk shorter than the others
])
def test_rows_under_one_block_gather_in_chunks(shape, perm, dtype) -> None:
    """Rows under one block too many for the element gather in UB: it runs on
    chunks of the result's first dim, each chunk's source box copied to a GM
    scratch first (`transpose_general.gather_in_boxes`)."""
    _run(shape, perm, dtype, "builtin.module(npu-lower{cores=1})")
    _run(shape, perm, dtype, MANY.format(n=4))
