"""GELU's f16 recipe (`recipes.gelu_erf_recipe_f16`, for matmul
epilogues computed in f16) on every one of the 65,536 f16 inputs, as the
simulator computes each step (`vector_numerics.run_steps`), against float64
GELU of the same f16 input, in f16 ulps of the result. The bounds are the
measured figures (bench/gelu_f16_fit.py): moving any coefficient by one f16
step breaks them, and the test shows that it does."""

from __future__ import annotations

import math

import numpy as np
import pytest

from npu.simulator.vector_numerics import run_steps
from npu.costmodel.vector import recipes as vc

# Measured: largest error 15.33 ulps at x = -3.832 (|GELU| = 2.4e-4: the
# rounding of the exp argument H ~ -9.6), mean 0.2378 ulps; within 2.15
# ulps for x >= -1, 7.04 on [-3, -1), 2.9 below -4.5.
MAX_ULPS, MEAN_ULPS = 15.327, 0.23781
REGION_MAX_ULPS = ((-1.0, np.inf, 2.15), (-3.0, -1.0, 7.04), (-4.5, -3.0, 15.327),
                   (-np.inf, -4.5, 2.89))
MAX_ABS = 1.032e-3  # the result's own f16 rounding near x = 2


def all_f16() -> np.ndarray:
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)


def gelu64(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return 0.5 * x * np.vectorize(math.erfc)(-x / math.sqrt(2))


def ulp_of(want: np.ndarray) -> np.ndarray:
    """The f16 ulp of each float64 result (the subnormal step at least; 32
    where it rounds past the f16 range)."""
    with np.errstate(over="ignore"):
        ulp = np.spacing(np.abs(want.astype(np.float16))).astype(np.float64)
    return np.where(np.isfinite(ulp), np.maximum(ulp, 2.0 ** -24), 32.0)


X = all_f16()
FINITE = np.isfinite(X)
WANT = gelu64(X[FINITE])
ULP = ulp_of(WANT)


def errors(coef) -> np.ndarray:
    steps = vc.gelu_log_phi_steps(list(coef), vc.GELU_F16_CLAMP)
    y = run_steps(steps, X)
    return np.abs(y[FINITE].astype(np.float64) - WANT) / ULP


def assert_f16_recipe(steps, want: np.ndarray, ulp: np.ndarray, bounds: tuple,
                      instructions: int) -> None:
    """An f16 GELU recipe over every f16 input against `want` (float64, the
    finite inputs): within `bounds` = (max ulps, mean ulps, ((lo, hi, max
    ulps) per region), max abs); inf -> inf, -inf -> 0, NaN -> NaN; that many
    instructions, none of them a conversion (all in f16)."""
    most, mean, regions, absolute = bounds
    with np.errstate(all="ignore"):
        y = run_steps(steps, X)
    u = np.abs(y[FINITE].astype(np.float64) - want) / ulp
    print(f"max {u.max():.4f} ulps at {X[FINITE][u.argmax()]}, mean {u.mean():.5f}")
    assert u.max() <= most and u.mean() <= mean
    xf = X[FINITE].astype(np.float64)
    for lo, hi, bound in regions:
        assert u[(xf >= lo) & (xf < hi)].max() <= bound, (lo, hi)
    assert np.abs(y[FINITE].astype(np.float64) - want).max() <= absolute
    assert y[X == np.inf][0] == np.inf and y[X == -np.inf][0] == 0
    assert np.isnan(y[np.isnan(X)]).all()
    assert len(steps) == instructions and all(s.op != "cce.vconv" for s in steps)


def test_gelu_f16_recipe_exhaustive_error():
    # (-inf -> -0: a clamped at GELU_F16_CLAMP.)
    assert_f16_recipe(vc.gelu_erf_recipe_f16(1 / math.sqrt(2)), WANT, ULP,
                      (MAX_ULPS, MEAN_ULPS, REGION_MAX_ULPS, MAX_ABS), 12)


@pytest.mark.parametrize("k", range(len(vc.GELU_LOG_PHI_F16)))
def test_moving_a_coefficient_breaks_the_bounds(k):
    """One f16 step either way in any coefficient exceeds the measured
    mean or maximum: the bounds pin the coefficients."""
    for toward in (np.inf, -np.inf):
        coef = list(vc.GELU_LOG_PHI_F16)
        coef[k] = float(np.nextafter(np.float16(coef[k]), np.float16(toward)))
        u = errors(coef)
        assert u.max() > MAX_ULPS or u.mean() > MEAN_ULPS, (k, toward)
