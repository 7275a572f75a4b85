"""A launch over many cores, run from one decoded program.

Every core runs the same function; only its block index (`npu.block_idx`)
differs. So the function is decoded once: each core's scalar walk sets the
index and fills its own trace, and each core's on-chip buffers (their bytes
and shadow state) are swapped into the program's one set of buffer memories
while that core runs (`CoreBuffers`). GM is one memory system for all.

The cores run phase by phase: each until its next `sync_all` (or its end).
When every core has arrived the barrier releases `sync_all_cycles` after the
last arrival, and everything before it is ordered before everything after it
on every core (the cross-core checker starts a new epoch).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generator

from npu.simulator import compiled
from npu.simulator.errors import DEADLOCK, SimulationError
from npu.simulator.hazards import PIPE_NAMES, CrossCoreChecker, HazardDetector
from npu.simulator.machine import Machine, SharedBindings
from npu.simulator.memory import INPUT_STAMP, NEVER_WRITTEN, Memory
from npu.simulator.memory_system import MemorySystem
from npu.simulator.pipes import Timeline, start
from npu.simulator.program import Program
from npu.simulator.trace_codes import InstrTable
from npu.target import Target


@dataclass
class CoreRun:
    """One core of the launch: its trace, checks, machine and run."""

    core: int
    trace: list
    hazards: HazardDetector
    machine: Machine
    runner: Generator[int, int, Timeline]
    timeline: Timeline | None = None
    barrier_wait: int = 0  # cycles spent at chip barriers, arrival to release


@dataclass
class CoreBuffers:
    """Each core's state of the on-chip buffers the program was decoded
    with: the active core's lives in the `Memory` objects, the others' are
    put aside (`Memory.export_state`). Swapping moves references, not bytes."""

    mems: list[Memory]
    active: int | None = None
    saved: dict[int, list[tuple]] = field(default_factory=dict)

    def activate(self, core: int) -> None:
        if core == self.active:
            return
        if self.active is None:  # the decoded buffers are still blank: the first core's
            self.active = core
            return
        self.saved[self.active] = [m.export_state() for m in self.mems]
        state = self.saved.pop(core, None)
        for k, mem in enumerate(self.mems):
            mem.import_state(None if state is None else state[k])
        self.active = core


def walk_cores(program: Program, cores: int) -> list[tuple[list, int]]:
    """Every core's scalar walk: (its trace, its trailing scalar cycles).
    The hazard groups are numbered once, over every core's operand views."""
    walks, issued = [], 0
    for core in range(cores):
        program.set_block_idx(core)
        trailing = program.walk(issued)
        issued += len(program.trace)
        walks.append((list(program.trace), trailing))
        program.trace.clear()
    program.number_groups()
    return walks


def run_cores(program: Program, cores: int, target: Target, strict: bool,
              serialize: bool, numerics: bool, memsys: MemorySystem, where: str) -> list[CoreRun]:
    """Run the launch to its end; returns each core's run, timeline included."""
    cross = CrossCoreChecker(cores)
    buffers = CoreBuffers(list(program.on_chip.values()))
    shared = SharedBindings()  # the operand sets' checks, done once for every core
    table = InstrTable()  # the instructions' facts, read once for every core
    compiled_hand_over = compiled.hand_over()
    runs = []
    for core, (trace, trailing) in enumerate(walk_cores(program, cores)):
        hazards = HazardDetector(len(trace), program.n_groups, describer(trace, where),
                                 races=not serialize, strict=strict)
        machine = Machine(hazards, numerics, cross, core, shared)
        runs.append(CoreRun(core, trace, hazards, machine,
                            start(trace, machine, hazards, target, trailing, serialize, memsys,
                                  table)))
    release, barrier = None, 0
    try:
        while True:
            arrived = []
            for run in runs:
                if run.timeline is not None:
                    continue
                buffers.activate(run.core)
                shared.active = run.machine
                read, written = cross.take_touched()
                if compiled_hand_over is None or not compiled_hand_over(
                        written, read, INPUT_STAMP, NEVER_WRITTEN):
                    hand_over(read, written)
                try:
                    arrived.append((run.runner.send(release) if release is not None
                                    else next(run.runner), run))
                except StopIteration as stop:
                    run.timeline = stop.value
                    if program.scalar_loads is not None:
                        program.scalar_loads.check_unwritten()
            if not arrived:
                break
            if len(arrived) < len(runs):
                ended = next(r.core for r in runs if r.timeline is not None)
                raise SimulationError(DEADLOCK, f"core {arrived[0][1].core} waits at sync_all "
                                      f"#{barrier + 1} but core {ended} has ended: every core "
                                      "must reach every chip barrier", where)
            release = max(t for t, _ in arrived) + target.sync_all_cycles
            for t, run in arrived:
                run.barrier_wait += release - t
            barrier += 1
            cross.new_epoch()
    finally:
        for run in runs:
            run.machine.release()
    return runs


def hand_over(read, written) -> None:
    """What other cores wrote to GM is, to this core's own race and
    initialisation checks, data from outside (the cross-core checker owns
    conflicts between cores). `read`, `written`: the memories the cores read,
    and wrote, since the last hand-over. Every GM write of a launch goes
    through the cross-core check, so the writer stamps of a memory nobody
    wrote since are still clamped, and the reader stamps of one nobody read
    are still reset (BERT-base x12 on 32 cores: most memories a core
    touches are only read, weights; their clamp's `max` was 3% of the run).
    The compiled run does this in C (`csrc/partial.c`, `_cengine.hand_over`)."""
    for mem in written:
        mem.wstamp.clamp(INPUT_STAMP)
    for mem in read:
        for readers in mem.rstamp.values():  # in place: bound operand sets hold them
            readers.reset(NEVER_WRITTEN)


def describer(trace: list, where: str):
    """The hazard detector's name for a stamp: (instruction, pipe, location)."""
    def describe(stamp: int) -> tuple[str, str, str]:
        if stamp <= 0 or stamp > len(trace):
            return ("<inputs>", "-", where)
        instr = trace[stamp - 1][0]
        return (instr.name, PIPE_NAMES[instr.pipe], instr.where)
    return describe
