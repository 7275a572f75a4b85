"""Per-op tuning: the Python API behind `npu-tune PROGRAM`.

For every distinct op of the program: enumerate its search space,
canonicalise and de-duplicate the candidates, estimate each with the cost
model, let the search pick which to simulate, run those as Ray tasks
(timing only), keep the fastest. Then the whole program is compiled with
the chosen options and simulated with full numerics against the numpy
reference (and without them, for the baseline), and the choices become a
tuning record.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from npu.target import get_target
from npu.tune import cost_model
from npu.tune.evaluate import Job
from npu.tune.program import OpTask, Program, extract_ops
from npu.tune.progress import Progress
from npu.passes.tuning_record import OpChoice, TuningRecord
from npu.tune.search import Candidate, select
from npu.tune.space import (candidate_key, canonical, check_spec_names, enumerate_candidates,
                            space_for)
from npu.tune.stats import spearman
from npu.tune.store import ResultStore


@dataclass
class TuneOptions:
    search: str = "guided"
    budget: int | None = None  # candidates simulated per op (random, guided)
    seed: int = 0
    target: str = "ascend910"
    workers: int | None = None
    address: str | None = None
    timeout: float = 600.0  # seconds per candidate
    store: str | None = None  # JSON-lines results file (resume)
    progress: bool = True
    verify: bool = True


@dataclass
class Result:
    """A candidate and what became of it."""

    candidate: Candidate
    status: str = "pending"  # ok, failed, timeout
    cycles: int | None = None
    bound: int | None = None
    error: str | None = None
    seconds: float = 0.0
    reused: bool = False  # taken from the store, not run now

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class OpResult:
    task: OpTask
    results: list[Result]
    space_size: int  # distinct candidates before the search's selection

    @property
    def default(self) -> Result:
        return next(r for r in self.results if r.candidate.default)

    @property
    def best(self) -> Result | None:
        ok = [r for r in self.results if r.ok]
        return min(ok, key=lambda r: r.cycles) if ok else None

    def spearman(self) -> tuple[float | None, int]:
        pairs = [(r.candidate.estimate, r.cycles) for r in self.results
                 if r.ok and math.isfinite(r.candidate.estimate)]
        return spearman([p[0] for p in pairs], [p[1] for p in pairs]), len(pairs)


@dataclass
class TuneResult:
    ops: list[OpResult]
    record: TuningRecord
    program: dict[str, Any] = field(default_factory=dict)
    ran: int = 0
    reused: int = 0
    wall_seconds: float = 0.0

    @property
    def verified(self) -> bool:
        check = self.program.get("check")
        return check is None or bool(check.get("passed"))

    def spearman_by_family(self) -> dict[str, tuple[float | None, int]]:
        """Mean of the per-op correlations of each family, and their pairs."""
        out: dict[str, tuple[float | None, int]] = {}
        for family in dict.fromkeys(o.task.family for o in self.ops):
            rhos = [o.spearman() for o in self.ops if o.task.family == family]
            known = [r for r, _ in rhos if r is not None]
            out[family] = (sum(known) / len(known) if known else None, sum(n for _, n in rhos))
        return out


def job_key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:20]


def op_candidates(task: OpTask, spec: dict | None, target) -> tuple[list[Candidate], int]:
    """The distinct canonical candidates of `task`'s space; the default first."""
    default = canonical(task, {}, target)
    label = f"{task.op_name.removeprefix('ascend.')} {'x'.join(map(str, task.operands[0].shape))}"
    seen: dict[str, Candidate] = {}
    for options in [{}] + enumerate_candidates(space_for(task, spec, target)):
        opts = default if not options else canonical(task, options, target)
        key = candidate_key(opts)
        if key not in seen:
            seen[key] = Candidate(task.signature, task.family, opts, key,
                                  cost_model.estimate(task, opts, target), default=not options,
                                  label=label)
    return list(seen.values()), len(seen)


class Sweep:
    """Runs candidates through a runner, reusing stored results."""

    def __init__(self, runner, store: ResultStore, progress: bool, label: str):
        self.runner = runner
        self.store = store
        self.progress = progress
        self.label = label
        self.ran = self.reused = 0

    def run(self, items: list[tuple[Result, Job]], describe: Callable[[Result], str]) -> None:
        """Run the items' jobs (each distinct key once, stored ones not at all)
        and fill in their results."""
        by_key: dict[str, list[Result]] = {}
        jobs: list[Job] = []
        for result, job in items:
            stored = self.store.get(job.key)
            if stored is not None:
                _fill(result, stored, reused=True)
                self.reused += 1
                continue
            if job.key not in by_key:
                jobs.append(job)
            by_key.setdefault(job.key, []).append(result)
        bar = Progress(len(jobs), self.label, enabled=self.progress)

        def on_outcome(outcome: dict) -> None:
            results = by_key[outcome["key"]]
            entry = {**outcome, "options": results[0].candidate.options,
                     "signature": results[0].candidate.signature}
            self.store.add(entry)
            for r in results:
                _fill(r, outcome, reused=False)
            bar.update(outcome.get("cycles") if outcome["status"] == "ok" else None,
                       describe(results[0]), results[0].candidate.label)

        self.ran += len(jobs)
        if jobs:
            self.runner.run(jobs, on_outcome)


def _fill(result: Result, outcome: dict, reused: bool) -> None:
    result.status = outcome["status"]
    result.cycles = outcome.get("cycles")
    result.bound = outcome.get("bound")
    result.error = outcome.get("error")
    result.seconds = outcome.get("seconds", 0.0)
    result.reused = reused


def describe_options(options: dict[str, Any]) -> str:
    return " ".join(f"{k}={json.dumps(v) if isinstance(v, bool) else v}" for k, v in options.items())


def tune(program: Program, spec: dict | None = None, opts: TuneOptions | None = None,
         runner=None) -> TuneResult:
    """Tune every op of `program`; `runner` defaults to a RayRunner built
    from `opts` (and shut down afterwards if it started Ray)."""
    from npu.tune.runner import RayRunner

    opts = opts or TuneOptions()
    t0 = time.perf_counter()
    target = get_target(opts.target)
    tasks = extract_ops(program)
    if spec:
        check_spec_names(spec, tasks)
    ops: list[OpResult] = []
    items: list[tuple[Result, Job]] = []
    for task in tasks:
        candidates, size = op_candidates(task, spec, target)
        chosen = select(opts.search, candidates, opts.budget, opts.seed)
        results = [Result(c) for c in chosen]
        ops.append(OpResult(task, results, size))
        for r in results:
            record = TuningRecord(target.name, {task.signature: OpChoice(r.candidate.options)})
            key = job_key("op", task.kernel, target.name, r.candidate.key)
            items.append((r, Job(key, program.filename, task.kernel, target.name,
                                 record_json=record.to_json())))
    own = runner is None
    runner = runner or RayRunner(opts.address, opts.workers, opts.timeout)
    try:
        sweep = Sweep(runner, ResultStore(opts.store), opts.progress, "npu-tune")
        sweep.run(items, lambda r: describe_options(r.candidate.options))
        record = TuningRecord(target.name)
        for op in ops:
            best = op.best
            if best is None:
                continue  # nothing compiled: the op keeps npu-lower's defaults
            default = op.default
            record.ops[op.task.signature] = OpChoice(
                best.candidate.options, op.task.family, best.cycles,
                default.cycles if default.ok else None,
                sum(1 for r in op.results if r.status != "pending"))
        if opts.verify:
            record, evidence = verify(program, record, target.name, sweep)
        result = TuneResult(ops, record, evidence if opts.verify else {})
        result.ran, result.reused = sweep.ran, sweep.reused
    finally:
        if own:
            runner.close()
    result.wall_seconds = round(time.perf_counter() - t0, 2)
    record.program = result.program
    return result


def verify(program: Program, record: TuningRecord, target: str,
           sweep: Sweep) -> tuple[TuningRecord, dict[str, Any]]:
    """The record that makes the whole program fastest, checked with full
    numerics against numpy, and the evidence.

    Ops tuned alone can lose in the program (the next op no longer overlaps
    a tail, buffers compete): if the whole record is slower than npu-lower's
    defaults, each op's choice is tried alone, the helpful ones together,
    and the better of that and the best single choice is kept."""
    def subset(sigs) -> TuningRecord:
        return TuningRecord(record.target, {s: record.ops[s] for s in sigs})

    def measure(records: list[TuningRecord], check: bool = False) -> list[Result]:
        items = []
        for rec in records:
            options = json.dumps({s: c.options for s, c in rec.ops.items()}, sort_keys=True)
            r = Result(Candidate("program", "program", {}, f"{len(rec.ops)} op choice(s)"))
            key = job_key("program", program.text, target, options, check)
            items.append((r, Job(key, program.filename, program.text, target,
                                 record_json=rec.to_json(), numerics=check, check=check)))
        sweep.run(items, lambda r: f"(whole program, {r.candidate.key})")
        return [r for r, _ in items]

    default, tuned = measure([subset([]), record])
    chosen = record
    if tuned.ok and default.ok and tuned.cycles > default.cycles:
        sigs = list(record.ops)
        singles = measure([subset([s]) for s in sigs])
        helpful = sorted((r.cycles, s) for r, s in zip(singles, sigs)
                         if r.ok and r.cycles < default.cycles)
        chosen = subset([])
        if helpful:
            chosen = subset([helpful[0][1]])
            if len(helpful) > 1:
                together = subset([s for _, s in helpful])
                (both,) = measure([together])
                if both.ok and both.cycles <= helpful[0][0]:
                    chosen = together
    (checked,) = measure([chosen], check=True)
    out: dict[str, Any] = {"cycles_default": default.cycles, "cycles_tuned": checked.cycles,
                           "check": {"passed": checked.ok}}
    if not checked.ok:
        out["check"]["failure"] = checked.error or checked.status
    rejected = [s for s in record.ops if s not in chosen.ops]
    if rejected:
        out["rejected"] = rejected  # faster alone, slower in the program
        out["cycles_all_choices"] = tuned.cycles
    if default.cycles and checked.cycles:
        out["speedup"] = round(default.cycles / checked.cycles, 4)
    return chosen, out
