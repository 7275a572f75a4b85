"""The polynomial of GELU's vector recipe (`recipes.GELU_LOG_PHI`):
ln Phi(-a) on a = |x| in [0, 10] by a degree-8 polynomial, fitted in
float64 by weighted least squares with Lawson's reweighting towards the
minimax.

GELU(x) = relu(x) - a Phi(-a), so an error dH in H = ln Phi(-a) moves GELU
by a Phi(-a) dH. The weight is that factor over min(1, a) (the error
relative to |x| near 0 counts as much as the absolute error elsewhere),
floored at 1e-7 so that H stays within ~0.5 of ln Phi(-a) up to the clamp
at 10 (GELU(-inf) then comes out ~1e-22, not inf or a visible value).
Degrees 7 / 8 / 9 reach 1.4e-7 / 4.3e-8 / 1.8e-8 in those units; in f32 on
the simulator degree 7 exceeds the old recipe's max |error| (3.5e-7
against 3.31e-7), degree 8 stays below it (2.7e-7) at 18 cycles per repeat
(bench/vector_recipes.py).

    .venv/bin/python bench/gelu_log_phi_fit.py [--degree 8]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

CLAMP = 10.0
FLOOR = 1e-7


def fit(degree: int, rounds: int = 600, points: int = 2500) -> tuple[float, list[float]]:
    """(max weighted error, ascending coefficients) of the best fit found."""
    a = np.linspace(0, CLAMP, points)
    tail = 0.5 * np.vectorize(math.erfc)(a / math.sqrt(2))  # Phi(-a)
    weight = np.maximum(a * tail / np.maximum(np.minimum(a, 1.0), 1e-4), FLOOR)
    basis = a[:, None] ** np.arange(degree + 1)[None, :] * weight[:, None]
    return lawson(basis, np.log(tail) * weight, rounds)


def lawson(basis: np.ndarray, target: np.ndarray, rounds: int) -> tuple[float, list[float]]:
    """Weighted least squares of `basis @ coef ~ target`, reweighted
    (Lawson) towards the minimax: (max error, coefficients) of the best round."""
    points = len(target)
    lw = np.full(points, 1 / points)
    best = (np.inf, [])
    for _ in range(rounds):
        s = np.sqrt(lw)
        coef, *_ = np.linalg.lstsq(basis * s[:, None], target * s, rcond=None)
        r = np.abs(basis @ coef - target)
        if r.max() < best[0]:
            best = (float(r.max()), [float(c) for c in coef])
        lw = lw * r + 1e-300
        lw /= lw.sum()
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--degree", type=int, default=8)
    args = p.parse_args()
    err, coef = fit(args.degree)
    print(f"degree {args.degree}: max weighted error {err:.3g}")
    print("GELU_LOG_PHI = (" + ", ".join(repr(c) for c in coef) + ")")


if __name__ == "__main__":
    main()
