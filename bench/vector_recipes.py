"""Accuracy and cost of the composed vector recipes (python/npu/costmodel/vector/recipes.py):
each recipe's steps evaluated lane by lane with the simulator's own numerics
(simulator/vector_numerics.py: f32 vexp/vrec/vdiv, one rounding per
multiply-add), against float64 math.erf / numpy on a dense f32 sample of
[-10, 10] (every ~1e-5) and both signs of 1e-38 .. 1e-2, plus the special
values. Cycles per 64-lane f32 repeat are the target's per-class costs
summed over the steps (a vmadd against constant blocks is one instruction).

GELU is also evaluated as A&S 7.1.26 as erfc (t = 1 / (1 + p s a) by vrec,
t P(t) by Horner, times exp(-s^2 a^2), times |x|, 23 cycles), the recipe
before relu(x) - |x| exp(H(|x|)) (bench/gelu_log_phi_fit.py): the bar the
recipe's error must stay under. test/python/vector/test_gelu_recipe.py
checks that bound on the simulator itself.

    .venv/bin/python bench/vector_recipes.py
"""

from __future__ import annotations

import math

import numpy as np

from npu.dialects.cce import vector_class
from npu.simulator.vector_numerics import run_steps
from npu.target import get_target
from npu.costmodel.vector.recipes import (ERF_A, ERF_P, GELU_ERFC_CLAMP, UNARY as RECIPES, Step,
                                          gelu_erf_recipe, gelu_tanh_recipe)

S = 1 / math.sqrt(2)
SPECIAL = np.array([np.inf, -np.inf, np.nan, 3e38, -3e38, 0.0, -0.0, 1e-40, -1e-40],
                   np.float32)


def evaluate(steps: tuple[Step, ...], x: np.ndarray) -> np.ndarray:
    """The recipe on f32 lanes, as the simulator computes each step."""
    return run_steps(steps, x.astype(np.float32))


def gelu_erfc_as_written(scale: float) -> tuple[Step, ...]:
    """A&S 7.1.26 as erfc, step by step as the formula reads (the GELU
    recipe before the fitted ln Phi): the reference for the recipe's error."""
    a, t, q = "t0", "t1", "t2"
    c = [-0.5 * k for k in ERF_A]
    steps = [Step("cce.vabs", None, a, ("x",)), Step("cce.vmins", GELU_ERFC_CLAMP, a, (a,)),
             Step("cce.vmuls", ERF_P * scale, t, (a,)), Step("cce.vadds", 1.0, t, (t,)),
             Step("cce.vrec", None, t, (t,)), Step("cce.vmuls", c[4], q, (t,)),
             Step("cce.vadds", c[3], q, (q,))]
    steps += [Step("cce.vmadd", k, q, (t,)) for k in (c[2], c[1], c[0])]
    steps += [Step("cce.vmul", None, q, (q, t)), Step("cce.vmuls", -scale * scale, t, (a,)),
              Step("cce.vmul", None, t, (t, a)), Step("cce.vexp", None, t, (t,)),
              Step("cce.vmul", None, q, (q, t)), Step("cce.vrelu", None, "y", ("x",)),
              Step("cce.vmla", None, "y", (q, a))]
    return tuple(steps)


def gelu64(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * np.vectorize(math.erfc)(-x * S)


def gelu_tanh64(x: np.ndarray) -> np.ndarray:
    u = math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)
    with np.errstate(over="ignore"):
        return x / (1 + np.exp(-2 * u))


CASES = [
    ("GELU erf (recipe)", gelu_erf_recipe(S), gelu64, True),
    ("GELU A&S erfc (before)", gelu_erfc_as_written(S), gelu64, True),
    ("GELU tanh form", gelu_tanh_recipe(0.044715, math.sqrt(2 / math.pi)), gelu_tanh64, True),
    ("erf", RECIPES["ascend.erf"], np.vectorize(math.erf), False),
    ("tanh", RECIPES["ascend.tanh"], np.tanh, False),
    ("sigmoid", RECIPES["ascend.sigmoid"], lambda x: 0.5 * (1 + np.tanh(x / 2)), False),
]


def main() -> None:
    target = get_target()
    near = np.geomspace(1e-38, 1e-2, 20000)
    x = np.concatenate([np.linspace(-10, 10, 2_000_001), near, -near]).astype(np.float32)
    x64 = x.astype(np.float64)
    print(f"{'recipe':<22} {'instr':>5} {'cycles':>6} {'max |err|':>10} {'at x':>9} "
          f"{'max rel.':>10}  at {' '.join(f'{v:.3g}' for v in SPECIAL)}")
    for name, steps, exact, relative_to_x in CASES:
        err = np.abs(evaluate(steps, x).astype(np.float64) - exact(x64))
        normal = np.abs(x64) >= 1e-37  # results are f32 normals (GELU(x) ~ x/2)
        scale = np.abs(x64 if relative_to_x else exact(x64))[normal]
        rel = err[normal] / scale
        cycles = sum(target.vector_cycles(vector_class(st.op)) for st in steps)
        special = " ".join(f"{v:.3g}" for v in evaluate(steps, SPECIAL))
        print(f"{name:<22} {len(steps):>5} {cycles:>6} {err.max():>10.4g} {x[err.argmax()]:>9.4f} "
              f"{rel.max():>10.4g}  {special}")
    print("max rel.: |err| / |x| for GELU, |err| / |value| for erf, tanh, sigmoid (whose\n"
          "recipes are accurate in absolute terms near 0), over |x| >= 1e-37")


if __name__ == "__main__":
    main()
