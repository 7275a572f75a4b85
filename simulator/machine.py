"""Executes one instruction: checks every access, then applies its effect.

Checks, in order, for each access: the operand address is aligned to what
the instruction needs (its buffer's granule), the touched bytes lie inside
the operand's root allocation, and then the hazard detector's
uninitialised-read and race checks. This is the simulator's innermost loop,
so the per-access plan is precomputed once per instruction (`Instr.plan`).

Uninitialised bytes are an error where an instruction computes with them. A
movement instruction (`Instr.moves`: copies, loads, vnchwconv) instead
carries them: its own `compute` is replayed on the per-byte uninitialised
flags (`memory.Shadow`), so the destination bytes become exactly as
(un)initialised as the source bytes they came from.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from npu.simulator import compiled, fast_path
from npu.simulator.errors import ALIGNMENT, BOUNDS, INVALID, SimulationError
from npu.simulator.hazards import V, HazardDetector, least
from npu.simulator.instruction import Instr
from npu.simulator.memory import Memory
from npu.simulator.stamps import (BLOCKS_CACHE_ENTRIES, forget_granules, granule_answers,
                                  selection)


BOUND_CACHE_ENTRIES = 1 << 16


class Machine:
    """`numerics=False` (timing only) skips every instruction's arithmetic;
    addresses, bounds, alignment, races and the initialised state (which
    movement carries without looking at values) are checked as usual, and
    timing never depends on data, so the cycles are those of a full run.

    An instruction's operands (a trace entry's views) are bound once: their
    addresses, alignment and bounds checked, and each access resolved to its
    memory, hazard group, clean-read key and the granules it stamps
    (`static`). None of that depends on the core, so the cores of a launch
    share it (`shared`): a 32-core BERT binds 28k operand sets once each
    instead of 228k times, one per core that uses them. Loops dispatch the
    same views again and again (the hivm level shares one views tuple per
    address set), so the per-run work is the hazard checks and the effect."""

    # The use of an operand set from which it runs through a runner written for
    # it (`fast_path`); before, and with None always, the generic path runs. A
    # runner costs about as much to build as it saves in 20 executions, so only
    # operand sets that loops use many times get one (a BERT layer's are used
    # 4 to 15 times; the streaming and matmul benchmarks' 32 to 2,500).
    runner_from_use: int | None = 16
    # The same with the compiled generic path (`csrc/runner.c`), which is
    # cheaper than a `fast_path` runner: `sim_throughput.py` vector, timing
    # only, 0.159 -> 0.140 CPU s without runners, with numerics 0.284 -> 0.262.
    compiled_runner_from_use: int | None = None

    def __init__(self, hazards: HazardDetector, numerics: bool = True, cross=None, core: int = 0,
                 shared: "SharedBindings | None" = None):
        self.hazards = hazards
        self.numerics = numerics
        self.cross = cross  # hazards.CrossCoreChecker of a multi-core launch, or None
        self.core = core
        self.shared = shared if shared is not None else SharedBindings()
        # id(views) -> (views, instr, run(stamp, n, clock, clock list)); a
        # timing-only launch of many cores shares one (`SharedBindings.runners`).
        self.bound: dict[int, tuple] = ({} if cross is None or numerics
                                        else self.shared.runners)
        # The checks of `generic_checks`, compiled (`compiled.py`), on this core's state.
        self._generic = compiled.generic()
        # The same path as a callable the compiled loop calls without a frame
        # (`csrc/runner.c`), or None: `execute_generic` through a partial.
        self._runner_type = compiled.runner_type()
        # `bind` compiled (`_cengine.bind_run`) and its context, made at the first bind.
        self._cbind_run = compiled.bind_run()
        self._bind_ctx: tuple | None = None
        self._state = (hazards.initialised, hazards.summary_w, hazards.summary_r, hazards.races,
                       None if cross is None else cross.access, core, hazards, clear_uninit)

    def static(self, instr: Instr, views: tuple) -> tuple:
        """The core-independent binding of `instr` on `views` (checked once)."""
        entry = self.shared.bindings.get(id(views))
        if entry is None or entry[0] is not views or entry[1] is not instr:
            entry = self.shared.bind(instr, views, self.cross is not None)
        return entry

    def bind(self, instr: Instr, views: tuple) -> tuple:
        """`bind_python`, compiled (`csrc/bind.c`, `bind_run`) when the run
        uses the compiled generic path from an operand set's first use."""
        ctx = self._bind_ctx if self._bind_ctx is not None else self._bind_context()
        if ctx is not None and (ctx[2] is not self.shared.runners or self.shared.active is not None):
            return self._cbind_run(ctx, instr, views)
        return self.bind_python(instr, views)

    def binder(self):
        """What the compiled loop calls to bind an operand set: `bind_run` on
        this machine's context directly when `bind` would always take it (a
        core with its own runners), saving `bind`'s Python frame per new
        operand set (2 per tile of the vector bench); else `bind`."""
        ctx = self._bind_ctx if self._bind_ctx is not None else self._bind_context()
        if ctx is not None and ctx[2] is not self.shared.runners:
            return partial(self._cbind_run, ctx)
        return self.bind

    def _bind_context(self) -> tuple | None:
        """What `_cengine.bind_run` reads (kept once made), or None: the
        Python binding (no compiled runner, or a `runner_from_use` to honour)."""
        shared = self.shared
        if self._cbind_run is None or self._runner_type is None or shared._cbind is None:
            return None
        if self.bound is shared.runners:
            state, carried = shared.active_state, shared._carried_active
        elif self.cross is None and self.compiled_runner_from_use is not None:
            return None
        else:
            state, carried = self._state, self._carried
        self._bind_ctx = (shared, shared.bindings, self.bound, state, carried, bool(self.numerics),
                          self.cross is not None, self._runner_type, BOUND_CACHE_ENTRIES,
                          granule_answers(), BLOCKS_CACHE_ENTRIES)
        return self._bind_ctx

    def bind_python(self, instr: Instr, views: tuple) -> tuple:
        """The operand set's runner on this core: the generic path (and from
        its `runner_from_use`-th use a `fast_path` runner), or, timing only,
        no arithmetic at all (`compute` is not even built)."""
        _, _, mems, addrs, reads, writes = self.static(instr, views)
        if self.bound is self.shared.runners:  # every core's: the active one runs it
            return self.shared.runner(instr, views, mems, addrs, reads, writes)
        compute = instr.bound(mems, addrs) if self.numerics else None
        # A cross-core launch keeps the generic path (its GM checks).
        after = (None if self.cross is not None else self.runner_from_use
                 if self._runner_type is None else self.compiled_runner_from_use)
        if after is not None and after <= 1:
            run = self._runner(instr, mems, addrs, reads, writes, compute)
        else:
            # Generic executions left before the runner takes over, and the views.
            countdown = None if after is None else [after - 1, views]
            if self._runner_type is not None:
                upgrade = None if after is None else partial(
                    self._upgrade, views, instr, mems, addrs, reads, writes, compute)
                run = self._runner_type(self._state, instr, reads, writes, compute,
                                        self._carried, mems, addrs, after - 1 if after else 0,
                                        upgrade)
            else:
                run = partial(self.execute_generic, instr, mems, addrs, reads, writes, compute,
                              countdown)
        entry = (views, instr, run)
        if len(self.bound) >= BOUND_CACHE_ENTRIES:
            self.bound.clear()
        self.bound[id(views)] = entry
        return entry

    def _runner(self, instr: Instr, mems: list, addrs: list, reads: tuple, writes: tuple,
                compute):
        """`fast_path.runner` on this core's stamps: a read is (memory, group,
        pattern, address, clean-read key, its pipe's reader stamps, views of
        their whole granules (`Stamps.whole`) or None, cross-core GM access);
        a write the same without the key, with the writer stamps."""
        r = tuple((mem, group, pat, addr, token, st, st.whole(pat, addr), cross_gm)
                  for mem, group, pat, addr, token, _, cross_gm in reads
                  for st in (mem.readers(instr.pipe),))
        w = tuple((mem, group, pat, addr, mem.wstamp, mem.wstamp.whole(pat, addr), cross_gm)
                  for mem, group, pat, addr, _, cross_gm in writes)
        return fast_path.runner(self.hazards, instr, r, w, mems, addrs, compute, self.numerics)

    def release(self) -> None:
        """Drop the bound operand sets once the run is over: their generic
        paths refer back to the machine, and without this the cycle would
        leave every binding to the garbage collector."""
        self.bound.clear()
        self.shared.clear()
        self._bind_ctx = None  # holds this machine's `_carried` (`_bind_context`)
        forget_granules()
        compiled.forget_buffers()

    def execute(self, instr: Instr, views: tuple, stamp: int, n: int, clock: list,
                clock_list: list, pipe: int) -> None:
        """Check and apply one dynamic instruction: its operand set's runner
        (`fast_path.runner`, or the generic path on a multi-core launch)."""
        entry = self.bound.get(id(views))
        if entry is None or entry[0] is not views or entry[1] is not instr:
            entry = self.bind(instr, views)
        entry[2](stamp, n, clock, clock_list)

    def execute_generic(self, instr: Instr, mems: list, addrs: list, reads: tuple,
                        writes: tuple, compute, countdown: list | None, stamp: int, n: int,
                        clock: list, clock_list: list) -> None:
        if self._generic is not None:
            carry = self._generic(self._state, instr, instr.pipe, reads, writes, stamp, n, clock,
                                  clock_list)
        else:
            carry = self.generic_checks(instr, reads, writes, stamp, n, clock, clock_list)
        if self.numerics:
            compute()
        if carry:
            # Every destination byte gets the flag of the source byte it came from.
            instr.compute([m.uninit_shadow() for m in mems], addrs)
            self.hazards.initialised.clear()  # cached clean reads may now cover moved-in garbage
        if countdown is not None:
            countdown[0] -= 1
            if not countdown[0]:  # from the next use on, the runner
                self._upgrade(countdown[1], instr, mems, addrs, reads, writes, compute)

    def _carried(self, instr: Instr, mems: list, addrs: list) -> None:
        """A movement read uninitialised bytes: every destination byte gets
        the flag of the source byte it came from (the compiled runner's)."""
        instr.compute([m.uninit_shadow() for m in mems], addrs)
        self.hazards.initialised.clear()

    def _upgrade(self, views: tuple, instr: Instr, mems: list, addrs: list, reads: tuple,
                 writes: tuple, compute) -> None:
        """From the next use on, `views` runs through its `fast_path` runner."""
        self.bound[id(views)] = (views, instr, self._runner(instr, mems, addrs, reads, writes,
                                                            compute))

    def generic_checks(self, instr: Instr, reads: tuple, writes: tuple, stamp: int, n: int,
                       clock: list, clock_list: list) -> bool:
        """Every access's checks and stamps; True when a movement read
        uninitialised bytes (their flags move too). `_cengine.generic` is
        this loop compiled (`csrc/generic.c`), calling the same methods for
        every slow path."""
        # The hazard detector's fast paths are inlined here (this runs once per
        # dynamic instruction); the per-byte checks stay in HazardDetector.
        pipe = instr.pipe
        hz = self.hazards
        races = hz.races
        initialised = hz.initialised
        summary_w, summary_r = hz.summary_w, hz.summary_r
        # Clock components of the five memory pipes (V=1, M=2, MTE1..3=3..5).
        _, c1, c2, c3, c4, c5, _ = clock_list
        carry = False  # a movement read uninitialised bytes: move their flags too
        for mem, group, pat, addr, token, plan, cross_gm in reads:
            if cross_gm:
                self.cross.access(mem, pat, addr, False, self.core, instr, hz)
            if token not in initialised and not _clean(mem, plan, token, initialised) and \
                    hz.check_initialised(mem, pat, addr, token, instr):
                carry = True
            if races:
                sw = summary_w[group]
                if sw[1] > c1 or sw[2] > c2 or sw[3] > c3 or sw[4] > c4 or sw[5] > c5:
                    hz.check_read_vs_writes(mem, pat, addr, pipe, clock, clock_list, sw,
                                            instr.who)
                summary_r[group][pipe] = n
            stamps = mem.readers(pipe)
            if plan is not None:  # whole granules: the common case
                stamps.coarse[plan] = stamp
                if stamps.any_mixed:
                    stamps.mixed[plan] = False
            else:
                stamps.set_part(pat, addr, stamp)
        not_v = pipe != V
        for mem, group, pat, addr, plan, cross_gm in writes:
            if cross_gm:
                self.cross.access(mem, pat, addr, True, self.core, instr, hz)
            if races:
                # Epoch summaries of the group: only an access some pipe made at
                # an epoch this clock does not cover can race. Inside V,
                # write-after-write and write-after-read are ordered.
                sw = summary_w[group]
                if ((not_v and sw[1] > c1) or sw[2] > c2 or sw[3] > c3 or sw[4] > c4
                        or sw[5] > c5):
                    hz.check_write_vs_writes(mem, pat, addr, pipe, clock, clock_list, sw,
                                             instr.who)
                sr = summary_r[group]
                if ((not_v and sr[1] > c1) or sr[2] > c2 or sr[3] > c3 or sr[4] > c4
                        or sr[5] > c5):
                    hz.check_write_vs_reads(mem, pat, addr, pipe, clock, clock_list, sr,
                                            instr.who)
                sw[pipe] = n
            if pipe not in mem.writers:
                mem.writers.add(pipe)
            stamps = mem.wstamp
            if plan is not None:
                stamps.coarse[plan] = stamp
                if stamps.any_mixed:
                    stamps.mixed[plan] = False
            else:
                stamps.set_part(pat, addr, stamp)
            if mem.uninit is not None and not carry:
                clear_uninit(mem, pat, addr)
        return carry


def clear_uninit(mem: Memory, pat, addr: int) -> None:
    """Freshly written bytes are initialised."""
    mem.uninit.data[selection(pat, addr)] = 0


def _clean(mem: Memory, plan, token, initialised: set) -> bool:
    """`HazardDetector.check_initialised`'s answer for a read that is clean,
    found without it: whole granules (`plan`) each written as a whole, in a
    memory no movement has carried uninitialised bytes into. False sends
    the read to the full check."""
    if plan is None or mem.uninit is not None:
        return False
    ws = mem.wstamp
    if ws.any_mixed and np.count_nonzero(ws.mixed[plan]):
        return False
    values = ws.coarse[plan]
    if not values.size:
        return False
    # A few granules: Python's min on the list beats numpy's reduction set-up.
    if least(values) < 0:
        return False
    initialised.add(token)
    return True


class SharedBindings:
    """The core-independent part of binding operand sets, shared by the
    cores of a launch (they run one decoded program, so one views tuple)."""

    def __init__(self) -> None:
        # id(views) -> (views, instr, memories, addresses, reads, writes)
        self.bindings: dict[int, tuple] = {}
        self.tokens: dict[tuple, object] = {}  # (memory, address, pattern key) -> clean-read key
        # A timing-only launch of many cores: each core runs an operand set
        # about once (BERT-base x12 on 32 cores: 228k executions, 228k
        # per-core bindings of 28k sets), and its generic path depends on the
        # core only through the machine, so every core's pipes look up one
        # runner per set (`runner`), which runs on the machine of the core the
        # launch runs now (`active`, set by `launch.run_cores`).
        self.runners: dict[int, tuple] = {}
        self.active_state: list = [None]  # [the active machine's `_state`]
        self._active: Machine | None = None
        # `bind`, compiled (`csrc/bind.c`), or None: `bind_python` (the
        # reference, which the compiled one calls for whatever it refuses).
        self._cbind = compiled.bind_static()

    @property
    def active(self) -> "Machine | None":
        return self._active

    @active.setter
    def active(self, machine: "Machine | None") -> None:
        self._active = machine
        self.active_state[0] = None if machine is None else machine._state

    def _carried_active(self, instr: Instr, mems: list, addrs: list) -> None:
        self.active._carried(instr, mems, addrs)

    def runner(self, instr: Instr, views: tuple, mems: list, addrs: list, reads: tuple,
               writes: tuple) -> tuple:
        """The binding of `views` in `runners`: the active core's generic path
        without arithmetic (timing only)."""
        runner_type = self.active._runner_type if self.active is not None else None
        if runner_type is not None:  # compiled: on the active core's state (`active_state`)
            run = runner_type(self.active_state, instr, reads, writes, None, self._carried_active,
                              mems, addrs, 0, None)
        else:
            run = partial(self._run_active, instr, mems, addrs, reads, writes)
        entry = (views, instr, run)
        if len(self.runners) >= BOUND_CACHE_ENTRIES:
            self.runners.clear()
        self.runners[id(views)] = entry
        return entry

    def _run_active(self, instr: Instr, mems: list, addrs: list, reads: tuple, writes: tuple,
                    stamp: int, n: int, clock: list, clock_list: list) -> None:
        self.active.execute_generic(instr, mems, addrs, reads, writes, None, None, stamp, n,
                                    clock, clock_list)

    def bind(self, instr: Instr, views: tuple, cross: bool) -> tuple:
        """`bind_python`, compiled when the run uses the compiled pieces."""
        if self._cbind is not None:
            return self._cbind(self, instr, views, cross, granule_answers(), BOUND_CACHE_ENTRIES,
                               BLOCKS_CACHE_ENTRIES)
        return self.bind_python(instr, views, cross)

    def bind_python(self, instr: Instr, views: tuple, cross: bool) -> tuple:
        """Check every operand's alignment and bounds (all before any hazard
        check) and resolve its accesses. A read is (memory, group, pattern,
        address, clean-read key, how it stamps its granules (`Stamps.plan`),
        cross-core GM access); a write the same without the key. Every
        instruction reads before it writes."""
        esizes = instr.esizes
        regions = [v[0] for v in views]
        addrs = [v[0].base + v[1] * esizes[k] for k, v in enumerate(views)]
        reads, writes = [], []
        tokens = self.tokens
        for k, lo, hi, pat, dense, align, write, key in instr.plan:
            addr = addrs[k]
            region = regions[k]
            if addr % align:
                _misaligned(instr, k, addr, align, region)
            lo += addr
            hi += addr
            if lo < region.base or hi > region.base + region.size:
                _out_of_bounds(instr, k, lo, hi, write, region)
            mem = region.mem
            cross_gm = cross and mem.space == "gm"
            if write and mem.constant:
                raise SimulationError(INVALID, f"'{instr.name}' operand #{k} writes "
                                      f"{region.label}, an npu.constant (data compiled into "
                                      "the program)", instr.where)
            plan = mem.wstamp.plan(pat, addr)  # every core's stamps have its sizes
            if write:
                writes.append((mem, region.group, pat, addr, plan, cross_gm))
            else:
                # One key object per distinct clean read (hashed by identity).
                if len(tokens) >= BOUND_CACHE_ENTRIES:
                    tokens.clear()  # later binds make new keys: only the cache misses
                token = tokens.setdefault((mem, addr, key), object())
                reads.append((mem, region.group, pat, addr, token, plan, cross_gm))
        entry = (views, instr, [r.mem for r in regions], addrs, tuple(reads), tuple(writes))
        if len(self.bindings) >= BOUND_CACHE_ENTRIES:
            self.bindings.clear()
        self.bindings[id(views)] = entry
        return entry

    def clear(self) -> None:
        self.bindings.clear()
        self.tokens.clear()
        self.runners.clear()
        self.active = None


def _misaligned(instr: Instr, k: int, addr: int, align: int, region) -> None:
    raise SimulationError(
        ALIGNMENT, f"'{instr.name}' operand #{k} ({instr.operands[k].type_text}) is at "
        f"{region.mem.name} byte {addr}, not aligned to {align} bytes", instr.where)


def _out_of_bounds(instr: Instr, k: int, lo: int, hi: int, write: bool, region) -> None:
    verb = "writes" if write else "reads"
    raise SimulationError(
        BOUNDS, f"'{instr.name}' {verb} {region.mem.name} bytes [{lo}, {hi}) outside "
        f"its operand #{k}'s allocation [{region.base}, {region.base + region.size}) "
        f"({region.label})", instr.where)
