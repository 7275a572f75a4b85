"""`npu-plan-memory`: a static byte offset (`npu.offset`) for every on-chip
`memref.alloc` (l1, l0a, l0b, l0c, ub).

Why: the buffers are small and have no allocator at run time; reusing bytes
between buffers whose lifetimes do not overlap is what lets big tiles fit.

* Lifetimes are intervals over program order. An alloc inside a loop body
  lives for the whole body (the next iteration's instance of the same buffer
  and every other buffer of the body share the loop); a use inside a nested
  loop extends the lifetime over that whole loop.
* Two buffers may share bytes only if their lifetimes are disjoint. The
  planner first also refuses reuse that would add a dependency between two
  pipes (the earlier buffer's last access and the later one's first access on
  different pipes), so that pipes stay free to overlap; if that does not fit
  a buffer, it refuses such reuse only between lifetimes that are close in
  program order (shrinking windows), and at last falls back to plain
  lifetime reuse.
* Two heuristics place the buffers: greedy-by-size best gap (largest first,
  into the smallest gap between conflicting buffers that fits) and
  MegEngine's pushdown (simulate allocation in program order with best-fit
  free chunks, growing the largest free chunk when none fits, then push every
  chunk down onto the chunks below it). The plan with the lower peak wins.
* Offsets and sizes are whole granules of their buffer (target.granule).

Per buffer the pass records bytes allocated, the lower bound (most bytes live
at once), the sum of sizes (no reuse) and the capacity in the function's
`npu.memory_plan` attribute (and as a remark with `remarks=true`); the same
figures come from `plan_function` as dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir

from npu.access_analysis import OFFSET_ATTR
from npu.ir import i64_attr, walk
from npu.passes.base import Option, Pass, PassError
from npu.passes.buffer_lifetimes import Buffer, collect_buffers
from npu.target import ON_CHIP_BUFFERS, Target

__all__ = ["Buffer", "collect_buffers", "plan_function", "PlanMemoryPass"]

PLAN_ATTR = "npu.memory_plan"
ALGORITHMS = ("auto", "greedy-by-size", "pushdown")


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


@dataclass
class _Plan:
    peak: int
    algorithm: str
    offsets: list[int] = field(default_factory=list)


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


def lower_bound(buffers: list[Buffer]) -> tuple[int, int]:
    """(most bytes live at once, a program position where that happens)."""
    events = sorted({b.start for b in buffers})
    best, where = 0, 0
    for t in events:
        live = sum(b.size for b in buffers if b.start <= t <= b.end)
        if live > best:
            best, where = live, t
    return best, where


# ----------------------------------------------------------------------------
# Placement heuristics (on a conflict graph)
# ----------------------------------------------------------------------------


def _gaps(placed: list[tuple[int, int]]) -> tuple[list[tuple[int, int]], int]:
    """Free [lo, hi) gaps below the top of `placed` intervals, and the top."""
    gaps, cursor = [], 0
    for lo, hi in sorted(placed):
        if lo > cursor:
            gaps.append((cursor, lo))
        cursor = max(cursor, hi)
    return gaps, cursor


def greedy_by_size(buffers: list[Buffer], adj: list[set[int]]) -> list[int]:
    order = sorted(range(len(buffers)), key=lambda i: (-buffers[i].size, buffers[i].start))
    offsets = [-1] * len(buffers)
    for i in order:
        placed = [(offsets[j], offsets[j] + buffers[j].size) for j in adj[i] if offsets[j] >= 0]
        gaps, top = _gaps(placed)
        fitting = [g for g in gaps if g[1] - g[0] >= buffers[i].size]
        offsets[i] = min(fitting, key=lambda g: (g[1] - g[0], g[0]))[0] if fitting else top
    return offsets


def pushdown(buffers: list[Buffer], adj: list[set[int]]) -> list[int]:
    """MegEngine-style: allocate in program order into the best-fitting free
    chunk; when none fits, grow the largest free chunk (pushing the chunks
    above it up) if that is cheaper than starting a new one on top."""
    order = sorted(range(len(buffers)), key=lambda i: (buffers[i].start, -buffers[i].size))
    offsets = [-1] * len(buffers)
    for i in order:
        size = buffers[i].size
        placed = [(offsets[j], offsets[j] + buffers[j].size) for j in adj[i] if offsets[j] >= 0]
        gaps, top = _gaps(placed)
        fitting = [g for g in gaps if g[1] - g[0] >= size]
        if fitting:
            offsets[i] = min(fitting, key=lambda g: (g[1] - g[0], g[0]))[0]
            continue
        peak = max((offsets[j] + buffers[j].size for j in range(len(buffers)) if offsets[j] >= 0),
                   default=0)
        if gaps:
            lo, hi = max(gaps, key=lambda g: (g[1] - g[0], -g[0]))
            grow = size - (hi - lo)
            if peak + grow < max(peak, top + size):
                for j in range(len(buffers)):
                    if offsets[j] >= hi:
                        offsets[j] += grow
                offsets[i] = lo
                continue
        offsets[i] = top
    return offsets


def compact(buffers: list[Buffer], adj: list[set[int]], offsets: list[int]) -> list[int]:
    """Push every buffer down onto the conflicting buffers below it (keeps order)."""
    order = sorted(range(len(buffers)), key=lambda i: (offsets[i], i))
    new = [-1] * len(buffers)
    for i in order:
        below = [new[j] + buffers[j].size for j in adj[i]
                 if new[j] >= 0 and (offsets[j], j) < (offsets[i], i)]
        new[i] = max(below, default=0)
    return new


def _peak(buffers: list[Buffer], offsets: list[int]) -> int:
    return max((o + b.size for o, b in zip(offsets, buffers)), default=0)


def _check(buffers: list[Buffer], adj: list[set[int]], offsets: list[int]) -> None:
    for i, b in enumerate(buffers):
        for j in adj[i]:
            c = buffers[j]
            if offsets[i] < offsets[j] + c.size and offsets[j] < offsets[i] + b.size:
                raise AssertionError(f"planner bug: {b.name} overlaps {c.name}")


def place(buffers: list[Buffer], window: int | None, algorithm: str) -> _Plan:
    n = len(buffers)
    adj = [set() for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            if conflicts(buffers[i], buffers[j], window):
                adj[i].add(j)
                adj[j].add(i)
    candidates = []
    if algorithm in ("auto", "greedy-by-size"):
        candidates.append(("greedy-by-size", compact(buffers, adj, greedy_by_size(buffers, adj))))
    if algorithm in ("auto", "pushdown"):
        candidates.append(("pushdown", compact(buffers, adj, pushdown(buffers, adj))))
    best = None
    for name, offsets in candidates:
        _check(buffers, adj, offsets)
        plan = _Plan(_peak(buffers, offsets), name, offsets)
        if best is None or plan.peak < best.peak:
            best = plan
    return best


# ----------------------------------------------------------------------------
# The API and the pass
# ----------------------------------------------------------------------------


def plan_function(func_op: ir.Operation, target: Target, algorithm: str = "auto",
                  apply: bool = True) -> dict[str, SpacePlan]:
    """Plan every on-chip buffer of `func_op`; with `apply`, write `npu.offset`s."""
    buffers = collect_buffers(func_op, target)
    result: dict[str, SpacePlan] = {}
    for space in ON_CHIP_BUFFERS:
        group = [b for b in buffers if b.space == space]
        if not group:
            continue
        capacity = target.capacity(space)
        bound, when = lower_bound(group)
        for window in WINDOWS:
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


def _overflow(group: list[Buffer], plan: _Plan, bound: int, when: int, capacity: int,
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

    def run(self, module: ir.Operation) -> None:
        for func in walk(module, lambda o: o.name == "func.func"):
            if not func.regions[0].blocks:
                continue
            plans = plan_function(func, self.target, self.algorithm)
            if self.remarks:
                for p in plans.values():
                    self.remark(func, f"{p.space}: allocated {p.allocated} B, lower bound "
                                f"{p.lower_bound} B, sum of sizes {p.total} B, capacity "
                                f"{p.capacity} B ({p.buffers} buffers, {p.algorithm}"
                                f"{'' if p.pipe_aware else ', reuse across pipes'})")
