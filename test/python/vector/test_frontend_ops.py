"""The ascend ops the ONNX frontend needs, on the simulator vs numpy: erf,
cmp, select, broadcast, general broadcasting of the binary ops, and every
cast pair (npu-lower-elementwise)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from npu.reference import cast as reference_cast
from vec_common import NP, assert_matches, func, memref, run

LOWER = "npu-lower-elementwise"
SMALL_CHUNKS = "npu-lower-elementwise{max-chunk=256}"


def erf64(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64))


# Abramowitz & Stegun 7.1.26 is within 1.5e-7; its f32 evaluation adds a few
# rounding errors of values below 1 (npu.costmodel.vector.recipes): 4e-7 absolute.
ERF_ATOL = 4e-7


@pytest.mark.parametrize("elem,shape", [("f32", (1000,)), ("f32", (3, 37)), ("f16", (1000,)),
                                        ("f16", (5, 129))])
def test_erf(elem, shape):
    rng = np.random.default_rng(1)
    x = rng.uniform(-4.5, 4.5, size=shape).astype(NP[elem])
    flat = x.reshape(-1)
    flat[:8] = [0.0, -0.0, np.inf, -np.inf, 1e-3, -1e-3, 6.0, -6.0]
    if elem == "f32":
        flat[8:10] = [1e-20, -1e-35]
    out = np.zeros_like(x)
    src = func("f", "ascend.erf", [memref(shape, elem), memref(shape, elem)])
    got = run(src, SMALL_CHUNKS, [x, out]).outputs[1]
    expected = erf64(x)
    if elem == "f16":
        # The f32 result rounded once to f16: half an f16 ulp plus the f32 error.
        assert_matches(got, expected, float(np.finfo(np.float16).eps) / 2, ERF_ATOL, "erf f16")
    else:
        assert_matches(got, expected, 0.0, ERF_ATOL, "erf f32")
    assert got.reshape(-1)[0] == 0 and got.reshape(-1)[2] == 1 and got.reshape(-1)[3] == -1


def test_erf_nan_stays_nan():
    x = np.full(64, np.nan, np.float32)
    x[1] = 0.5
    src = func("f", "ascend.erf", [memref([64], "f32"), memref([64], "f32")])
    got = run(src, LOWER, [x, np.zeros_like(x)]).outputs[1]
    assert np.isnan(got[0]) and abs(got[1] - math.erf(0.5)) < ERF_ATOL


CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
       "gt": np.greater, "ge": np.greater_equal}


def _operand(rng, shape, elem):
    if elem == "i32":
        return rng.integers(-3, 3, size=shape).astype(np.int32)
    return rng.integers(-3, 3, size=shape).astype(NP[elem]) * NP[elem](0.5)


@pytest.mark.parametrize("pred", sorted(CMP))
@pytest.mark.parametrize("elem", ["f16", "f32", "i32"])
def test_cmp_predicates(pred, elem):
    """Same-shape operands with many equal values; f32 NaN compares unequal."""
    rng = np.random.default_rng(2)
    shape = (3, 70)
    a, b = _operand(rng, shape, elem), _operand(rng, shape, elem)
    if elem != "i32":
        a[0, :3] = [np.nan, 1.0, np.inf]
        b[0, :3] = [np.nan, np.nan, np.inf]
    src = func("f", "ascend.cmp", [memref(shape, elem)] * 2 + [memref(shape, "i8")],
               f'predicate = "{pred}"')
    got = run(src, LOWER, [a, b, np.full(shape, 7, np.int8)]).outputs[2]
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(got, CMP[pred](a, b).astype(np.int8))


@pytest.mark.parametrize("lhs,rhs,out", [
    ((4, 100), (100,), (4, 100)),       # row
    ((40, 1), (40, 33), (40, 33)),      # column (f32)
    ((1,), (3, 50), (3, 50)),           # scalar
    ((6, 16, 40), (6, 1, 40), (6, 16, 40)),  # loop over the leading dim
])
def test_cmp_broadcast(lhs, rhs, out):
    rng = np.random.default_rng(3)
    a, b = _operand(rng, lhs, "f32"), _operand(rng, rhs, "f32")
    src = func("f", "ascend.cmp", [memref(lhs, "f32"), memref(rhs, "f32"), memref(out, "i8")],
               'predicate = "lt"')
    got = run(src, LOWER, [a, b, np.zeros(out, np.int8)]).outputs[2]
    np.testing.assert_array_equal(got, np.less(a, b).astype(np.int8))


@pytest.mark.parametrize("elem", ["f16", "f32", "i32"])
@pytest.mark.parametrize("cond_shape,a_shape,b_shape,out", [
    ((4, 130), (4, 130), (4, 130), (4, 130)),
    ((130,), (4, 130), (1,), (4, 130)),          # attention-style mask row, scalar fill
    ((3, 1, 64), (3, 5, 64), (64,), (3, 5, 64)),  # loop over the leading dim
])
def test_select(elem, cond_shape, a_shape, b_shape, out):
    """where(cond, a, b); the unselected side holds inf / NaN / huge values
    that must not reach the result."""
    rng = np.random.default_rng(4)
    cond = rng.integers(0, 3, size=cond_shape).astype(np.int8) - 1  # -1, 0, 1
    a = _operand(rng, a_shape, elem)
    b = _operand(rng, b_shape, elem)
    if elem != "i32":
        a.reshape(-1)[::7] = -np.inf
        b.reshape(-1)[::3] = np.nan
    else:
        a.reshape(-1)[::7] = np.iinfo(np.int32).min
    src = func("f", "ascend.select", [memref(cond_shape, "i8"), memref(a_shape, elem),
                                      memref(b_shape, elem), memref(out, elem)])
    got = run(src, LOWER, [cond, a, b, np.zeros(out, NP[elem])]).outputs[3]
    expected = np.where(cond != 0, a, b)
    assert_matches(got, np.broadcast_to(expected, out), 0.0, 0.0, "select")


@pytest.mark.parametrize("elem,src_shape,out", [
    ("f32", (100,), (4, 100)),
    ("f16", (40, 1), (40, 64)),
    ("f32", (1,), (37,)),
    ("i32", (3, 1, 40), (3, 5, 40)),
    ("f16", (2, 1, 3, 1, 16), (2, 4, 3, 5, 16)),
])
def test_broadcast_op(elem, src_shape, out):
    rng = np.random.default_rng(5)
    x = _operand(rng, src_shape, elem)
    src = func("f", "ascend.broadcast", [memref(src_shape, elem), memref(out, elem)])
    got = run(src, LOWER, [x, np.zeros(out, NP[elem])]).outputs[1]
    np.testing.assert_array_equal(got, np.broadcast_to(x, out))


@pytest.mark.parametrize("op,fn", [("add", np.add), ("mul", np.multiply), ("max", np.maximum)])
@pytest.mark.parametrize("lhs,rhs,out", [
    ((32, 1), (1, 96), (32, 96)),             # outer product shape
    ((12, 16, 64), (1, 1, 64), (12, 16, 64)),  # per-row bias over all leading dims
    ((96,), (20, 96), (20, 96)),
    ((5, 1, 40), (1, 6, 40), (5, 6, 40)),     # both broadcast: loop + row
    ((2, 3, 40), (2, 1, 1), (2, 3, 40)),      # merges to a column
    ((3, 4, 8, 16), (3, 1, 8, 1), (3, 4, 8, 16)),  # loop + column
])
def test_general_broadcast(op, fn, lhs, rhs, out):
    rng = np.random.default_rng(6)
    a = rng.uniform(-2, 2, size=lhs).astype(np.float32)
    b = rng.uniform(-2, 2, size=rhs).astype(np.float32)
    src = func("f", f"ascend.{op}", [memref(lhs, "f32"), memref(rhs, "f32"), memref(out, "f32")])
    got = run(src, LOWER, [a, b, np.zeros(out, np.float32)]).outputs[2]
    np.testing.assert_array_equal(got, fn(a, b))


SMALL = {"add": np.add, "mul": np.multiply, "sub": np.subtract}


@pytest.mark.parametrize("op,shapes,elem", [
    ("add", [(2, 10), (10,), (2, 10)], "f16"),          # row under one f16 block
    ("mul", [(3, 1), (3, 7), (3, 7)], "f32"),           # column against short rows
    ("mul", [(4, 6, 8), (4, 1, 8), (4, 6, 8)], "f16"),  # loop slices under one block
    ("sub", [(5, 1, 3), (1, 4, 3), (5, 4, 3)], "i32"),  # both broadcast, odd sizes
    ("add", [(10, 1, 3), (10, 1, 1), (10, 4, 3)], "f32"),
])
def test_small_broadcasts(op, shapes, elem):
    """Broadcasts the tiled lowering cannot place: the whole-tensor fallback."""
    rng = np.random.default_rng(8)
    a, b = (_operand(rng, s, elem) for s in shapes[:2])
    src = func("f", f"ascend.{op}", [memref(s, elem) for s in shapes])
    got = run(src, LOWER, [a, b, np.zeros(shapes[2], NP[elem])]).outputs[2]
    np.testing.assert_array_equal(got, np.broadcast_to(SMALL[op](a, b), shapes[2]))


def test_small_broadcasts_i8_cond_column_and_cmp_short_rows():
    rng = np.random.default_rng(9)
    cond = rng.integers(0, 2, size=(3, 1)).astype(np.int8)
    a = _operand(rng, (3, 7), "f32")
    b = np.array([np.nan], np.float32)
    src = func("f", "ascend.select", [memref((3, 1), "i8"), memref((3, 7), "f32"),
                                      memref((1,), "f32"), memref((3, 7), "f32")])
    got = run(src, LOWER, [cond, a, b, np.zeros((3, 7), np.float32)]).outputs[3]
    assert_matches(got, np.where(cond != 0, a, b), 0.0, 0.0, "select i8 column")
    x, row = _operand(rng, (2, 10), "f16"), _operand(rng, (10,), "f16")
    src = func("f", "ascend.cmp", [memref((2, 10), "f16"), memref((10,), "f16"),
                                   memref((2, 10), "i8")], 'predicate = "gt"')
    got = run(src, LOWER, [x, row, np.zeros((2, 10), np.int8)]).outputs[2]
    np.testing.assert_array_equal(got, (x > row).astype(np.int8))


CAST_VALUES = np.array([0.0, -0.0, 1.5, 2.5, -2.5, -0.5, 0.49, 100.7, -128.4, 127.6, 300.0,
                        -1000.0, 65504.0, 70000.0, -3e9, 3e9, 1e-3, 2049.0, 16777217.0])


def _cast_input(src: str, n: int, rng) -> np.ndarray:
    if src in ("i8", "i32"):
        info = np.iinfo(NP[src])
        edge = np.array([0, 1, -1, info.min, info.max, 127, -128, 2049, 65519, 70000,
                         16777217], np.int64)
        x = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=np.int64)
        x[:len(edge)] = np.clip(edge, info.min, info.max)
        return x.astype(NP[src])
    with np.errstate(over="ignore"):
        x = rng.uniform(-300, 300, size=n).astype(NP[src])
        x[:len(CAST_VALUES)] = CAST_VALUES.astype(NP[src])
    x[len(CAST_VALUES)] = np.nan
    return x


PAIRS = [(a, b) for a in ("f32", "f16", "i32", "i8") for b in ("f32", "f16", "i32", "i8") if a != b]


@pytest.mark.parametrize("src,dst", PAIRS, ids=lambda v: str(v))
@pytest.mark.parametrize("mode", ["rint", "floor"])
def test_cast_every_pair(src, dst, mode):
    rng = np.random.default_rng(7)
    n = 300
    x = _cast_input(src, n, rng)
    program = func("f", "ascend.cast", [memref([n], src), memref([n], dst)],
                   f'round_mode = "{mode}"')
    got = run(program, LOWER, [x, np.zeros(n, NP[dst])]).outputs[1]
    with np.errstate(invalid="ignore", over="ignore"):
        expected = reference_cast(x, NP[dst], mode)
    assert_matches(got, expected, 0.0, 0.0, f"cast {src}->{dst} {mode}")


@pytest.mark.parametrize("shape,axis", [((2, 37, 24), 1), ((3, 10), -1), ((4, 5, 6), 0)])
def test_softmax_composed_along_any_axis(shape, axis):
    """Softmax as the frontend composes it: reduce_max (keepdims), sub with
    broadcasting, exp, reduce_sum (keepdims), div with broadcasting; the
    intermediates are GM temporaries. Through the lowerings, memory planning
    and sync insertion, against numpy."""
    kept = [1 if i == axis % len(shape) else d for i, d in enumerate(shape)]
    t, k = memref(shape, "f32"), memref(kept, "f32")
    src = (f"func.func @softmax(%x: {t}, %y: {t}) {{\n"
           f'  %m = memref.alloc() : {k}\n  %e = memref.alloc() : {t}\n  %s = memref.alloc() : {k}\n'
           f'  "ascend.reduce_max"(%x, %m) {{axis = {axis} : i64}} : ({t}, {k}) -> ()\n'
           f'  "ascend.sub"(%x, %m, %e) : ({t}, {k}, {t}) -> ()\n'
           f'  "ascend.exp"(%e, %e) : ({t}, {t}) -> ()\n'
           f'  "ascend.reduce_sum"(%e, %s) {{axis = {axis} : i64}} : ({t}, {k}) -> ()\n'
           f'  "ascend.div"(%e, %s, %y) : ({t}, {k}, {t}) -> ()\n  return\n}}\n')
    x = np.random.default_rng(10).uniform(-5, 5, size=shape).astype(np.float32)
    got = run(src, "npu-lower-elementwise,npu-lower-reduce",
              [x, np.zeros(shape, np.float32)]).outputs[1]
    e = np.exp(x.astype(np.float64) - x.max(axis=axis, keepdims=True))
    expected = e / e.sum(axis=axis, keepdims=True)
    # exp within 4 f32 ulps, a sum of n terms, one division: 1e-5 relative.
    assert_matches(got, expected, 1e-5, 1e-7, f"softmax axis {axis} {shape}")
