"""`simulate`: decode, run the scalar unit, run the pipes, report."""

from __future__ import annotations

import gc
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
from mlir import ir
from threadpoolctl import ThreadpoolController

from npu import ir as npu_ir
from npu.simulator import launch
from npu.simulator import report as report_mod
from npu.simulator.errors import INVALID, SimulationError, where_of
from npu.simulator.hazards import HazardDetector
from npu.simulator.machine import Machine
from npu.simulator.memory import DTYPES, INPUT_STAMP
from npu.simulator.memory_system import MemorySystem
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
    # A multi-core launch: each core's (trace entries, timeline), for the trace.
    core_traces: list = field(repr=False, default_factory=list)

    @property
    def instructions(self) -> int:
        return len(self.trace_entries)

    def text_report(self) -> str:
        return report_mod.format_text(self.report)

    def chrome_trace(self) -> dict:
        """Every core's pipes, grouped by core on a multi-core launch."""
        from npu.simulator.trace import chrome_trace, chrome_trace_cores
        if self.core_traces:
            return chrome_trace_cores(self.core_traces, self.target)
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
    (each one a GM tensor the caller passes in) but a multi-core kernel's
    block index (`npu.block_idx`, which the launch provides)."""
    name = npu_ir.symbol_name(func_op)
    where = where_of(func_op.location)
    if not func_op.regions[0].blocks:
        raise SimulationError(INVALID, f"'{name}' is only a declaration: an entry function needs "
                              "a body to run", where)
    blk = npu_ir.block_idx_arg(func_op)
    for i, t in enumerate(func_op.regions[0].blocks[0].arguments.types):
        if not npu_ir.is_memref(t) and i != blk:
            raise SimulationError(INVALID, f"argument #{i} of '{name}' has type {t}: an entry "
                                  "function takes memref arguments only (its tensors in GM)",
                                  where)
    return func_op


def _load_inputs(program: Program, inputs: Sequence[np.ndarray], where: str,
                 func_op: ir.Operation) -> None:
    """Copy `inputs` into the argument memories. Workspace arguments are
    scratch: when `inputs` leaves them out they stay uninitialised. An
    `npu.constant` argument's data is part of the program (the compiler may
    rely on it, e.g. a bias whose rows are all the same is read once), so its
    input must be that data."""
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
        raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)  # rank 0 has no byte view
        constant = npu_ir.arg_attrs(func_op, i).get("npu.constant")
        if constant is not None:
            compiled = npu_ir.constant_data(constant, shape, dtype).reshape(-1).view(np.uint8)
            # The compiled data's own buffer (`Interface.constants`) needs no comparing.
            same = (raw.size == compiled.size and raw.__array_interface__["data"][0]
                    == compiled.__array_interface__["data"][0])
            if not same and not np.array_equal(raw, compiled):
                raise SimulationError(INVALID, f"input #{n} differs from the data of argument "
                                      f"#{i}, an npu.constant the program was compiled for", where)
        mem.constant = constant is not None  # no instruction may write it (`Machine.bind`)
        if mem.constant and not raw.flags.writeable and raw.size == mem.data.size:
            mem.share(raw)  # the compiled data itself (`Interface.constants`), read-only
        else:
            mem.data[:raw.size] = raw
        mem.wstamp.set_range(0, raw.size, INPUT_STAMP)


def simulate(module: ir.Module, inputs: Sequence[np.ndarray], entry: str | None = None,
             target: Target | None = None, strict: bool = True, serialize: bool = False,
             numerics: bool = True, cores: int | None = None) -> SimResult:
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
    A kernel with `npu.block_dim = N` runs as N cores (each its own pipes,
    buffers and flags, seeing its number in the `npu.block_idx` argument)
    sharing GM through the memory system; `cores`, when given, is the launch
    size the caller expects, and a kernel split for another count is refused.
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
        # A timing-only run makes no products. Finding the BLAS libraries costs
        # about 1 ms, so it is done once (`_blas`): numpy's BLAS, the one the
        # products use, is loaded with numpy, before the first run.
        with _blas().limit(limits=1, user_api="blas") if numerics else nullcontext():
            return _simulate(module, inputs, entry, target, strict, serialize, numerics, wall0,
                             cores)
    finally:
        np.seterr(**old_err)
        if gc_was_enabled:
            # Everything the run made is still in the youngest generation (the
            # collector was off), so the first collection after it would scan
            # all of it: 0.4 CPU s after a 4-layer BERT on 32 cores, paid by
            # whatever allocates next (the per-op report). These objects live
            # as long as the result: move them to the oldest generation
            # (`freeze` then `unfreeze`, no scan), which a full collection
            # still scans.
            gc.freeze()
            gc.unfreeze()
            gc.enable()


_BLAS: list[ThreadpoolController] = []


def _blas() -> ThreadpoolController:
    """The process's thread-pool controller, made at the first run with numerics."""
    if not _BLAS:
        _BLAS.append(ThreadpoolController())
    return _BLAS[0]


def check_launch(func_op: ir.Operation, target: Target, cores: int | None) -> int:
    """The number of cores the kernel runs on; refuses a launch it cannot take."""
    where = where_of(func_op.location)
    name = npu_ir.symbol_name(func_op)
    n = npu_ir.block_dim(func_op)
    blk = npu_ir.block_idx_arg(func_op)
    if n < 1:
        raise SimulationError(INVALID, f"'{name}' has npu.block_dim = {n}; it must be at least 1",
                              where)
    if cores is not None and cores != n:
        raise SimulationError(INVALID, f"'{name}' was split for {n} core{'s' * (n != 1)} "
                              f"(npu.block_dim = {n}) and cannot run on {cores}: its block index "
                              "arithmetic depends on that count", where)
    if n > target.cores:
        raise SimulationError(INVALID, f"'{name}' is launched on {n} cores (npu.block_dim) but "
                              f"{target.name} has {target.cores}", where)
    if n > 1 and blk is None:
        raise SimulationError(INVALID, f"'{name}' is launched on {n} cores but has no "
                              "npu.block_idx argument: every core would do the same work", where)
    return n


def _simulate(module: ir.Module, inputs: Sequence[np.ndarray], entry: str | None,
              target: Target | None, strict: bool, serialize: bool, numerics: bool,
              wall0: float, cores: int | None = None) -> SimResult:
    target = target or get_target()
    func_op = find_entry(module, entry)
    where = where_of(func_op.location)
    n_cores = check_launch(func_op, target, cores)
    memsys = MemorySystem(target)
    program = Decoder(target).decode(func_op)
    _load_inputs(program, inputs, where, func_op)
    reports, all_hazards, core_traces = [], [], []
    if n_cores == 1:
        trace, timeline, hazards = _run_core(program, target, strict, serialize, numerics, memsys,
                                             where)
    else:
        runs = launch.run_cores(program, n_cores, target, strict, serialize, numerics, memsys,
                                where)
        for core_run in runs:
            trace, timeline, hazards = core_run.trace, core_run.timeline, core_run.hazards
            core_traces.append((trace, timeline))
            all_hazards += hazards.hazards
            reports.append(report_mod.build(trace, timeline, program, target, hazards.hazards,
                                            serialize))
            reports[-1]["barrier_wait_cycles"] = core_run.barrier_wait
    outputs, own_bytes = [], []
    for i, (mem, region, dtype, shape) in enumerate(program.args):
        if i in program.workspace_args:
            continue  # scratch: neither an output nor required to end initialised
        # Only the argument's own elements: the granule padding is not its value.
        nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(DTYPES[dtype]).itemsize
        # A view, not a copy: the run is over and nothing writes these bytes again.
        outputs.append(mem.data[:nbytes].view(DTYPES[dtype]).reshape(shape))
        own_bytes.append((mem, nbytes, i))
    hazards.check_results(own_bytes)
    if n_cores > 1:
        all_hazards += hazards.hazards[len(reports[-1]["hazards"]):]
        cycles = max(r["cycles"] for r in reports)
        rep = report_mod.combine(reports, memsys.summary(cycles))
    else:
        all_hazards = list(hazards.hazards)
        rep = report_mod.build(trace, timeline, program, target, hazards.hazards, serialize)
        rep["memory_system"] = memsys.summary(rep["cycles"])
        cycles = timeline.total_cycles
        reports = [rep]
    report_mod.chip_bound(rep, reports, target, sum(n for _, n, _ in own_bytes))
    wall = time.perf_counter() - wall0
    rep["wall_seconds"] = wall
    return SimResult(outputs, cycles, rep, all_hazards, timeline, trace, target, wall, core_traces)


def _run_core(program: Program, target: Target, strict: bool, serialize: bool, numerics: bool,
              memsys: MemorySystem, where: str):
    """A one-core launch: its scalar walk, its pipes, its own hazard checks."""
    trailing = program.run_scalar()
    trace = program.trace
    hazards = HazardDetector(len(trace), program.n_groups, launch.describer(trace, where),
                             races=not serialize, strict=strict)
    machine = Machine(hazards, numerics)
    try:
        timeline = run(trace, machine, hazards, target, trailing, serialize, memsys)
    finally:
        machine.release()
    if program.scalar_loads is not None:
        program.scalar_loads.check_unwritten()
    return trace, timeline, hazards
