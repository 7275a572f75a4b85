"""The polynomial of GELU's f16 recipe (`recipes.GELU_LOG_PHI_F16`):
ln Phi(-a) on a = |x| in [0, GELU_F16_CLAMP] by a degree-5 polynomial, for
epilogues computed in f16 (`npu-fuse` epilogue-f16).

First a float64 fit by weighted least squares with Lawson's reweighting
towards the minimax, the weight being what an error dH does to the result
in f16 ulps (a Phi(-a) dH over the ulp of GELU(+-a), the smaller of the
two signs, floored at 1e-3). Then, because the recipe runs in f16 (each
coefficient rounded to f16, each Horner step rounded), a coordinate search
over neighbouring f16 values of each coefficient, scoring the recipe itself
on all 65,536 f16 inputs as the simulator computes it
(`vector_numerics.run_steps`) against float64 GELU of the same input: mean
error in ulps of the result plus a hundredth of the largest.

Degrees 4 / 5 / 6 give max 15.5 / 15.3 / 15.9 ulps (the rounding of the
exp argument, |H| up to 10 where it matters, dominates any degree) and
mean 0.37 / 0.24 / 0.24 ulps before the search: degree 5 is where the fit
stops mattering.

    .venv/bin/python bench/gelu_f16_fit.py [--degree 5] [--no-search]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from gelu_log_phi_fit import lawson

FLOOR = 1e-3


def all_f16() -> np.ndarray:
    """Every f16 bit pattern."""
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)


def gelu64(x: np.ndarray) -> np.ndarray:
    """GELU in float64 without cancelling: 0.5 x erfc(-x / sqrt 2)."""
    x = x.astype(np.float64)
    return 0.5 * x * np.vectorize(math.erfc)(-x / math.sqrt(2))


def ulp_errors(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """|y - GELU(x)| in ulps of GELU(x) rounded to f16 (at least the
    smallest subnormal), for the finite x."""
    finite = np.isfinite(x)
    want = gelu64(x[finite])
    with np.errstate(over="ignore"):
        ulp = np.spacing(np.abs(want.astype(np.float16))).astype(np.float64)
    ulp = np.where(np.isfinite(ulp), np.maximum(ulp, 2.0 ** -24), 32.0)  # 65504: ulp 32
    return np.abs(y[finite].astype(np.float64) - want) / ulp


def fit(degree: int, clamp: float, rounds: int = 400, points: int = 3000) -> list[float]:
    a = np.linspace(0, clamp, points)
    tail = 0.5 * np.vectorize(math.erfc)(a / math.sqrt(2))  # Phi(-a)
    g = a * tail
    with np.errstate(over="ignore"):
        neg = np.spacing(g.astype(np.float16)).astype(np.float64)
        pos = np.spacing((a - g).astype(np.float16)).astype(np.float64)
    weight = np.maximum(g / np.maximum(np.minimum(neg, pos), 2.0 ** -24), FLOOR)
    basis = a[:, None] ** np.arange(degree + 1)[None, :] * weight[:, None]
    return lawson(basis, np.log(tail) * weight, rounds)[1]


def score(coef: list[float], clamp: float, x: np.ndarray) -> tuple[float, np.ndarray]:
    from npu.simulator.vector_numerics import run_steps
    from npu.costmodel.vector.recipes import gelu_log_phi_steps

    u = ulp_errors(run_steps(gelu_log_phi_steps(coef, clamp), x), x)
    return float(u.mean() + 0.01 * u.max()), u


def search(coef: list[float], clamp: float, x: np.ndarray, reach: int = 4) -> list[float]:
    """Coordinate descent over f16 neighbours (up to `reach` steps) of each coefficient."""
    coef = [float(np.float16(c)) for c in coef]
    best, _ = score(coef, clamp, x)
    improved = True
    while improved:
        improved = False
        for k in range(len(coef)):
            for step in range(-reach, reach + 1):
                c = np.float16(coef[k])
                for _ in range(abs(step)):
                    c = np.nextafter(c, np.float16(np.inf if step > 0 else -np.inf))
                trial = coef[:k] + [float(c)] + coef[k + 1:]
                s, _ = score(trial, clamp, x)
                if s < best - 1e-12:
                    best, coef, improved = s, trial, True
    return coef


def main() -> None:
    from npu.costmodel.vector.recipes import GELU_F16_CLAMP

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--degree", type=int, default=5)
    p.add_argument("--no-search", action="store_true")
    args = p.parse_args()
    x = all_f16()
    coef = fit(args.degree, GELU_F16_CLAMP)
    _, u = score(coef, GELU_F16_CLAMP, x)
    print(f"degree {args.degree} float64 fit: max {u.max():.3f} ulps, mean {u.mean():.4f}, "
          f"{(u > 1).sum()} inputs over 1 ulp")
    if not args.no_search:
        coef = search(coef, GELU_F16_CLAMP, x)
        _, u = score(coef, GELU_F16_CLAMP, x)
        print(f"after the f16 search: max {u.max():.3f} ulps, mean {u.mean():.4f}, "
              f"{(u > 1).sum()} inputs over 1 ulp")
    print("GELU_LOG_PHI_F16 = (" + ", ".join(repr(c) for c in coef) + ")")


if __name__ == "__main__":
    main()
