"""Checking a run: the reference outputs of an ascend-level program (numpy,
`npu.reference`) and the simulated outputs against them, within per-dtype
tolerances. Shared by `npu-run` on kernels (`npu.tools.npu_run`) and on
models (`npu.tools.run_model`), and by the tuner and benchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npu.ir import F16_EPILOGUES_ATTR
from npu.simulator.run_inputs import RunError

# Tolerances per output element type: |got - want| <= atol * scale + rtol * |want|,
# with scale = max(1, max |want|). fp16 results carry ~1e-3 relative rounding
# per op; fp32 results of fp16 products accumulate in fp32 in an order that
# differs from numpy's; integers must match exactly. max_rel_err is taken over
# the elements with |expected| >= 1e-3 * scale (relative error of ~0 is noise).
TOLERANCES = {"float16": (1e-2, 1e-3), "float32": (1e-3, 1e-4)}


def tolerances_for(module) -> tuple[dict[str, tuple[float, float]], str | None]:
    """The tolerances for the outputs of a lowered `module`: f32 outputs are
    checked at f16's when npu-fuse computed an epilogue in f16 where the
    source says f32 (`npu-lower{fuse-epilogue-f16}`, on by default): the
    reference keeps f32 there, so an f16 rounding of difference reaches
    every result computed from it, through the next matmul's sums too.
    Returns (tolerances, the reason they differ from TOLERANCES or None)."""
    op = getattr(module, "operation", module)
    if F16_EPILOGUES_ATTR in op.attributes:
        return ({**TOLERANCES, "float32": TOLERANCES["float16"]},
                "f32 outputs at f16's tolerance: epilogues computed in f16 (fuse-epilogue-f16)")
    return TOLERANCES, None


@dataclass
class CheckResult:
    passed: bool
    max_abs_err: float
    max_rel_err: float
    failure: str | None = None
    tolerance: str | None = None  # why the tolerances are not the default ones

    def as_dict(self) -> dict:
        d = {"passed": self.passed, "max_abs_err": self.max_abs_err, "max_rel_err": self.max_rel_err}
        if self.failure:
            d["failure"] = self.failure
        if self.tolerance:
            d["tolerance"] = self.tolerance
        return d


def compare(outputs: list[np.ndarray], expected: list[np.ndarray],
            tolerances: dict | None = None, reason: str | None = None,
            steps: list[float | None] | None = None) -> CheckResult:
    """Element-wise comparison; names the first output and element that differ.
    `tolerances` (dtype name -> (rtol, atol)) replaces TOLERANCES, for the
    `reason` the result then states. `steps` gives an output on a
    quantisation grid its step: it may then differ by one step, where a
    reference that rounds differently puts a value on the other side of a
    rounding boundary."""
    max_abs = max_rel = 0.0
    failure = None
    steps = steps or [None] * len(outputs)
    for i, (got, want, step) in enumerate(zip(outputs, expected, steps)):
        want = np.asarray(want)
        if got.shape != want.shape:
            failure = failure or f"output #{i}: shape {list(got.shape)} != reference {list(want.shape)}"
            continue
        g, w = got.astype(np.float64), want.astype(np.float64)
        both_nan = np.isnan(g) & np.isnan(w)
        diff = np.where(both_nan, 0.0, np.abs(g - w))
        diff = np.where(np.isnan(diff), np.inf, diff)
        if diff.size:
            max_abs = max(max_abs, float(diff.max()))
        rtol, atol = (tolerances or TOLERANCES).get(str(want.dtype), (0.0, 0.0))
        finite_w = np.abs(w[np.isfinite(w)])
        scale = max(1.0, float(finite_w.max())) if finite_w.size else 1.0
        if diff.size:
            # Relative error where it means something: |expected| >= 1e-3 * scale.
            sizeable = np.abs(w) >= 1e-3 * scale
            if sizeable.any():
                with np.errstate(invalid="ignore", over="ignore"):  # inf / inf: no RuntimeWarning
                    max_rel = max(max_rel, float((diff[sizeable] / np.abs(w[sizeable])).max()))
        allowed = atol * scale + rtol * np.abs(w)
        bound = f"{atol:g}*{scale:g} + {rtol:g}*|expected|"
        if step is not None:  # one step, and the f32 rounding of a dequantised value
            allowed, bound = np.maximum(allowed, step * (1 + 1e-4)), f"max({bound}, one step {step:g})"
        bad = diff > allowed
        if bad.any() and failure is None:
            idx = np.unravel_index(int(np.argmax(bad)), bad.shape)
            failure = (f"output #{i} (argument #{i}) differs at element {list(map(int, idx))}: got "
                       f"{got[idx].item()!r}, expected {want[idx].item()!r} ({int(bad.sum())} of {bad.size} elements "
                       f"outside |err| <= {bound})")
    return CheckResult(failure is None, max_abs, max_rel, failure, reason)


__all__ = ["TOLERANCES", "CheckResult", "compare", "reference_outputs", "tolerances_for"]


def reference_outputs(original, entry: str, inputs, filename: str) -> list[np.ndarray]:
    """The numpy reference's outputs of `entry` in the original (unlowered) module."""
    from npu.reference import evaluate
    from npu.simulator.core import find_entry

    try:
        return evaluate(find_entry(original, entry), [np.array(a) for a in inputs])
    except Exception as e:  # EvaluationError carries its own location
        raise RunError(str(e) if "error:" in str(e) else f"{filename}: error: reference: {e}") from None
