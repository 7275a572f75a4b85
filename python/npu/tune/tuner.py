"""Per-op tuning: the Python API behind `npu-tune PROGRAM`.

For every distinct op of the program: enumerate its search space,
canonicalise and de-duplicate the candidates, estimate each with the cost
model, let the search pick which to simulate, run those as Ray tasks
(timing only), keep the fastest. Then the whole program is compiled with
the chosen options and simulated with full numerics against the numpy
reference (and without them, for the baseline); then whole programs on
more cores and with other fusion switches are compared with it
(`whole_program`), and the fastest becomes the tuning record.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from npu.target import get_target
from npu.tune import cost_model
from npu.tune.evaluate import Job
from npu.tune.program import OpTask, Program, extract_ops
from npu.passes.tuning_record import OpChoice, TuningRecord
from npu.tune.search import Candidate, select
from npu.tune.space import (candidate_key, canonical, check_spec_names, enumerate_candidates,
                            space_for)
from npu.tune.stats import spearman
from npu.tune.store import ResultStore
from npu.tune.sweep import Result, Sweep, describe_options, job_key
from npu.tune.whole_program import pipeline_space, tune_pipeline, verify


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
    verify: bool = True  # False: per-op choices only, no whole-program runs


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
    space = pipeline_space(spec, target)
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
        evidence: dict[str, Any] = {}
        if opts.verify:  # the whole-program stages
            record, evidence = verify(program, record, target.name, sweep)
            record, evidence = tune_pipeline(program, record, target, sweep, space, evidence)
        result = TuneResult(ops, record, evidence)
        result.ran, result.reused = sweep.ran, sweep.reused
    finally:
        if own:
            runner.close()
    result.wall_seconds = round(time.perf_counter() - t0, 2)
    record.program = result.program
    return result


