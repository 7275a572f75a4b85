"""The compiled dense vector ops (`csrc/vecops.c`, vector_unit's `bound`)
against numpy's ufuncs, bit for bit: for each op, every one of the 65,536
fp16 patterns as one operand against a spread of the other (zeros, NaNs,
infs, subnormals, normals), both ways round; the scalar forms; in place
and shifted overlaps; what it refuses (fp32 among them) keeps the ufunc."""

from __future__ import annotations

import numpy as np
import pytest

from npu.simulator import compiled
from npu.simulator.vector_unit import COMPILED_OPS

cengine = compiled._cengine
pytestmark = pytest.mark.skipif(cengine is None, reason="the extension is not built")

OPS = list(COMPILED_OPS.items())

# fp16: +-0, smallest/largest subnormal, smallest normal, 1, 1+ulp, 65504,
# +-inf, quiet and signalling NaNs of both signs, and some ordinary values.
SPREAD16 = np.array([0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x83ff, 0x3c00, 0x3c01,
                     0xbc00, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0xfe00, 0x7c01, 0x7d55,
                     0xfd00, 0x3555, 0x4248, 0xc0e3, 0x1234, 0x0200, 0x5640, 0x2e66, 0x7800],
                    dtype=np.uint16)


def _same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (f"{what}: {bad.size} differ, first at {bad[0]}: "
                           f"{got[bad[0]]:#x} vs numpy {want[bad[0]]:#x}")


def _binary(ufunc, code: int, x: np.ndarray, y: np.ndarray) -> None:
    """x op y elementwise, C against numpy, on fp16 bit patterns x and y."""
    a, b = x.astype(np.uint16).view(np.float16), y.astype(np.uint16).view(np.float16)
    want = np.empty_like(a)
    with np.errstate(all="ignore"):
        ufunc(a, b, want)
    got = np.empty_like(a)
    op = cengine.vec_op(code, got, a, b, 0)
    assert op is not None
    op()
    _same(got.view(np.uint16), want.view(np.uint16), ufunc.__name__)


@pytest.mark.parametrize("ufunc,code", OPS, ids=[u.__name__ for u, _ in OPS])
def test_fp16_every_pattern(ufunc, code):
    every = np.arange(65536, dtype=np.uint32)
    for other in SPREAD16:
        spread = np.full(65536, other, dtype=np.uint32)
        _binary(ufunc, code, every, spread)
        _binary(ufunc, code, spread, every)


@pytest.mark.parametrize("ufunc,code", OPS, ids=[u.__name__ for u, _ in OPS])
def test_fp16_ordinary_values(ufunc, code):
    """Random operands of magnitude 2^-6..2^7 (either sign) and zeros: whole
    128-lane blocks of them take the branch-free path (a subnormal, inf or
    NaN anywhere in a block sends it to the element-wise one)."""
    rng = np.random.default_rng(11)
    n = 1 << 18
    x, y = (rng.integers(0x2400, 0x57ff, n, dtype=np.uint32)
            | (rng.integers(0, 2, n, dtype=np.uint32) << 15) for _ in range(2))
    y[::97] = 0
    _binary(ufunc, code, x, y)


@pytest.mark.parametrize("ufunc,code", OPS, ids=[u.__name__ for u, _ in OPS])
def test_scalar_forms(ufunc, code):
    a = np.arange(65536, dtype=np.uint16).view(np.float16)
    for bits in SPREAD16:
        want = np.empty_like(a)
        with np.errstate(all="ignore"):
            ufunc(a, np.uint16(bits).view(np.float16), want)
        got = np.empty_like(a)
        cengine.vec_op(code, got, a, None, int(bits))()
        _same(got.view(np.uint16), want.view(np.uint16), f"{ufunc.__name__} scalar {bits:#x}")


@pytest.mark.parametrize("shift", [-3, -1, 0, 1, 5])
def test_overlapping_operands_as_numpy(shift):
    """dst over src0 (in place, or shifted: numpy reads the inputs first)."""
    rng = np.random.default_rng(3)
    base = rng.standard_normal(300).astype(np.float16)
    other = rng.standard_normal(128).astype(np.float16)
    want, got = base.copy(), base.copy()
    np.add(want[100:228], other, want[100 + shift:228 + shift])
    cengine.vec_op(COMPILED_OPS[np.add], got[100 + shift:228 + shift], got[100:228], other, 0)()
    _same(got.view(np.uint16), want.view(np.uint16), f"overlap {shift}")


def test_refused_views_keep_the_ufunc():
    """What the loop does not take (strided, fp32 or mixed types, unequal
    lengths, an unknown op) is None."""
    a = np.zeros(256, dtype=np.float16)
    f = np.zeros(128, dtype=np.float32)
    assert cengine.vec_op(0, a[::2], a[:128], a[:128], 0) is None
    assert cengine.vec_op(0, a[:128], f, a[:128], 0) is None
    assert cengine.vec_op(0, f, f, f, 0) is None
    assert cengine.vec_op(0, a[:128], a[:127], a[:128], 0) is None
    assert cengine.vec_op(len(COMPILED_OPS), a[:128], a[:128], a[:128], 0) is None
    assert cengine.vec_op(0, a[:128], a[:128], a[:128], 0) is not None
