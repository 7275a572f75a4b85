"""Running candidates: each one's result, and a sweep that runs jobs through a
runner while reusing the results a store already holds. Shared by per-op
tuning, the whole-program stage and design-space sweeps."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable

from npu.tune.evaluate import Job
from npu.tune.progress import Progress
from npu.tune.search import Candidate
from npu.tune.store import ResultStore


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


def job_key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:20]


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
