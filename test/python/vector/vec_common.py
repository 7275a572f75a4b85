"""Compile-and-simulate helpers for the vector lowering tests.

Programs are compiled through the real pipeline (lowering, memory planning,
sync insertion) when those passes are registered, and simulated strictly
(bounds, granules, uninitialised reads, races). Until sync insertion exists
the lowering alone is simulated with `serialize=True` (no overlap between
instructions, so no races are possible); `MODE` says which one ran.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pytest

from npu.ir import make_context, parse_module
from npu.passes import registry
from npu.pipeline import run_pipeline
from npu.target import Target, get_target

NP = {"f16": np.float16, "f32": np.float32, "i8": np.int8, "i32": np.int32}


_CONTEXT = None


def shared_context():
    """One context for all vector tests: loading the IRDL dialects costs more
    than compiling a small kernel. Each test still parses its own module."""
    global _CONTEXT
    if _CONTEXT is None:
        _CONTEXT = make_context()
    return _CONTEXT


MODE = "pipeline" if "npu-insert-sync" in registry() else "serialized"


def backend_stages(double_buffer: bool = False) -> list[str]:
    """The passes after a lowering: [double buffering,] memory planning (when
    registered; without it the simulator gives each buffer its own address)
    and sync insertion."""
    names = registry()
    stages = []
    if double_buffer:
        if "npu-double-buffer" not in names:
            pytest.skip("npu-double-buffer is not registered yet")
        stages.append("npu-double-buffer")
    if "npu-plan-memory" in names:
        stages.append("npu-plan-memory")
    return stages + ["npu-insert-sync"]


def pipeline_for(lowering: str, double_buffer: bool = False) -> tuple[str, bool]:
    """(pipeline text, serialize flag) for one lowering pass."""
    if MODE == "pipeline":
        return ",".join([lowering] + backend_stages(double_buffer)), False
    return lowering, True


def compile_source(source: str, lowering: str, target: Target | None = None,
                   double_buffer: bool = False):
    """(module, serialize flag): `source` lowered through the pipeline."""
    target = target or get_target()
    module = parse_module(source, shared_context())
    pipeline, serialize = pipeline_for(lowering, double_buffer)
    run_pipeline(module, pipeline, target)
    return module, serialize


def simulate_strict(module, inputs: Sequence[np.ndarray], serialize: bool,
                    target: Target | None = None, entry: str | None = None):
    """Simulate strictly: bounds, granules, uninitialised reads and races are
    errors (a GM tensor under one granule relies on its argument being padded
    to whole granules, dialects/README.md)."""
    from helpers import simulate_levels

    return simulate_levels(module, inputs, target, entry=entry, strict=True, serialize=serialize)


def run(source: str, lowering: str, inputs: Sequence[np.ndarray], target: Target | None = None,
        double_buffer: bool = False, entry: str | None = None):
    """Lower `source`, simulate it strictly and return the SimResult."""
    module, serialize = compile_source(source, lowering, target, double_buffer)
    return simulate_strict(module, inputs, serialize, target, entry)


def memref(shape: Sequence[int], elem: str) -> str:
    dims = "x".join(str(d) for d in shape)
    return f'memref<{dims + "x" if dims else ""}{elem}, "gm">'


def func(name: str, op: str, arg_types: Sequence[str], attrs: str = "") -> str:
    """A func.func applying one ascend op to all its arguments (last = output)."""
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(arg_types))
    vals = ", ".join(f"%a{i}" for i in range(len(arg_types)))
    types = ", ".join(arg_types)
    attr_text = f" {{{attrs}}}" if attrs else ""
    return (f"func.func @{name}({args}) {{\n"
            f'  "{op}"({vals}){attr_text} : ({types}) -> ()\n'
            f"  return\n}}\n")


def assert_matches(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float,
                   what: str) -> None:
    """Equal NaN positions, equal infinities, finite values within tolerance."""
    a = np.asarray(actual).astype(np.float64)
    e = np.asarray(expected).astype(np.float64)
    assert a.shape == e.shape, f"{what}: shape {a.shape} vs {e.shape}"
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    assert (nan_a == nan_e).all(), (
        f"{what}: NaN positions differ at {np.flatnonzero(nan_a != nan_e)[:8]}")
    inf_e = np.isinf(e)
    assert (a[inf_e] == e[inf_e]).all(), f"{what}: infinities differ"
    fin = ~nan_e & ~inf_e
    with np.errstate(invalid="ignore"):  # inf - inf where both are inf
        err = np.abs(a - e)
    bad = fin & (err > atol + rtol * np.abs(e))
    if bad.any():
        i = int(np.argmax(np.where(bad, err, -1)))
        raise AssertionError(f"{what}: {int(bad.sum())}/{e.size} elements off; worst flat index "
                             f"{i}: got {a.flat[i]!r}, expected {e.flat[i]!r}")
