"""Runs candidates as Ray tasks: a local in-process cluster by default, an
existing cluster with `address`. At most `workers` tasks are in flight. A
task enforces its own time limit, counted from its start in the worker, and
returns a timeout; only a task stuck where that limit cannot reach it (native
code that never returns to Python) is cancelled, its worker process killed,
once the runner's later deadline passes. A task that raises or whose worker
dies is a failed outcome.
"""

from __future__ import annotations

import os
import time
from collections import deque
from typing import Callable, Iterable

from npu.tune.evaluate import Job, Outcome, evaluate, time_limit_error


def backstop_seconds(timeout: float) -> float:
    """How long the runner waits for a task before killing its worker: the
    task's own limit, again as much for a slow start (a worker launching on a
    busy machine), and half a minute. Forced cancels race with a result in
    flight (ray-project/ray: 'Tried to complete task that was not pending'
    aborts the driver), so they are kept for tasks no limit reaches."""
    return 2 * timeout + 30.0
from npu.tune.extras import require


class RayRunner:
    # What a task runs: a subclass may wrap it (a test's stuck candidate).
    task_body: Callable[[Job, float | None], dict] = staticmethod(evaluate)

    def __init__(self, address: str | None = None, workers: int | None = None,
                 timeout: float = 600.0):
        ray = require("ray", "npu-tune's runner")
        self._ray = ray
        self._started = False
        if not ray.is_initialized():
            quiet = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR"}
            if address:
                ray.init(address=address, **quiet)
            else:
                ray.init(num_cpus=workers or os.cpu_count() or 1, **quiet)
            self._started = True
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.workers = max(1, workers or cpus)
        self.timeout = timeout
        self._task = ray.remote(max_retries=0, num_cpus=1)(self.task_body)

    def close(self) -> None:
        """Shut Ray down if this runner started it (a shared instance stays)."""
        if self._started:
            self._ray.shutdown()
            self._started = False

    def __enter__(self) -> "RayRunner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def run(self, jobs: Iterable[Job], on_outcome: Callable[[dict], None]) -> None:
        """Run every job; `on_outcome(Outcome.as_dict())` as each one ends."""
        ray = self._ray
        pending = deque(jobs)
        running: dict = {}  # ObjectRef -> (job, deadline)
        try:
            while pending or running:
                while pending and len(running) < self.workers:
                    job = pending.popleft()
                    running[self._task.remote(job, self.timeout)] = (
                        job, time.monotonic() + backstop_seconds(self.timeout))
                next_deadline = min(deadline for _, deadline in running.values())
                wait = max(0.01, next_deadline - time.monotonic())
                done, _ = ray.wait(list(running), num_returns=1, timeout=wait)
                for ref in done:
                    job, _ = running.pop(ref)
                    try:
                        outcome = ray.get(ref)
                    except ray.exceptions.RayError as e:
                        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                        outcome = Outcome(job.key, "failed", error=f"task failed: {first}").as_dict()
                    on_outcome(outcome)
                now = time.monotonic()
                for ref, (job, deadline) in list(running.items()):
                    if now >= deadline:
                        ray.cancel(ref, force=True)
                        del running[ref]
                        on_outcome(Outcome(job.key, "timeout", seconds=self.timeout,
                                           error=time_limit_error(self.timeout)).as_dict())
        finally:
            for ref in running:  # interrupted: stop what is still running
                # Not forced (a forced cancel races with a reply in flight);
                # a worker stuck in native code goes with the runner's Ray.
                ray.cancel(ref, force=False)
