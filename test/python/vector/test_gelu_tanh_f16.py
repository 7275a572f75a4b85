"""The tanh GELU's f16 recipe (`recipes.gelu_tanh_recipe_f16`, for matmul
epilogues computed in f16: GPT-2's gelu_new) on every one of the 65,536
f16 inputs, as the simulator computes each step (`vector_numerics.run_steps`),
against float64 tanh-GELU of the same f16 input, in f16 ulps of the result.
The bounds are the measured figures; the naive f16 form (the f32 recipe's
x / (1 + exp(-2u)) run on f16 lanes, whose exp overflows for x below about
-4) is far outside them."""

from __future__ import annotations

import math

import numpy as np

from npu.simulator.vector_numerics import run_steps
from npu.costmodel.vector import recipes as vc
from test_gelu_f16 import FINITE, X, assert_f16_recipe, ulp_of

CUBE, SCALE = 0.044715, math.sqrt(2 / math.pi)
# Measured: largest error 14.83 ulps at x = -3.727 (|GELU| = 1.1e-4: the
# rounding of the exp argument, ~ -9.7), mean 0.2577 ulps; within 2.09
# ulps for x >= -1, 9.07 on [-3, -1), 2.6 below -4.5.
MAX_ULPS, MEAN_ULPS = 14.83, 0.2577
REGION_MAX_ULPS = ((-1.0, np.inf, 2.09), (-3.0, -1.0, 9.07), (-4.5, -3.0, 14.83),
                   (-np.inf, -4.5, 2.61))
MAX_ABS = 1.009e-3  # the result's own f16 rounding near x = 2.6


def gelu_tanh64(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    return 0.5 * x * (1 + np.tanh(SCALE * (x + CUBE * x ** 3)))


WANT = gelu_tanh64(X[FINITE])
ULP = ulp_of(WANT)


def ulps(steps) -> tuple[np.ndarray, np.ndarray]:
    with np.errstate(all="ignore"):
        y = run_steps(steps, X)
    return y, np.abs(y[FINITE].astype(np.float64) - WANT) / ULP


def test_gelu_tanh_f16_recipe_exhaustive_error() -> None:
    # (-inf -> 0: |x| clamped at GELU_TANH_F16_CLAMP.)
    assert_f16_recipe(vc.gelu_tanh_recipe_f16(CUBE, SCALE), WANT, ULP,
                      (MAX_ULPS, MEAN_ULPS, REGION_MAX_ULPS, MAX_ABS), 11)


def test_the_f32_recipe_on_f16_lanes_fails_and_the_clamp_is_the_least() -> None:
    """The f32 recipe run on f16 lanes is far outside the bounds; the clamp
    is the least f16 value past which the recipe's a e / (1 + e) rounds to 0
    (one step lower, -inf would give a subnormal, not 0)."""
    _, naive = ulps(vc.gelu_tanh_recipe(CUBE, SCALE))
    assert naive.max() > 50 * MAX_ULPS
    lower = float(np.nextafter(np.float16(vc.GELU_TANH_F16_CLAMP), np.float16(0)))
    steps = tuple(s if s.op != "cce.vmins" else vc.Step("cce.vmins", lower, s.dst, s.srcs)
                  for s in vc.gelu_tanh_recipe_f16(CUBE, SCALE))
    y, _ = ulps(steps)
    assert y[X == -np.inf][0] != 0
