"""npu-tune's whole-program stages: the per-op choices checked together, then
the pipeline's own options (the core count, the fusion switches).

Per-op choices hold one core's tiles: the ops of a program split over cores
are other ops (slices), which no signature of the record reaches, so npu-lower
refuses per-op options on several cores. The pipeline stage therefore
compares whole programs: on one core with the per-op choices, and on 2, 4,
... of the target's cores with npu-lower's own tiles, each under every
setting of the fusion switches in the space, against what npu-lower does by
default (all cores). The fastest is checked with full numerics and becomes
the record: its "pipeline" options, and the per-op choices only when it runs
on one core.
"""

from __future__ import annotations

import json
from typing import Any

from npu.passes.lower_options import PIPELINE_OPTIONS
from npu.passes.tuning_record import TuningRecord
from npu.target import Target
from npu.tune.evaluate import ONE_CORE, Job
from npu.passes.applies import program_ops
from npu.tune.program import Program, parse_program
from npu.tune.search import Candidate
from npu.tune.space import SpaceError, enumerate_candidates
from npu.tune.sweep import Result, Sweep, job_key


def measure_programs(program: Program, target: str, sweep: Sweep,
                     runs: list[tuple[TuningRecord, dict[str, Any]]],
                     check: bool = False) -> list[Result]:
    """The whole program compiled with each (record, npu-lower options) and
    simulated (with full numerics and the numpy check when `check`)."""
    items = []
    for rec, pipeline in runs:
        options = json.dumps({s: c.options for s, c in rec.ops.items()}, sort_keys=True)
        label = f"{len(rec.ops)} op choice(s)" + "".join(f" {k}={v}" for k, v in pipeline.items())
        r = Result(Candidate("program", "program", dict(pipeline), label))
        key = job_key("program", program.text, target, options, check,
                      *([pipeline] if pipeline != ONE_CORE else []))
        items.append((r, Job(key, program.filename, program.text, target,
                             record_json=rec.to_json(), pipeline=dict(pipeline), numerics=check,
                             check=check)))
    sweep.run(items, lambda r: f"(whole program, {r.candidate.key})")
    return [r for r, _ in items]


def verify(program: Program, record: TuningRecord, target: str,
           sweep: Sweep) -> tuple[TuningRecord, dict[str, Any]]:
    """The record that makes the whole one-core program fastest, checked with
    full numerics against numpy, and the evidence.

    Ops tuned alone can lose in the program (the next op no longer overlaps
    a tail, buffers compete): if the whole record is slower than npu-lower's
    defaults, each op's choice is tried alone, the helpful ones together,
    and the better of that and the best single choice is kept."""
    def subset(sigs) -> TuningRecord:
        return TuningRecord(record.target, {s: record.ops[s] for s in sigs})

    def measure(records: list[TuningRecord], check: bool = False) -> list[Result]:
        return measure_programs(program, target, sweep, [(r, ONE_CORE) for r in records], check)

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


def pipeline_space(spec: dict | None, target: Target) -> dict[str, list[Any]]:
    """spec["pipeline"] (npu-lower option -> values, as JSON values or the
    strings of `--param`), else: 1, 2, 4, ... up to all of the target's
    cores, with fusion on and off."""
    given = (spec or {}).get("pipeline")
    if not given:
        counts = [1]
        while counts[-1] * 2 <= target.cores:
            counts.append(counts[-1] * 2)
        if counts[-1] != target.cores:
            counts.append(target.cores)
        return {"cores": counts, "fuse": [True, False]}
    space: dict[str, list[Any]] = {}
    for name, values in given.items():
        opt = PIPELINE_OPTIONS.get(name)
        if opt is None:
            raise SpaceError(f"space spec: '{name}' is not an npu-lower pipeline option "
                             f"(pipeline options: {', '.join(PIPELINE_OPTIONS)})")
        if not isinstance(values, list) or not values:
            raise SpaceError(f"space spec: pipeline option '{name}' needs a list of values")
        parsed = []
        for v in values:
            try:
                value = opt.parse(v) if isinstance(v, str) and opt.type is not str else v
                opt.check(value)
            except ValueError as e:
                raise SpaceError(f"space spec: pipeline option '{name}': {e}") from None
            parsed.append(value)
        if name == "cores" and any(c < 1 or c > target.cores for c in parsed):
            raise SpaceError(f"space spec: cores {parsed}: {target.name} has 1 to {target.cores}")
        space[name] = list(dict.fromkeys(parsed))
    space.setdefault("cores", [1])
    return space


def applicable(settings: list[dict[str, Any]], target: Target,
               per_op: bool, ops: frozenset[str] | None = None) -> list[dict[str, Any]]:
    """`settings` with each option that does not apply in one (npu-lower
    refuses it: `npu.passes.lower_applies`, e.g. a split-cores option on one
    core, or an attention option on a program without attention) left to
    npu-lower's default, once for the settings that then agree. An option of
    the space that applies in none of them is refused. `per_op`: one-core
    settings carry the record's per-op options; `ops`: the program's op names."""
    from npu.passes.lower_applies import OPTIONS, refusals

    kept: dict[str, dict[str, Any]] = {}
    applies: set[str] = set()
    refused: dict[str, str] = {}
    for setting in settings:
        values = {name: o.default for name, o in OPTIONS.items()} | setting
        out = dict(refusals(values, list(setting), target, per_op and setting["cores"] == 1,
                            ops))
        applies |= {n for n, v in setting.items() if n not in out and v != OPTIONS[n].default}
        for name, why in out.items():
            refused.setdefault(name, why)
        trimmed = {n: v for n, v in setting.items() if n not in out}
        same = {n: v for n, v in trimmed.items() if v != OPTIONS[n].default}
        kept.setdefault(json.dumps(same, sort_keys=True), trimmed)
    for name, why in refused.items():
        if name not in applies:
            raise SpaceError(f"space spec: pipeline option '{name}' applies to no candidate "
                             f"(npu-lower: {name}: does not apply: {why})")
    return list(kept.values())


def tune_pipeline(program: Program, record: TuningRecord, target: Target, sweep: Sweep,
                  space: dict[str, list[Any]],
                  evidence: dict[str, Any]) -> tuple[TuningRecord, dict[str, Any]]:
    """The fastest of the space's whole programs (ties: fewer cores), checked
    with full numerics, with its evidence added to `evidence` under
    "pipeline" (and the check's result under "check")."""
    settings = applicable(enumerate_candidates(space), target, bool(record.ops),
                          program_ops(parse_program(program.filename, program.text)[0]))
    runs = [(record if s["cores"] == 1 else TuningRecord(record.target), s) for s in settings]
    default_record = TuningRecord(record.target)
    results = measure_programs(program, target.name, sweep, [(default_record, {})] + runs)
    default, tried = results[0], results[1:]
    ok = [(r.cycles, s["cores"], i) for i, (r, s) in enumerate(zip(tried, settings)) if r.ok]
    stage: dict[str, Any] = {
        "cycles_npu_lower_default": default.cycles,
        "candidates": [{"options": s, "per_op_choices": s["cores"] == 1 and bool(record.ops),
                        "status": r.status, "cycles": r.cycles, "error": r.error}
                       for s, r in zip(settings, tried)]}
    out = dict(evidence)
    out["pipeline"] = stage
    if not ok:
        stage["chosen"] = None
        return record, out
    _, _, best = min(ok)
    chosen_record, chosen = runs[best]
    stage["chosen"] = chosen
    if default.cycles:
        stage["speedup_over_default"] = round(default.cycles / tried[best].cycles, 4)
    result = TuningRecord(record.target, dict(chosen_record.ops), dict(chosen))
    (checked,) = measure_programs(program, target.name, sweep, [(result, chosen)], check=True)
    out["check"] = {"passed": checked.ok}
    if not checked.ok:
        out["check"]["failure"] = checked.error or checked.status
    return result, out
