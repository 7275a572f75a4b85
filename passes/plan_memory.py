"""`npu-plan-memory`: a static byte offset (`npu.offset`) for every on-chip
`memref.alloc` (l1, l0a, l0b, l0c, ub).

Why: the buffers are small and have no allocator at run time; reusing bytes
between buffers whose lifetimes do not overlap is what lets big tiles fit.

* Lifetimes are intervals over program order. An alloc inside a loop body
  lives for the whole body (the next iteration's instance of the same buffer
  and every other buffer of the body share the loop), unless only vector
  instructions touch it: then it lives over its uses (reusing its bytes
  orders V after V, across iterations too, which V's in-order pipeline
  gives for free); a use inside a nested loop extends the lifetime over
  that whole loop.
* Two buffers may share bytes only if their lifetimes are disjoint. The
  planner first also refuses reuse that would add a dependency between two
  pipes (the earlier buffer's last access and the later one's first access on
  different pipes), so that pipes stay free to overlap; if that does not fit
  a buffer, it refuses such reuse only between lifetimes that are close in
  program order (shrinking windows), and at last falls back to plain
  lifetime reuse.
* The placement (greedy by size and MegEngine's pushdown, the lower peak
  wins) is the shared planner of `npu.memory_planning`, also used by
  `npu-plan-gm` for the GM workspace.
* Offsets and sizes are whole granules of their buffer (target.granule).

Per buffer the pass records bytes allocated, the lower bound (most bytes live
at once), the sum of sizes (no reuse) and the capacity in the function's
`npu.memory_plan` attribute (and as a remark with `remarks=true`); the same
figures come from `plan_function` as dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from npu import memory_planning as planner
from npu.analysis.access import OFFSET_ATTR
from npu.ir import functions, i64_attr
from npu.memory_planning import ALGORITHMS, Plan, lower_bound
from npu.passes.base import Option, Pass, PassError
from npu.passes.buffer_lifetimes import Buffer, BufferCollector, collect_buffers, collector_for
from npu.target import ON_CHIP_BUFFERS, Target

__all__ = ["Buffer", "collect_buffers", "plan_function", "PlanMemoryPass"]

PLAN_ATTR = "npu.memory_plan"


@dataclass(frozen=True)
class SpacePlan:
    """The plan of one on-chip buffer (memory space)."""

    space: str
    allocated: int     # bytes from 0 to the highest allocated byte
    lower_bound: int   # most bytes live at once
    total: int         # sum of all sizes (no reuse)
    capacity: int
    algorithm: str
    buffers: int
    pipe_aware: bool   # True when no reuse adds a cross-pipe dependency
    window: int | None = None  # see WINDOWS


# ----------------------------------------------------------------------------
# Conflicts (lifetimes: npu.passes.buffer_lifetimes)
# ----------------------------------------------------------------------------


# Pipe-aware windows tried in turn (program positions between the end of one
# lifetime and the start of the next within which reuse is refused when it
# would add a cross-pipe dependency); None is unlimited, 0 plain lifetimes.
WINDOWS = (None, 256, 64, 16, 0)


def conflicts(a: Buffer, b: Buffer, window: int | None) -> bool:
    """May a and b not share bytes? Overlapping lifetimes never may; with a
    window, neither may buffers whose reuse would make a pipe wait for
    another (last access of the first and first access of the second on
    different pipes) when they are less than `window` positions apart."""
    if a.overlaps(b):
        return True
    if window == 0:
        return False
    first, second = (a, b) if a.end < b.start else (b, a)
    if window is not None and second.start - first.end > window:
        return False
    return (first.last_pipe is not None and second.first_pipe is not None
            and first.last_pipe != second.first_pipe)


class _Lifetimes:
    """A group's lifetimes and pipes as arrays, for testing many pairs at once."""

    def __init__(self, buffers: list[Buffer]):
        codes: dict[str, int] = {}
        self.n = len(buffers)
        self.start = np.array([b.start for b in buffers], np.int64)
        self.end = np.array([b.end for b in buffers], np.int64)
        self.last = np.array([-1 if b.last_pipe is None
                              else codes.setdefault(b.last_pipe, len(codes)) for b in buffers], np.int64)
        self.first = np.array([-1 if b.first_pipe is None
                               else codes.setdefault(b.first_pipe, len(codes)) for b in buffers], np.int64)
        self.columns = np.arange(self.n)

    def conflicts(self, rows: np.ndarray, window: int | None) -> np.ndarray:
        """[len(rows), n]: does buffer rows[k] conflict with buffer j? Pair
        (i, j), i < j, is tested as `conflicts(buffers[i], buffers[j])`."""
        start, end, last, first, columns = self.start, self.end, self.last, self.first, self.columns
        below = columns[None, :] < rows[:, None]  # j < i: tested as conflicts(b_j, b_i)
        a_start = np.where(below, start[None, :], start[rows, None])
        a_end = np.where(below, end[None, :], end[rows, None])
        b_start = np.where(below, start[rows, None], start[None, :])
        b_end = np.where(below, end[rows, None], end[None, :])
        a_last = np.where(below, last[None, :], last[rows, None])
        a_first = np.where(below, first[None, :], first[rows, None])
        b_last = np.where(below, last[rows, None], last[None, :])
        b_first = np.where(below, first[rows, None], first[None, :])
        overlap = (a_start <= b_end) & (b_start <= a_end)
        a_before = a_end < b_start  # else b is the first of the two
        gap = np.where(a_before, b_start - a_end, a_start - b_end)
        earlier_last = np.where(a_before, a_last, b_last)
        later_first = np.where(a_before, b_first, a_first)
        hand_over = (earlier_last >= 0) & (later_first >= 0) & (earlier_last != later_first)
        if window is not None:
            hand_over &= gap <= window
        conflict = overlap | hand_over
        conflict[np.arange(len(rows)), rows] = False
        return conflict


def conflict_graph(buffers: list[Buffer], window: int | None, rows: int = 512) -> list[set[int]]:
    """`planner.conflict_graph(buffers, conflicts(., ., window))`, every pair
    tested at once with numpy (a few rows at a time to bound the memory):
    testing pair by pair in Python was most of the pass on a large model.
    Pair (i, j), i < j, is tested as `conflicts(buffers[i], buffers[j])`."""
    lifetimes = _Lifetimes(buffers)
    adj: list[set[int]] = []
    for r0 in range(0, lifetimes.n, rows):
        conflict = lifetimes.conflicts(np.arange(r0, min(lifetimes.n, r0 + rows)), window)
        adj += [set(np.flatnonzero(row).tolist()) for row in conflict]
    return adj


def exceeds(buffers: list[Buffer], window: int | None, capacity: int) -> bool:
    """True when no placement under `conflicts(., ., window)` fits in
    `capacity`: a clique of pairwise conflicting buffers (grown greedily,
    largest first) needs the sum of its sizes. The unlimited window makes
    nearly every pair conflict on a large function, where placing only to
    find the overflow cost more than all the other windows together."""
    lifetimes = _Lifetimes(buffers)
    candidates = np.ones(lifetimes.n, bool)
    total = 0
    for i in sorted(range(lifetimes.n), key=lambda i: -buffers[i].size):
        if candidates[i]:
            total += buffers[i].size
            if total > capacity:
                return True
            candidates &= lifetimes.conflicts(np.array([i]), window)[0]
    return False


def place(buffers: list[Buffer], window: int | None, algorithm: str) -> Plan:
    if window == 0:  # plain lifetimes: conflicts are overlaps
        adj = planner.overlap_graph(buffers)
    else:
        adj = conflict_graph(buffers, window)
    return planner.place(buffers, adj, algorithm)


# ----------------------------------------------------------------------------
# The API and the pass
# ----------------------------------------------------------------------------


def plan_function(func_op: ir.Operation, target: Target, algorithm: str = "auto",
                  apply: bool = True, collector: BufferCollector | None = None
                  ) -> dict[str, SpacePlan]:
    """Plan every on-chip buffer of `func_op`; with `apply`, write `npu.offset`s.
    `collector`: one that follows `func_op` as it is now (see `PlanMemoryPass.collectors`)."""
    buffers = (collector or BufferCollector(target)).collect(func_op)
    result: dict[str, SpacePlan] = {}
    for space in ON_CHIP_BUFFERS:
        group = [b for b in buffers if b.space == space]
        if not group:
            continue
        capacity = target.capacity(space)
        bound, when = lower_bound(group)
        for window in WINDOWS:
            if window != 0 and exceeds(group, window, capacity):
                continue  # placing would only find the overflow
            plan = place(group, window, algorithm)
            if plan.peak <= capacity:
                break
        pipe_aware = window is None
        if plan.peak > capacity:
            _overflow(group, plan, bound, when, capacity, space)
        for b, off in zip(group, plan.offsets):
            b.offset = off
        result[space] = SpacePlan(space, plan.peak, bound, sum(b.size for b in group), capacity,
                                  plan.algorithm, len(group), pipe_aware, window)
    if apply:
        with func_op.context:
            for b in buffers:
                b.op.attributes[OFFSET_ATTR] = i64_attr(b.offset)
            func_op.attributes[PLAN_ATTR] = ir.DictAttr.get({
                p.space: ir.DictAttr.get({
                    "allocated": i64_attr(p.allocated), "lower_bound": i64_attr(p.lower_bound),
                    "sum": i64_attr(p.total), "capacity": i64_attr(p.capacity),
                    "algorithm": ir.StringAttr.get(p.algorithm),
                    "pipe_aware": ir.BoolAttr.get(p.pipe_aware)})
                for p in result.values()})
    return result


def _overflow(group: list[Buffer], plan: Plan, bound: int, when: int, capacity: int,
              space: str) -> None:
    worst = max(range(len(group)), key=lambda i: plan.offsets[i] + group[i].size)
    live = sorted((b for b in group if b.start <= when <= b.end), key=lambda b: -b.size)
    listing = ", ".join(b.name for b in live[:3])
    raise PassError(
        f"{space} overflows: {plan.peak} bytes needed but only {capacity} available "
        f"(at least {bound} bytes are live at once; {len(group)} buffers, "
        f"{sum(b.size for b in group)} bytes without reuse); "
        f"largest allocations live at the peak: {listing}", group[worst].op)


class PlanMemoryPass(Pass):
    name = "npu-plan-memory"
    summary = "Assign npu.offset to every on-chip memref.alloc (lifetime-based reuse)"
    options = (
        Option("algorithm", str, "auto", "placement heuristic; auto keeps the better of both",
               choices=ALGORITHMS),
        Option("remarks", bool, False, "report the plan of each buffer as a remark on the function"),
    )

    # func -> a `BufferCollector` that follows it up to this pass (left by
    # `npu-double-buffer` when `npu-lower` runs the two back to back): its
    # lifetimes are those of a fresh analysis, which is then not repeated.
    collectors: dict[ir.Operation, BufferCollector] = {}

    def run(self, module: ir.Operation) -> None:
        for func in functions(module):
            if not func.regions[0].blocks:
                continue
            plans = plan_function(func, self.target, self.algorithm,
                                  collector=collector_for(self.collectors, func))
            if self.remarks:
                for p in plans.values():
                    self.remark(func, f"{p.space}: allocated {p.allocated} B, lower bound "
                                f"{p.lower_bound} B, sum of sizes {p.total} B, capacity "
                                f"{p.capacity} B ({p.buffers} buffers, {p.algorithm}"
                                f"{'' if p.pipe_aware else ', reuse across pipes'})")
