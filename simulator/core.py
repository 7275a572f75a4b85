"""`simulate`: decode, run the scalar unit, run the pipes, report."""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from mlir import ir
from threadpoolctl import threadpool_limits

from npu import ir as npu_ir
from npu.simulator import report as report_mod
from npu.simulator.errors import INVALID, SimulationError, where_of
from npu.simulator.hazards import PIPE_NAMES, HazardDetector
from npu.simulator.machine import Machine
from npu.simulator.memory import DTYPES, INPUT_STAMP
from npu.simulator.pipes import Timeline, run
from npu.simulator.program import Decoder, Program
from npu.target import Target, get_target


@dataclass
class SimResult:
    outputs: list[np.ndarray]
    cycles: int
    report: dict
    hazards: list[dict]
    timeline: Timeline = field(repr=False)
    trace_entries: list = field(repr=False, default_factory=list)
    target: Target | None = field(repr=False, default=None)
    wall_seconds: float = 0.0

    @property
    def instructions(self) -> int:
        return len(self.trace_entries)

    def text_report(self) -> str:
        return report_mod.format_text(self.report)

    def chrome_trace(self) -> dict:
        from npu.simulator.trace import chrome_trace
        return chrome_trace(self.trace_entries, self.timeline, self.target)


def find_entry(module: ir.Module, entry: str | None) -> ir.Operation:
    funcs = npu_ir.functions(module)
    if not funcs:
        raise SimulationError(INVALID, "the module has no func.func to run", where_of(None))
    if entry is None:
        if len(funcs) > 1:
            names = ", ".join(npu_ir.symbol_name(f) for f in funcs)
            raise SimulationError(INVALID, f"the module has several functions ({names}); name the "
                                  "entry", where_of(module.operation.location))
        return _runnable(funcs[0])
    for f in funcs:
        if npu_ir.symbol_name(f) == entry:
            return _runnable(f)
    raise SimulationError(INVALID, f"no function named '{entry}' in the module",
                          where_of(module.operation.location))


def _runnable(func_op: ir.Operation) -> ir.Operation:
    """The entry as the simulator runs it: a body, and only memref arguments
    (each one a GM tensor the caller passes in)."""
    name = npu_ir.symbol_name(func_op)
    where = where_of(func_op.location)
    if not func_op.regions[0].blocks:
        raise SimulationError(INVALID, f"'{name}' is only a declaration: an entry function needs "
                              "a body to run", where)
    for i, t in enumerate(func_op.regions[0].blocks[0].arguments.types):
        if not npu_ir.is_memref(t):
            raise SimulationError(INVALID, f"argument #{i} of '{name}' has type {t}: an entry "
                                  "function takes memref arguments only (its tensors in GM)",
                                  where)
    return func_op


def _load_inputs(program: Program, inputs: Sequence[np.ndarray], where: str) -> None:
    """Copy `inputs` into the argument memories. Workspace arguments are
    scratch: when `inputs` leaves them out they stay uninitialised."""
    n_given = len(program.args) - len(program.workspace_args)
    if len(inputs) == len(program.args):
        loaded = list(range(len(program.args)))
    elif len(inputs) == n_given:
        loaded = [i for i in range(len(program.args)) if i not in program.workspace_args]
    else:
        extra = (f" ({n_given} without the {len(program.workspace_args)} workspace argument(s))"
                 if program.workspace_args else "")
        raise SimulationError(INVALID, f"'{program.func_name}' takes {len(program.args)} memref "
                              f"arguments{extra}, got {len(inputs)} input arrays", where)
    for n, (i, value) in enumerate(zip(loaded, inputs)):
        mem, region, dtype, shape = program.args[i]
        arr = np.asarray(value)
        want = np.dtype(DTYPES[dtype])
        if tuple(arr.shape) != shape or arr.dtype != want:
            raise SimulationError(INVALID, f"input #{n} is {arr.dtype}{list(arr.shape)}; argument "
                                  f"#{i} needs {want}{list(shape)}", where)
        raw = np.ascontiguousarray(arr).view(np.uint8).ravel()
        mem.data[:raw.size] = raw
        mem.wstamp[:raw.size] = INPUT_STAMP


def simulate(module: ir.Module, inputs: Sequence[np.ndarray], entry: str | None = None,
             target: Target | None = None, strict: bool = True, serialize: bool = False,
             numerics: bool = True) -> SimResult:
    """Run `entry` of `module` on `inputs` (one array per memref argument;
    workspace arguments, `npu.workspace`, may be left out and are then
    allocated uninitialised). `outputs` holds every argument but the
    workspaces, in order.

    `strict`: any fault raises `SimulationError`; otherwise uninitialised reads
    and races are collected in `hazards` and the run continues (bounds,
    alignment, capacity, flag and deadlock faults always raise).
    `serialize`: each instruction waits for all earlier ones (no overlap).
    `numerics=False`: timing only; no arithmetic is done (the outputs hold
    the inputs' bytes where nothing was computed), every check that needs no
    values still runs, and the cycles equal those of the full run.
    """
    wall0 = time.perf_counter()
    # The trace holds one small tuple per dynamic instruction; the cyclic
    # garbage collector would rescan all of them again and again.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    # inf/NaN results (exp overflow, log of 0, ...) are values, as on the hardware.
    old_err = np.seterr(all="ignore")
    try:
        # The matrix products are small (one mad's tiles): BLAS threads only
        # contend with each other, and on a loaded machine made them 40x slower.
        with threadpool_limits(limits=1, user_api="blas"):
            return _simulate(module, inputs, entry, target, strict, serialize, numerics, wall0)
    finally:
        np.seterr(**old_err)
        if gc_was_enabled:
            gc.enable()


def _simulate(module: ir.Module, inputs: Sequence[np.ndarray], entry: str | None,
              target: Target | None, strict: bool, serialize: bool, numerics: bool,
              wall0: float) -> SimResult:
    target = target or get_target()
    func_op = find_entry(module, entry)
    where = where_of(func_op.location)
    program = Decoder(target).decode(func_op)
    _load_inputs(program, inputs, where)
    trailing = program.run_scalar()
    trace = program.trace

    def describe(stamp: int) -> tuple[str, str, str]:
        if stamp <= 0 or stamp > len(trace):
            return ("<inputs>", "-", where)
        instr = trace[stamp - 1][0]
        return (instr.name, PIPE_NAMES[instr.pipe], instr.where)

    hazards = HazardDetector(len(trace), program.n_groups, describe, races=not serialize, strict=strict)
    timeline = run(trace, Machine(hazards, numerics), hazards, target, trailing, serialize)
    outputs, own_bytes = [], []
    for i, (mem, region, dtype, shape) in enumerate(program.args):
        if i in program.workspace_args:
            continue  # scratch: neither an output nor required to end initialised
        # Only the argument's own elements: the granule padding is not its value.
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(DTYPES[dtype]).itemsize
        outputs.append(mem.data[:nbytes].view(DTYPES[dtype]).reshape(shape).copy())
        own_bytes.append((mem, nbytes, i))
    hazards.check_results(own_bytes)
    rep = report_mod.build(trace, timeline, program, target, hazards.hazards, serialize)
    wall = time.perf_counter() - wall0
    rep["wall_seconds"] = wall
    return SimResult(outputs, timeline.total_cycles, rep, list(hazards.hazards), timeline, trace,
                     target, wall)
