"""npu-lower-reduce on the simulator vs numpy: sum and max along the last
axis, rows in chunks with overlapped result tails, and rows longer than one
chunk (partial results combined across chunks)."""

from __future__ import annotations

import numpy as np
import pytest

from vec_common import NP, assert_matches, func, memref, run

SHAPES = [(16,), (1, 128), (15, 16), (17, 48), (129, 64), (40, 320), (3, 7, 256), (5, 1024),
          (16, 1024), (33, 16),
          # rows that are not whole blocks: whole blocks + an end-aligned block per row
          (17, 100), (40, 21), (16, 17), (33, 300), (2, 8, 129)]


def expected(op: str, x: np.ndarray) -> np.ndarray:
    r = x.astype(np.float64).sum(-1) if op == "sum" else x.max(-1).astype(np.float64)
    return (r if x.ndim > 1 else r.reshape(1)).astype(x.dtype)


def check(op, elem, shape, lowering="npu-lower-reduce", seed=0):
    rng = np.random.default_rng(seed + sum(shape))
    x = rng.uniform(-4, 4, shape).astype(NP[elem])
    x.flat[0] = 0.0
    out_shape = list(shape[:-1]) or [1]
    src = func("f", f"ascend.reduce_{op}", [memref(shape, elem), memref(out_shape, elem)])
    res = run(src, lowering, [x, np.zeros(out_shape, NP[elem])])
    exp = expected(op, x)
    if op == "max":
        assert np.array_equal(res.outputs[1], exp)
    else:
        # Sums accumulate in f32 (f16 data converted first): each of the N
        # additions rounds with relative error eps32/2 of a partial sum
        # bounded by sum|x|; the result is then rounded once to the element
        # type (one ulp: the f32 sum may sit on the other side of a tie).
        eps32 = float(np.finfo(np.float32).eps)
        bound = shape[-1] * eps32 / 2 * np.abs(x.astype(np.float64)).sum(-1).max()
        assert_matches(res.outputs[1], exp, float(np.finfo(NP[elem]).eps), bound,
                       f"reduce_sum {shape}")


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("elem", ["f16", "f32"])
@pytest.mark.parametrize("op", ["sum", "max"])
def test_reduce(op, elem, shape):
    check(op, elem, shape)


@pytest.mark.parametrize("op,elem,shape", [
    ("sum", "f32", (256, 8)), ("max", "f32", (256, 8)), ("sum", "f16", (256, 16)),
    ("max", "f16", (600, 16)), ("sum", "f32", (513, 24))], ids=str)
def test_reduce_many_short_rows(op, elem, shape):
    # Over max_repeat rows of one chunk: the reduction instructions are
    # split in row groups whose results start on a 32-byte boundary.
    check(op, elem, shape)


@pytest.mark.parametrize("op,elem,shape", [
    ("sum", "f32", (2048, 4)), ("max", "f16", (4000, 5))], ids=str)
def test_short_rows_too_many_for_ub_reduce_in_parts(op, elem, shape):
    # Rows under one block that, expanded 8x / 16x, do not fit UB whole (a
    # GlobalAveragePool of 2x2 maps in NCHW): equal parts of the outer axis.
    check(op, elem, shape)


@pytest.mark.parametrize("op", ["sum", "max"])
def test_reduce_small_chunks(op):
    # 64 rows a chunk at most: several chunks plus an overlapped tail of rows.
    check(op, "f16", (150, 64), "npu-lower-reduce{max-chunk=4096}")


@pytest.mark.parametrize("op", ["sum", "max"])
@pytest.mark.parametrize("elem", ["f16", "f32"])
def test_reduce_long_rows(op, elem):
    # Rows over the repeat-stride limit: column chunks of at most 2048 plus a
    # shorter column tail, combined per row in an accumulator.
    # 17 (f16) / 9 (f32) rows: one block of results plus an overlapped group.
    shape = (17, 4624) if elem == "f16" else (9, 2120)
    check(op, elem, shape, "npu-lower-reduce{max-chunk=2048}")


@pytest.mark.parametrize("op,elem,shape", [
    ("sum", "f32", (40, 2048)), ("max", "f32", (9, 2120)), ("sum", "f16", (17, 4624)),
    ("max", "f16", (5, 4624)), ("sum", "f32", (3, 5, 4096))], ids=str)
def test_reduce_rows_past_the_repeat_stride(op, elem, shape):
    # Rows over 255 blocks that fit a chunk: pieces of whole blocks, one copy
    # per piece for all rows of a chunk (unequal last piece for 2120 f32 and
    # for 4624 f16 max: 2320 + 2304), combined onto the first piece.
    check(op, elem, shape)


@pytest.mark.slow
@pytest.mark.parametrize("op", ["sum", "max"])
def test_reduce_big(op):
    check(op, "f16", (2000, 768))
