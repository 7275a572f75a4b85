"""Last-axis reductions of rows past the repeat stride in the accumulation
type, made of whole `lanes` segments (`npu.passes.reduce_segments`): two
levels of cross-lane reductions over chunks loaded by one copy; f16 sums
widen a few rows at a time. Numerics against numpy (test_reduce.check),
cycles against the GM bound from the target description: 1024x2048 f16
sums ran at 6.4x it (chunks of one row: the whole chunk widened beside
its f16 copy did not fit more)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from test_reduce import check
from vec_common import NP, func, memref, run

from npu.target import get_target


@pytest.mark.parametrize("op,elem,shape", [
    ("sum", "f16", (37, 2048)),     # several widening groups and an overlapped tail of rows
    ("sum", "f16", (16, 4096)),     # 64 partials a row: one repeat each
    ("max", "f16", (33, 4096)),     # max runs in f16 (128 lanes)
    ("sum", "f32", (9, 2112)),      # 33 partials would not fill blocks: the pieces path
    ("max", "f32", (2, 3, 3072)),
], ids=str)
def test_two_level_reduction(op, elem, shape):
    check(op, elem, shape)


def test_segments_load_each_chunk_in_one_copy():
    from vec_common import compile_source

    src = func("f", "ascend.reduce_sum", [memref((64, 2048), "f16"), memref((64,), "f16")])
    module, _ = compile_source(src, "npu-lower-reduce", None, False)
    text = str(module)
    assert text.count('"cce.copy_gm_to_ub"') == 1 and "n_burst = 1" in text
    assert text.count('"cce.vcadd"') >= 2 and '"cce.vadd"' not in text


@pytest.mark.parametrize("elem,limit", [("f16", 1.6), ("f32", 1.4)])
def test_long_row_sums_stream_at_gm_speed(elem, limit):
    """Cycles within `limit` x the larger of the GM read and write times
    (bench/vector.py's bound; the vector work, one repeat per 64 elements,
    is below both), double-buffered as npu-lower runs it."""
    rows, cols = 1024, 2048
    t = get_target()
    rng = np.random.default_rng(3)
    x = rng.uniform(-4, 4, (rows, cols)).astype(NP[elem])
    src = func("f", "ascend.reduce_sum", [memref((rows, cols), elem), memref((rows,), elem)])
    res = run(src, "npu-lower-reduce", [x, np.zeros(rows, NP[elem])], double_buffer=True)
    es = x.itemsize
    bound = max(math.ceil(rows * cols * es / t.path("gm_to_ub").bytes_per_cycle),
                math.ceil(rows * es / t.path("ub_to_gm").bytes_per_cycle),
                rows * cols // t.lanes(4) * t.vector_cycles("simple"))
    assert res.cycles <= limit * bound, (res.cycles, bound)
    want = x.astype(np.float64).sum(-1)
    np.testing.assert_allclose(res.outputs[1].astype(np.float64), want,
                               rtol=float(np.finfo(NP[elem]).eps), atol=1e-2)
