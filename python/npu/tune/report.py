"""Text and JSON views of a tuning result."""

from __future__ import annotations

import math
from typing import Any

from npu.tune.sweep import describe_options
from npu.tune.tuner import TuneResult


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def tuning_text(result: TuneResult) -> str:
    lines = ["| op | family | run / space | cost-model choice (cycles) | best (cycles) | "
             "ratio | spearman | best options |", "|---|---|---|---|---|---|---|---|"]
    rejected = set(result.program.get("rejected", []))
    for op in result.ops:
        best, default = op.best, op.default
        ratio = default.cycles / best.cycles if best and default.ok else None
        rho, n = op.spearman()
        lines.append(
            f"| {op.task.op_name} {' x '.join('x'.join(map(str, o.shape)) for o in op.task.operands)} "
            f"| {op.task.family.removeprefix('npu-lower-')} | {len(op.results)} / {op.space_size} "
            f"| {default.cycles if default.ok else default.status} "
            f"| {best.cycles if best else '-'} | {_fmt(ratio)} | {_fmt(rho, 2)} (n={n}) "
            f"| {describe_options(best.candidate.options) if best else 'none compiled'}"
            f"{' (not kept: slower in the program)' if op.task.signature in rejected else ''} |")
    lines.append("")
    lines.append("Spearman correlation of the cost model's ranking with the simulator's, per family:")
    for family, (rho, n) in result.spearman_by_family().items():
        lines.append(f"  {family}: {_fmt(rho, 2)} ({n} simulated candidates)")
    failed = [(op, r) for op in result.ops for r in op.results if r.status in ("failed", "timeout")]
    if failed:
        lines.append(f"{len(failed)} candidate(s) failed, e.g. {failed[0][1].status}: "
                     f"{(failed[0][1].error or '').splitlines()[0][:200]}")
    p = result.program
    if p.get("rejected"):
        lines.append(f"{len(p['rejected'])} op choice(s) were faster alone but made the program "
                     f"slower ({p['cycles_all_choices']} cycles with all); left to npu-lower's "
                     "defaults: " + "; ".join(p["rejected"]))
    if p:
        check = p.get("check", {})
        lines.append(f"whole program: cost-model choices {p.get('cycles_default')} cycles, tuned "
                     f"{p.get('cycles_tuned')} cycles"
                     + (f" (speedup {p['speedup']:.3f})" if p.get("speedup") else "")
                     + f"; numerics check {'passed' if check.get('passed') else 'FAILED'}")
    lines.extend(_pipeline_lines(p.get("pipeline")))
    lines.append(f"{result.ran} run, {result.reused} reused from the store, {result.wall_seconds} s")
    return "\n".join(lines)


def _pipeline_lines(stage: dict | None) -> list[str]:
    """The whole programs compared over the pipeline's options, and the choice."""
    if not stage:
        return []
    lines = ["", f"whole programs (npu-lower's default: {stage['cycles_npu_lower_default']} cycles):",
             "| pipeline options | per-op choices | cycles |", "|---|---|---|"]
    for c in stage["candidates"]:
        cycles = c["cycles"] if c["status"] == "ok" else f"{c['status']}: {(c['error'] or '')[:80]}"
        lines.append(f"| {describe_options(c['options'])} | {'yes' if c['per_op_choices'] else 'no'} "
                     f"| {cycles} |")
    chosen = stage.get("chosen")
    if chosen is None:
        lines.append("no whole program compiled: the record keeps the per-op choices on one core")
    else:
        speedup = stage.get("speedup_over_default")
        lines.append(f"chosen: {describe_options(chosen)}"
                     + (f" ({speedup:.3f}x npu-lower's default)" if speedup else ""))
    return lines


def tuning_json(result: TuneResult) -> dict[str, Any]:
    ops = []
    for op in result.ops:
        rho, n = op.spearman()
        ops.append({
            "signature": op.task.signature, "family": op.task.family, "space": op.space_size,
            "spearman": rho, "spearman_pairs": n,
            "candidates": [{"options": r.candidate.options, "default": r.candidate.default,
                            "estimate": (r.candidate.estimate if math.isfinite(r.candidate.estimate)
                                         else None), "status": r.status, "cycles": r.cycles,
                            "error": r.error, "seconds": r.seconds, "reused": r.reused}
                           for r in op.results]})
    return {"target": result.record.target, "ops": ops, "program": result.program,
            "spearman_by_family": {f: {"rho": r, "pairs": n}
                                   for f, (r, n) in result.spearman_by_family().items()},
            "ran": result.ran, "reused": result.reused, "wall_seconds": result.wall_seconds}
