"""npu.reference for the ops added for the frontend, against independent
formulas: erf, cmp, select, broadcast, reductions along an axis (keepdims
both ways, reduce_min) and the integer casts."""

from __future__ import annotations

import math

import numpy as np

from test_reference_semantics import run

RNG = np.random.default_rng(99)


def test_erf_is_math_erf_rounded_once():
    x = RNG.uniform(-3, 3, size=(4, 16)).astype(np.float32)
    out = run([((4, 16), np.float32)] * 2, [("ascend.erf", [0, 1], "")],
              [x, np.zeros_like(x)])[1]
    expected = np.array([[math.erf(float(v)) for v in row] for row in x], np.float32)
    np.testing.assert_array_equal(out, expected)


def test_cmp_broadcasts_and_nan_is_unequal():
    a = np.array([[1.0, np.nan, 3.0], [0.0, 2.0, -1.0]], np.float32)
    b = np.array([1.0, np.nan, 0.0], np.float32)
    args = [((2, 3), np.float32), ((3,), np.float32), ((2, 3), np.int8)]
    eq = run(args, [("ascend.cmp", [0, 1, 2], '{predicate = "eq"}')],
             [a, b, np.zeros((2, 3), np.int8)])[2]
    ne = run(args, [("ascend.cmp", [0, 1, 2], '{predicate = "ne"}')],
             [a, b, np.zeros((2, 3), np.int8)])[2]
    assert eq.tolist() == [[1, 0, 0], [0, 0, 0]]
    assert ne.tolist() == [[0, 1, 1], [1, 1, 1]]


def test_select_takes_a_where_cond_is_nonzero_without_leaking_b():
    cond = np.array([1, 0, -3, 0], np.int8)
    a = np.arange(8, dtype=np.float16).reshape(2, 4)
    b = np.array([-np.inf], np.float16)
    out = run([((4,), np.int8), ((2, 4), np.float16), ((1,), np.float16), ((2, 4), np.float16)],
              [("ascend.select", [0, 1, 2, 3], "")], [cond, a, b, np.zeros((2, 4), np.float16)])[3]
    assert out.tolist() == [[0, -np.inf, 2, -np.inf], [4, -np.inf, 6, -np.inf]]


def test_broadcast_is_broadcast_to():
    x = np.array([[1], [2], [3]], np.int32)
    out = run([((3, 1), np.int32), ((2, 3, 4), np.int32)], [("ascend.broadcast", [0, 1], "")],
              [x, np.zeros((2, 3, 4), np.int32)])[1]
    assert (out == np.broadcast_to(x, (2, 3, 4))).all()


def test_reductions_along_an_axis_keepdims_both_ways():
    x = RNG.uniform(-1, 1, size=(3, 4, 5)).astype(np.float32)
    s = run([((3, 4, 5), np.float32), ((3, 5), np.float32)],
            [("ascend.reduce_sum", [0, 1], "{axis = 1 : i64}")], [x, np.zeros((3, 5), np.float32)])[1]
    np.testing.assert_allclose(s, x.astype(np.float64).sum(1), rtol=1e-6)
    m = run([((3, 4, 5), np.float32), ((1, 4, 5), np.float32)],
            [("ascend.reduce_min", [0, 1], "{axis = -3 : i64}")], [x, np.zeros((1, 4, 5), np.float32)])[1]
    assert (m == x.min(0, keepdims=True)).all()


def test_integer_casts_saturate_and_i32_to_f16_rounds_by_mode():
    x = np.array([-200, -128, 5, 127, 300, 70000], np.int32)
    out = run([((6,), np.int32), ((6,), np.int8)], [("ascend.cast", [0, 1], '{round_mode = "rint"}')],
              [x, np.zeros(6, np.int8)])[1]
    assert out.tolist() == [-128, -128, 5, 127, 127, 127]
    big = np.array([2049, 70000], np.int32)
    down = run([((2,), np.int32), ((2,), np.float16)], [("ascend.cast", [0, 1], '{round_mode = "floor"}')],
               [big, np.zeros(2, np.float16)])[1]
    assert down.tolist() == [2048.0, 65504.0]
