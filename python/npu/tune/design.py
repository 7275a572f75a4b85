"""Design-space mode: how a workload's cycles respond to target parameters.

One parameter at a time is moved over its values with the others at the
preset's (so each parameter gets its own curve); the program is compiled
for each target (the cost model re-picks tiles and chunks for the new
sizes) and simulated. The baseline appears once: a value equal to the
preset's is the same candidate and is not run twice.
"""

from __future__ import annotations

import csv
import io
import time
from dataclasses import dataclass, field
from typing import Any

from npu.target import get_target
from npu.tune.evaluate import Job
from npu.tune.program import Program
from npu.tune.search import Candidate
from npu.tune.space import check_target_param, default_design_space, parse_quantity, target_with
from npu.tune.store import ResultStore
from npu.tune.sweep import Result, Sweep, job_key
from npu.tune.tuner import TuneOptions


@dataclass
class DesignPoint:
    param: str  # "" for the preset itself
    value: Any
    base_value: Any
    result: Result


@dataclass
class DesignResult:
    target: str
    points: list[DesignPoint] = field(default_factory=list)
    ran: int = 0
    reused: int = 0
    wall_seconds: float = 0.0

    def rows(self) -> list[dict[str, Any]]:
        base = next((p.result.cycles for p in self.points if p.param == ""), None)
        rows = []
        for p in self.points:
            r = p.result
            rows.append({"param": p.param or "(preset)", "value": "-" if p.value is None else p.value,
                         "preset_value": "-" if p.base_value is None else p.base_value,
                         "status": r.status, "cycles": r.cycles,
                         "vs_preset": round(r.cycles / base, 4) if r.cycles and base else None,
                         "error": (r.error or "").splitlines()[0] if r.error else ""})
        return rows

    def csv(self) -> str:
        buf = io.StringIO()
        rows = self.rows()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["param"])
        writer.writeheader()
        writer.writerows(rows)
        return buf.getvalue()

    def markdown(self) -> str:
        lines = ["| parameter | value | preset value | cycles | vs preset | status |",
                 "|---|---|---|---|---|---|"]
        for row in self.rows():
            status = row["status"] + (f": {row['error'][:60]}" if row["error"] else "")
            lines.append(f"| {row['param']} | {row['value']} | {row['preset_value']} | "
                         f"{row['cycles'] if row['cycles'] is not None else '-'} | "
                         f"{row['vs_preset'] if row['vs_preset'] is not None else '-'} | {status} |")
        return "\n".join(lines)


def preset_value(target, name: str) -> Any:
    """The preset's value of a design parameter (for the table and plot)."""
    if name in target.buffer_bytes:
        return target.capacity(name)
    if name in ("gm-bandwidth", "gm-latency"):
        p = target.path("gm_to_l1")
        return p.bytes_per_cycle if name.endswith("bandwidth") else p.latency
    if "-" in name:
        path, what = name.rsplit("-", 1)
        p = target.path(path)
        return p.bytes_per_cycle if what == "bandwidth" else p.latency
    return getattr(target, name)


def sweep_design(program: Program, params: dict[str, list[Any]] | None = None,
                 opts: TuneOptions | None = None, runner=None,
                 record_json: str | None = None) -> DesignResult:
    """Cycles of `program` for each value of each parameter (see module doc).
    `record_json`: compile with a tuning record's per-op options."""
    from npu.tune.runner import RayRunner

    opts = opts or TuneOptions()
    t0 = time.perf_counter()
    base = get_target(opts.target)
    params = params or default_design_space(base)
    for name, values in params.items():
        check_target_param(name)
        for v in values:
            target_with(base, {name: v})  # every value is checked before anything runs
    result = DesignResult(base.name)
    points = [("", None, None, {})] + [(name, parse_quantity(v), preset_value(base, name), {name: v})
                                        for name, values in params.items() for v in values]
    items = []
    for name, value, base_value, change in points:
        target = target_with(base, change)
        effective = {k: preset_value(target, k) for k in change}
        unchanged = all(effective[k] == preset_value(base, k) for k in change)
        key = job_key("design", program.text, base.name, record_json, {} if unchanged else effective)
        r = Result(Candidate("program", "design", dict(change), key, default=not change))
        result.points.append(DesignPoint(name, value, base_value, r))
        items.append((r, Job(key, program.filename, program.text, base.name,
                             target_params=dict(change), record_json=record_json)))
    own = runner is None
    runner = runner or RayRunner(opts.address, opts.workers, opts.timeout)
    try:
        sweep = Sweep(runner, ResultStore(opts.store), opts.progress, "npu-tune --design")
        sweep.run(items, lambda r: " ".join(f"{k}={v}" for k, v in r.candidate.options.items())
                  or "(preset)")
    finally:
        if own:
            runner.close()
    result.ran, result.reused = sweep.ran, sweep.reused
    result.wall_seconds = round(time.perf_counter() - t0, 2)
    return result


def plot(result: DesignResult, path: str, title: str) -> None:
    """One panel per parameter: cycles against its value (log2 axis), the
    preset's value dashed; failed points are left out and counted."""
    from npu.tune.extras import require

    matplotlib = require("matplotlib", "--plot")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    params = list(dict.fromkeys(p.param for p in result.points if p.param))
    base = next((p.result.cycles for p in result.points if p.param == ""), None)
    fig, axes = plt.subplots(1, max(1, len(params)), figsize=(4 * max(1, len(params)), 3.4),
                             squeeze=False)
    for ax, name in zip(axes[0], params):
        mine = [p for p in result.points if p.param == name]
        ok = sorted((p.value, p.result.cycles) for p in mine if p.result.ok)
        if ok:
            ax.plot([v for v, _ in ok], [c for _, c in ok], "o-")
        ax.axvline(mine[0].base_value, linestyle="--", color="gray", label="preset")
        if base:
            ax.axhline(base, linestyle=":", color="gray")
        failed = len(mine) - len(ok)
        ax.set_title(name + (f" ({failed} failed)" if failed else ""))
        ax.set_xscale("log", base=2)
        ax.set_xlabel(name)
        ax.set_ylabel("cycles")
        ax.grid(True, alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)
