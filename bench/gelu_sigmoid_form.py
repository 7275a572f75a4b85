"""Why GELU's recipe is not the sigmoid form x / (1 + exp(-x P(x^2))).

GELU(x) = x Phi(x) = x sigmoid(g(x)) with g = logit(Phi), odd and smooth,
so g(x) = x P(x^2) for a polynomial P would give a recipe of one clamp,
x^2, k Horner steps, * x, vexp, vadds, vdiv: 12 + k cycles per repeat. Two
measurements decide it against the bar, the A&S 7.1.26 erfc recipe it
replaced (23 cycles, max |error| 3.31e-7, max |error| / |x| 2.9e-7), and
the recipe taken instead (relu(x) - |x| exp(H(|x|)), H fitted to ln
Phi(-|x|): 18 cycles, 2.7e-7, 1.6e-7; bench/vector_recipes.py):

1. The fit. An error dg in g moves GELU by x Phi (1 - Phi) dg, so P is
   fitted (float64 weighted least squares, Lawson reweighting towards the
   minimax) with that weight, over min(1, |x|) so that the error relative
   to |x| near 0 counts as much as the absolute error elsewhere. The
   printed figure is the fit's own max error in those units: it needs k = 7
   coefficients to get below 1e-7 (k = 6: ~6e-7).
2. The rounding. Even with g exact (float64 logit(Phi) rounded to f32),
   x / (1 + exp(-g)) in f32 rounds 1 + e for large x (e < 2^-24 is lost),
   which costs up to ~1 ulp of x more than the final rounding: max |error|
   ~5.3e-7 near x = 5, above the recipe's 3.31e-7. Keeping that accuracy
   needs the correction form relu(x) - |x| / (1 + exp(g(|x|))) (vabs, and
   vrelu + vsub at the end): 15 + k = 22 cycles with k = 7.

    .venv/bin/python bench/gelu_sigmoid_form.py
"""

from __future__ import annotations

import math

import numpy as np

ERFC = np.vectorize(math.erfc)


def phi(x: np.ndarray) -> np.ndarray:
    return 0.5 * ERFC(-x / math.sqrt(2))


def logit_phi(x: np.ndarray) -> np.ndarray:
    return np.log(phi(x)) - np.log(phi(-x))


def fit(k: int, top: float = 6.5, rounds: int = 200) -> float:
    """Max weighted error of the best P with k coefficients found."""
    x = np.linspace(0, top, 8001)
    weight = x * phi(x) * phi(-x) / np.maximum(np.minimum(x, 1), 1e-3)
    basis = x[:, None] * (x[:, None] ** 2) ** np.arange(k)[None, :] * weight[:, None]
    target = logit_phi(x) * weight
    lw = np.full(x.size, 1 / x.size)
    best = np.inf
    for _ in range(rounds):
        s = np.sqrt(lw)
        coef, *_ = np.linalg.lstsq(basis * s[:, None], target * s, rcond=None)
        r = np.abs(basis @ coef - target)
        best = min(best, r.max())
        lw = lw * r
        lw /= lw.sum()
    return float(best)


def rounding_with_exact_g() -> tuple[float, float]:
    """Max |error| of x / (1 + exp(-g)) in f32 with g exact, and where."""
    x = np.linspace(-10, 10, 2_000_001).astype(np.float32)
    x64 = x.astype(np.float64)
    c = np.maximum(x, np.float32(-10))
    g = logit_phi(c.astype(np.float64)).astype(np.float32)
    with np.errstate(over="ignore"):
        d = (np.exp(-g) + np.float32(1)).astype(np.float32)
    err = np.abs((c / d).astype(np.float64) - x64 * phi(x64))
    return float(err.max()), float(x[err.argmax()])


def main() -> None:
    print("k coefficients  cycles (12 + k)  fit error (units of GELU error / min(1, |x|))")
    for k in range(3, 9):
        print(f"{k:>14}  {12 + k:>15}  {fit(k):.3g}")
    err, at = rounding_with_exact_g()
    print(f"x / (1 + exp(-g)) with g exact: max |error| {err:.3g} at x = {at:.4g} "
          f"(the bar: 3.31e-7)")


if __name__ == "__main__":
    main()
