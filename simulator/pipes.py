"""The pipes: one in-order queue each, fed by the scalar unit, ordered by flags.

Timing model (all numbers from the target):

* the scalar unit (S) dispatches trace entries in program order; entry i is
  dispatched when S has spent its scalar cycles (`s_cost`), and S itself only
  stalls on a `wait_flag` whose destination is S or on `pipe_barrier(ALL)`
  (which waits for every instruction dispatched before it);
* an instruction starts at max(dispatch time, its pipe's next free cycle).
  the pipes in `target.pipelined_pipes` (by default V, M and the movers) are
  pipelined: the next instruction may start after `occupancy` cycles (bytes /
  bandwidth, repeats, cube blocks) and the result lands `latency` cycles
  later, so completion stays in order; any other pipe finishes one
  instruction (occupancy + latency) before starting the next;
* `set_flag(src, dst, e)` fires when every earlier instruction of src has
  finished and is visible `flag_latency` cycles later; the k-th `wait_flag`
  of (src, dst, e) consumes the k-th `set_flag` (a counting flag);
* `pipe_barrier(P)` holds later instructions of P until all earlier ones of
  P have finished.

Instructions execute (functionally and in the hazard detector) in the order
this engine resolves them, which respects every flag and barrier; for a
race-free program any such order gives the same result.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator
from itertools import accumulate
from operator import itemgetter

import numpy as np

from npu.simulator import compiled
from npu.simulator.errors import DEADLOCK, SimulationError
from npu.simulator.hazards import NCOMP, PIPE_NAMES, S, V, HazardDetector
from npu.simulator.instruction import BARRIER, OP, SET, WAIT
from npu.simulator.machine import Machine
from npu.simulator.timeline import Timeline
from npu.simulator.trace_codes import InstrTable, TraceCodes, check_flag_pairs, pipe_counts
from npu.target import CHIP_BARRIER_IN_FLIGHT, Target

NPIPES = len(PIPE_NAMES)
# A chip barrier (`cce.sync_all`) waits for every pipe of the core but this
# one: a core's GM writes (MTE3) and its compute must be done before it
# signals its arrival, but the loads still queued on MTE2 only fill its own
# on-chip buffers (npu-prefetch's constant weights for the next op), so
# they stream on through the barrier; npu-insert-sync orders their
# consumers after the barrier with flags (target.py: `sync_all_cycles`).
IN_FLIGHT = PIPE_NAMES.index(CHIP_BARRIER_IN_FLIGHT)


def pipelined_pipes(target: Target) -> frozenset[int]:
    """Indices of the pipes whose start-up latency overlaps the next instruction."""
    return frozenset(PIPE_NAMES.index(name) for name in target.pipelined_pipes)
INF = float("inf")


def run(trace: list, machine: Machine, hazards: HazardDetector, target: Target,
        trailing_scalar: int, serialize: bool, memsys=None,
        table: InstrTable | None = None) -> Timeline:
    """`memsys` (a `memory_system.MemorySystem`, shared by the cores of one
    launch) times GM transfers, else they cost their static occupancy. One
    core alone: each `sync_all` releases `sync_all_cycles` after it arrives."""
    core = start(trace, machine, hazards, target, trailing_scalar, serialize, memsys, table)
    try:
        arrival = next(core)
        while True:
            arrival = core.send(arrival + target.sync_all_cycles)
    except StopIteration as done:
        return done.value


def start(trace: list, machine: Machine, hazards: HazardDetector, target: Target,
          trailing_scalar: int, serialize: bool, memsys=None,
          table: InstrTable | None = None) -> Generator[int, int, Timeline]:
    """One core's run as a generator: it yields the cycle at which it reaches
    a `sync_all` (its pipes but MTE2 drained) and resumes at the cycle sent back, when
    every core has arrived (`launch.run_cores`); its value is the Timeline.
    `table`: the launch's instructions, shared by its cores (`trace_codes`)."""
    codes = TraceCodes.of(trace, table)
    check_flag_pairs(trace, codes)
    hazards.number_stamps(trace, [0] * NPIPES, codes.column("op_pipe"))
    if serialize:
        timeline = yield from _run_serialized(trace, machine, hazards, target, trailing_scalar)
    else:
        entry_pipes = codes.column("pipe")
        cengine = compiled.engine()
        engine = None
        # The C side numbers instruction kinds as instruction.py does (engine.h).
        if cengine is not None and cengine.KINDS == (OP, SET, WAIT, BARRIER):
            try:
                engine = cengine.Engine(trace, entry_pipes.astype(np.int8).tobytes(),
                                        machine.bound, machine.binder(), hazards.executed,
                                        compiled.gm_timer(memsys), target.flag_latency,
                                        tuple(pipelined_pipes(target)), codes.engine_info())
            except cengine.Unsupported:  # a number the C loop does not hold: Python's
                engine = None
        if engine is not None:
            timeline = yield from _run_compiled(engine, trace, trailing_scalar)
        else:
            timeline = yield from _run_parallel(trace, machine, hazards, target,
                                                trailing_scalar, memsys, entry_pipes)
    timeline.counts, timeline.sync_counts = pipe_counts(codes, len(trace))
    timeline.codes = codes
    return timeline


def _run_parallel(trace: list, machine: Machine, hazards: HazardDetector, target: Target,
                  trailing_scalar: int, memsys, entry_pipes: np.ndarray) -> Timeline:
    n_entries = len(trace)
    start = [0] * n_entries
    end = [0] * n_entries
    dispatch = [0] * n_entries
    snap: list = [None] * n_entries
    flag_latency = target.flag_latency
    pipelined_set = pipelined_pipes(target)
    queues = [deque() for _ in range(NPIPES)]
    # Vector clocks as lists: 7 components, joined and copied far more often
    # than the slow paths (which take them as arrays) read them.
    clock_lists = [[0] * NCOMP for _ in range(NPIPES)]
    last_snap: list = [None] * NPIPES
    counts = hazards.executed  # the run's live count per pipe (numbered stamps read it)
    free = [0] * NPIPES
    done = [0] * NPIPES
    busy = [0] * NPIPES
    busy_end = [0] * NPIPES
    # The scalar unit stalls only at its own instructions: between two of
    # them it hands every entry to its pipe in one step.
    s_entries = np.flatnonzero(entry_pipes == S).tolist() + [n_entries]
    s_next = 0  # index into s_entries of the first S entry at or after s_pos
    costs = list(map(itemgetter(2), trace))
    events: dict[tuple, deque] = {}
    set_of_event: dict[tuple, deque] = {}
    flows: list[tuple[int, int]] = []
    bound_get, bind = machine.bound.get, machine.bind
    s_clock = [0] * NCOMP
    s_pos = 0
    s_time = 0

    def raise_event(key: tuple, t: int, clock: list, entry: int) -> None:
        events.setdefault(key, deque()).append((t + flag_latency, clock))
        set_of_event.setdefault(key, deque()).append(entry)

    def take_event(key: tuple, entry: int):
        dq = events.get(key)
        if not dq:
            return None
        flows.append((set_of_event[key].popleft(), entry))
        return dq.popleft()

    while True:
        progressed = False
        # --- the scalar unit dispatches until it stalls --------------------------
        while s_pos < n_entries:
            while s_entries[s_next] < s_pos:
                s_next += 1
            stop = s_entries[s_next]
            if stop > s_pos:  # entries for the other pipes, up to the next S entry
                times = list(accumulate(costs[s_pos:stop], initial=s_time))
                dispatch[s_pos:stop] = times[1:]
                snap[s_pos:stop] = [s_clock] * (stop - s_pos)
                segment = entry_pipes[s_pos:stop]
                for p in range(1, NPIPES):
                    mine = np.flatnonzero(segment == p)
                    if mine.size:
                        queues[p].extend((mine + s_pos).tolist())
                s_time = times[-1]
                s_pos = stop
                progressed = True
                continue
            instr, _, cost = trace[s_pos]  # the scalar unit's own instruction
            t = s_time + cost
            kind = instr.kind
            if kind == WAIT:
                ev = take_event(instr.key, s_pos)
                if ev is None:
                    break
                start[s_pos] = t
                t = max(t, ev[0])
                s_clock = list(map(max, s_clock, ev[1]))
            elif kind == SET:
                start[s_pos] = t
                raise_event(instr.key, t, s_clock.copy(), s_pos)
            elif kind == BARRIER and instr.barrier_all:
                # a chip barrier leaves MTE2's loads in flight (IN_FLIGHT)
                skip = IN_FLIGHT if instr.chip else -1
                if any(q for p, q in enumerate(queues) if p != skip):
                    break
                start[s_pos] = t
                t = max([t] + [d for p, d in enumerate(done) if p != skip])
                joined = s_clock.copy()
                for p in range(1, NPIPES):
                    if p == skip:
                        continue
                    c = clock_lists[p].copy()
                    c[p] = counts[p]
                    joined = list(map(max, joined, c))
                s_clock = joined
                if instr.chip:  # the core's pipes drained, but MTE2: wait for the others
                    t = yield t
            else:
                start[s_pos] = t
            end[s_pos] = t
            s_time = t
            s_pos += 1
            progressed = True

        # --- the pipes: run the earliest-starting ready head, in bursts -------
        # Functional effects happen in simulated-time order, so an unsynchronised
        # program computes what this run's timing would give (and the hazard
        # detector still reports the race).
        while True:
            best = -1
            t_best = t_second = INF
            for p in range(1, NPIPES):
                q = queues[p]
                if not q:
                    continue
                # The earliest cycle the head could start; a wait with no flag is blocked.
                i = q[0]
                head = trace[i][0]
                t = dispatch[i] if dispatch[i] > free[p] else free[p]
                kind = head.kind
                if kind == WAIT:
                    dq = events.get(head.key)
                    if not dq:
                        continue  # blocked
                    if dq[0][0] > t:
                        t = dq[0][0]
                elif kind != OP and done[p] > t:
                    t = done[p]
                if t < t_best:
                    best, t_second, t_best = p, t_best, t
                elif t < t_second:
                    t_second = t
            if best < 0:
                break
            p = best
            q = queues[p]
            clock_l = clock_lists[p]
            pipelined = p in pipelined_set
            # This pipe's times, kept in locals for the burst (only it changes them).
            p_free, p_done, p_busy, p_busy_end = free[p], done[p], busy[p], busy_end[p]
            while q:
                i = q[0]
                instr, views, _ = trace[i]
                kind = instr.kind
                t0 = dispatch[i]
                if p_free > t0:
                    t0 = p_free
                if t0 > t_second:
                    break  # another pipe's head starts earlier: let it run first
                if kind == WAIT:
                    dq = events.get(instr.key)
                    if not dq or dq[0][0] > t_second:
                        break
                sn = snap[i]
                if sn is not last_snap[p]:
                    clock_l[:] = map(max, clock_l, sn)
                    last_snap[p] = sn
                if kind == OP:
                    n = counts[p] = counts[p] + 1
                    if p != V:
                        clock_l[p] = n
                    # Machine.execute, inlined: the operand set's runner.
                    entry = bound_get(id(views))
                    if entry is None or entry[0] is not views or entry[1] is not instr:
                        entry = bind(instr, views)
                    entry[2](i + 1, n, clock_l, clock_l)
                    occ = instr.occupancy
                    k = instr.gm_operand
                    if k is not None and memsys is not None:
                        region = views[k][0]
                        occ = memsys.transfer(t0, instr.nbytes, instr.n_bursts, instr.rate,
                                              region.mem, instr.src_pat if k == 0 else instr.dst_pat,
                                              region.base + views[k][1] * instr.esizes[k], k == 1)
                    e = t0 + occ + instr.latency
                    p_free = t0 + occ if pipelined else e
                    if e > p_done:
                        p_done = e
                    b0 = t0 if t0 > p_busy_end else p_busy_end
                    if e > b0:
                        p_busy += e - b0
                        p_busy_end = e
                    start[i] = t0
                    end[i] = e
                elif kind == WAIT:
                    ev = take_event(instr.key, i)
                    t = ev[0] if ev[0] > t0 else t0
                    clock_l[:] = map(max, clock_l, ev[1])
                    p_free = t
                    start[i] = t0
                    end[i] = t
                else:  # SET or BARRIER: wait for every earlier instruction of p
                    t = p_done if p_done > t0 else t0
                    if kind == SET:
                        c = clock_l.copy()
                        c[p] = counts[p]
                        raise_event(instr.key, t, c, i)
                    elif p == V:
                        clock_l[V] = counts[V]
                    p_free = t
                    start[i] = t
                    end[i] = t + (flag_latency if kind == SET else 0)
                q.popleft()
                progressed = True
                if kind == SET:
                    break  # a blocked pipe may be able to start earlier now
            free[p], done[p], busy[p], busy_end[p] = p_free, p_done, p_busy, p_busy_end
            if s_pos < n_entries and trace[s_pos][0].pipe == S:
                break  # the scalar unit may be able to move again

        if s_pos == n_entries and not any(queues):
            break
        if not progressed:
            _deadlock(trace, [(p, q[0]) for p, q in enumerate(queues) if p and q], s_pos)

    total = max([s_time + trailing_scalar] + done)
    busy[S] = min(total, sum(map(itemgetter(2), trace)) + trailing_scalar)
    unconsumed = [e for dq in set_of_event.values() for e in dq]
    return Timeline(start, end, total, busy, [], [], flows, unconsumed, dispatch)


def _run_compiled(engine, trace: list, trailing_scalar: int) -> Generator[int, int, Timeline]:
    """`_run_parallel` through the compiled loop (`compiled.py`): the same
    generator protocol, the same Timeline."""
    status, value = engine.step()
    while status == 1:  # a chip barrier: `value` is when this core arrived
        release = yield value
        status, value = engine.step(release)
    if status == 2:
        _deadlock(trace, engine.heads(), value)
    start, end, dispatch, s_time, done, busy, flows, unconsumed, costs = engine.results(True)
    total = max([s_time + trailing_scalar] + done)
    busy[S] = min(total, costs + trailing_scalar)
    start, end, dispatch = (np.frombuffer(b, np.int64) for b in (start, end, dispatch))
    return Timeline(start, end, total, busy, [], [], flows, unconsumed, dispatch)


def _deadlock(trace: list, heads: list[tuple[int, int]], s_pos: int) -> None:
    """`heads`: (pipe, its first entry) of every pipe with work left."""
    blocked = []
    if s_pos < len(trace):
        instr = trace[s_pos][0]
        what = (f"waits for flag {instr.flag_text}" if instr.kind == WAIT
                else "waits at pipe_barrier(ALL)")
        blocked.append((s_pos, f"S {what} at {instr.where}"))
    for p, i in heads:
        instr = trace[i][0]
        blocked.append((i, f"{PIPE_NAMES[p]} waits for flag {instr.flag_text} at {instr.where}"))
    blocked.sort()
    first = trace[blocked[0][0]][0]
    raise SimulationError(DEADLOCK, "every pipe with work left is blocked: "
                          + "; ".join(text for _, text in blocked), first.where)


def _run_serialized(trace: list, machine: Machine, hazards: HazardDetector, target: Target,
                    trailing_scalar: int) -> Timeline:
    """Each instruction waits for all earlier ones: no overlap, no races."""
    n_entries = len(trace)
    start = [0] * n_entries
    end = [0] * n_entries
    counts = [0] * NPIPES
    busy = [0] * NPIPES
    pending: dict[tuple, deque] = {}
    flows: list[tuple[int, int]] = []
    everything = [np.iinfo(np.int64).max // 2] * NCOMP
    counts = hazards.executed  # the run's live count per pipe (numbered stamps read it)
    dispatch = [0] * n_entries
    s_time = 0
    last = 0
    for i, (instr, views, cost) in enumerate(trace):
        s_time += cost
        dispatch[i] = s_time
        t0 = max(s_time, last)
        p = instr.pipe
        kind = instr.kind
        if kind == OP:
            n = counts[p] = counts[p] + 1
            machine.execute(instr, views, i + 1, n, everything, everything, p)
            e = t0 + instr.occupancy + instr.latency
            busy[p] += e - t0
        elif kind == SET:
            pending.setdefault(instr.key, deque()).append(i)
            e = t0
        elif kind == WAIT:
            dq = pending.get(instr.key)
            if not dq:
                raise SimulationError(DEADLOCK, f"'cce.wait_flag' ({instr.flag_text}) waits for a "
                                      "set_flag that comes later in program order; with "
                                      "serialize=True every instruction waits for all earlier ones",
                                      instr.where)
            flows.append((dq.popleft(), i))
            e = t0
        elif instr.chip:
            e = yield t0
            s_time = e
        else:
            e = t0
        start[i], end[i] = t0, e
        last = e
    total = max(s_time + trailing_scalar, last)
    busy[S] = min(total, sum(map(itemgetter(2), trace)) + trailing_scalar)
    unconsumed = [e for dq in pending.values() for e in dq]
    return Timeline(start, end, total, busy, [], [], flows, unconsumed, dispatch)
