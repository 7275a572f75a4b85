"""One candidate, compiled and simulated: the body of every Ray task.

Runs in a Ray worker (or anywhere): takes plain data (`Job`), returns plain
data (`Outcome`), and turns every failure into a failed outcome with the
compiler's or simulator's message instead of raising.
"""

from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

INPUT_SEED = 0
ONE_CORE = {"cores": 1}  # the pipeline options per-op candidates are compiled with


@dataclass(frozen=True)
class Job:
    """Compile `text` with `npu-lower` (and the per-op options of `record_json`)
    for the target preset with `target_params` changed, then simulate."""

    key: str
    filename: str
    text: str
    target: str
    target_params: dict[str, Any] = field(default_factory=dict)
    record_json: str | None = None
    # npu-lower's whole-program options; per-op records hold one core's tiles
    pipeline: dict[str, Any] = field(default_factory=lambda: dict(ONE_CORE))
    numerics: bool = False  # False: only the cycles are wanted
    check: bool = False  # compare the outputs with the numpy reference


@dataclass
class Outcome:
    key: str
    status: str  # ok, failed, timeout
    cycles: int | None = None
    bound: int | None = None  # the simulator's lower bound of this program (its traffic)
    error: str | None = None
    seconds: float = 0.0
    check: dict | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def simulate_cycles(module, inputs, target, numerics: bool):
    """The one place that picks the simulation mode: timing only (no
    arithmetic, same cycles and checks) unless the outputs are wanted."""
    from npu.simulator import simulate

    return simulate(module, inputs, target=target, numerics=numerics)


class _OutOfTime(BaseException):
    """Past the time limit: a BaseException, so no `except Exception` in the
    compiler or simulator mistakes it for a failed candidate."""


@contextmanager
def _time_limit(seconds: float | None):
    """Raise `_OutOfTime` in this thread `seconds` of wall time from now.

    The task keeps its own limit so the runner need not kill a worker whose
    result may already be on its way (Ray's forced cancel of a task that is
    completing aborts the driver). Only the main thread receives signals; an
    alarm already set (pytest-timeout's) is set again afterwards for the time
    it had left."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise _OutOfTime

    previous = signal.signal(signal.SIGALRM, expire)
    outer, interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    start = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            left = max(outer - (time.monotonic() - start), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, interval)


def time_limit_error(seconds: float) -> str:
    return f"no result within the time limit of {seconds:g} s"


def evaluate(job: Job, time_limit: float | None = None) -> dict:
    """`Outcome.as_dict()` of `job`; never raises for a bad candidate. With
    `time_limit`, a candidate still running after so many seconds is a timeout."""
    t0 = time.perf_counter()
    try:
        with _time_limit(time_limit):
            outcome = _evaluate(job)
    except _OutOfTime:
        outcome = Outcome(job.key, "timeout", error=time_limit_error(time_limit))
    except _Failure as e:
        outcome = Outcome(job.key, "failed", error=str(e))
    except Exception as e:  # a compiler bug is a failed candidate, not a failed sweep
        outcome = Outcome(job.key, "failed", error=f"internal error: {type(e).__name__}: {e}")
    outcome.seconds = round(time.perf_counter() - t0, 3)
    return outcome.as_dict()


def lower_pipeline(options: dict[str, Any]) -> str:
    """`npu-lower{name=value ...}` of whole-program options."""
    text = " ".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}"
                    for k, v in options.items())
    return f"npu-lower{{{text}}}" if text else "npu-lower"


class _Failure(Exception):
    pass


def _evaluate(job: Job) -> Outcome:
    from npu import ir as npu_ir
    from npu.passes import PassError
    from npu.passes.lower import LowerPass
    from npu.pipeline import PipelineError, run_pipeline
    from npu.simulator import SimulationError
    from npu.simulator.core import find_entry
    from npu.target import get_target
    from npu.simulator.run_check import compare, reference_outputs, tolerances_for
    from npu.simulator.run_inputs import RunError, random_inputs
    from npu.tune.program import ProgramError, parse_program
    from npu.passes.tuning_record import RecordError, TuningRecord
    from npu.tune.space import target_with

    target = target_with(get_target(job.target), job.target_params)
    try:
        module, engine = parse_program(job.filename, job.text)
    except ProgramError as e:
        raise _Failure(str(e)) from None
    original = npu_ir.parse_module(job.text, module.context) if job.check else None
    try:
        if job.record_json:
            record = TuningRecord.from_json(job.record_json)
            LowerPass(target).apply_tuning_record(module.operation, record)
        run_pipeline(module, lower_pipeline(job.pipeline), target)
    except PassError as e:
        loc = e.op.location if e.op is not None else None
        raise _Failure(engine.emit("error", e.message, loc).format()) from None
    except (PipelineError, RecordError) as e:
        raise _Failure(str(e)) from None
    func_op = find_entry(module, None)
    entry = npu_ir.symbol_name(func_op)
    source = npu_ir.parse_module(job.text, module.context)  # its gathers' index ranges
    inputs = random_inputs(func_op, INPUT_SEED, find_entry(source, None))
    try:
        result = simulate_cycles(module, inputs, target, job.numerics or job.check)
    except SimulationError as e:
        raise _Failure(str(e)) from None
    outcome = Outcome(job.key, "ok", cycles=int(result.cycles),
                      bound=int(result.report.get("bound_cycles") or 0) or None)
    if job.check:
        try:
            expected = reference_outputs(original, entry, [np.array(a) for a in inputs], job.filename)
        except RunError as e:
            raise _Failure(str(e)) from None
        check = compare(result.outputs, expected, *tolerances_for(module))
        outcome.check = check.as_dict()
        if not check.passed:
            outcome.status, outcome.error = "failed", f"check failed: {check.failure}"
    return outcome
