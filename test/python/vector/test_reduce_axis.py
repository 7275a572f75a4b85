"""npu-lower-reduce along a chosen axis, keepdims both ways, and reduce_min,
on the simulator vs numpy."""

from __future__ import annotations

import numpy as np
import pytest

from vec_common import NP, assert_matches, func, memref, run

FNS = {"sum": np.sum, "max": np.max, "min": np.min}


def check(op, elem, shape, axis, keepdims=False, lowering="npu-lower-reduce", seed=0):
    rng = np.random.default_rng(seed + sum(shape))
    x = rng.uniform(-4, 4, shape).astype(NP[elem])
    expected = FNS[op](x.astype(np.float64), axis=axis, keepdims=keepdims)
    out_shape = list(expected.shape) or [1]
    expected = expected.reshape(out_shape)
    attrs = f"axis = {axis} : i64"
    src = func("f", f"ascend.reduce_{op}", [memref(shape, elem), memref(out_shape, elem)], attrs)
    got = run(src, lowering, [x, np.zeros(out_shape, NP[elem])]).outputs[1]
    if op != "sum":
        np.testing.assert_array_equal(got, expected.astype(NP[elem]))
        return
    # f32 accumulation of R terms, then one rounding to the element type.
    r = shape[axis]
    eps32 = float(np.finfo(np.float32).eps)
    bound = r * eps32 / 2 * np.abs(x.astype(np.float64)).sum(axis=axis).max()
    assert_matches(got, expected.astype(NP[elem]), float(np.finfo(NP[elem]).eps), bound,
                   f"reduce_sum axis {axis} {shape}")


@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("elem", ["f16", "f32"])
@pytest.mark.parametrize("shape,axis", [
    ((12, 64), 0),          # column sums, rows whole blocks (one strided copy a batch)
    ((7, 3, 100), 1),       # rows of 100: not whole blocks (a copy per row), overlap tail
    ((5, 40), -2),
    ((2, 6, 16, 8), 1),     # inner = 128
    ((4, 33, 1), 1),        # trailing size-1 dim: the row reduction
])
def test_reduce_axis(op, elem, shape, axis):
    check(op, elem, shape, axis)


@pytest.mark.parametrize("op", ["sum", "max"])
def test_reduce_keepdims(op):
    check(op, "f32", (6, 40, 24), 1, keepdims=True)
    check(op, "f16", (6, 40, 24), -1, keepdims=True)


@pytest.mark.parametrize("op,elem,shape,axis", [
    ("sum", "f32", (3, 5), 0),         # inner 5 under one f32 block
    ("max", "f16", (2, 10), -1),       # softmax-style short rows
    ("sum", "f16", (2, 10), 1),        # f32 accumulation of short rows
    ("min", "f32", (4, 10, 3), 1),
    ("sum", "f16", (7,), 0),
    ("max", "f32", (3, 4, 5), 0),
    ("sum", "f32", (2, 3, 4, 5), 2),
])
def test_reduce_short_rows(op, elem, shape, axis):
    """Rows or trailing runs under one 32-byte block: the UB rearrangement."""
    check(op, elem, shape, axis)


def test_reduce_min_last_axis():
    check("min", "f16", (17, 100), -1)


def test_reduce_axis_small_chunks():
    # 64 columns a piece and 2 rows a batch: several column pieces (with an
    # overlapped tail) and row batches with a shorter last one.
    check("sum", "f16", (3, 7, 200), 1, lowering="npu-lower-reduce{max-chunk=128}")


@pytest.mark.slow
@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("elem", ["f16", "f32"])
@pytest.mark.parametrize("shape,axis", [((128, 768), 0), ((12, 128, 128), 0), ((3, 500, 77), 1),
                                        ((2, 3, 4, 5, 48), 2)])
def test_reduce_axis_large(op, elem, shape, axis):
    check(op, elem, shape, axis)
