"""On-chip buffers and which of them may share bytes: what `npu-plan-memory`
places, and what `BufferCollector.planned_at` (`npu-double-buffer`) places
for one top-level op.

A `Buffer` is one on-chip alloc with its lifetime in program positions and
the pipes of its first and last access (the lifetimes come from
`npu.passes.buffer_lifetimes`). Two buffers may share bytes only if their
lifetimes are disjoint and, within a window, if reusing the bytes would not
make one pipe wait for another (`conflicts`); `place` lays a group out with
the shared planner of `npu.memory_planning`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from npu import memory_planning as planner
from npu.diagnostics import _location_parts
from npu.memory_planning import Plan


# Count a guarded buffer's hand-over from its guard's end (`Buffer.release`).
# False only to measure what that gains (test_guard_release_cycles: BERT seq
# 256 on 32 cores; the other rows in docs/multicore.md).
GUARD_RELEASE = True

# A buffer's hand-over to a buffer of a later kernel spans from the end of its
# own kernel to the start of the later one (`Buffer.kernel_end`,
# `kernel_start`), not between the two accesses: inside a kernel the pipes
# that read L1, L0 and UB late (MTE1, M, V) run behind its loads (MTE2), which
# run ahead into the next kernel, so in time the previous kernel's last reads
# of a buffer freed early in program order meet the next kernel's loads into
# those bytes, which would wait for them. Applied where the bytes allow only
# (`_kernel_plan`, up to KERNEL_ROUNDS placements). False only to measure
# what that gains.
KERNEL_RELEASE = True
KERNEL_ROUNDS = 32


@dataclass
class Buffer:
    """One on-chip alloc and what the planner knows about it."""

    op: ir.Operation
    space: str
    size: int               # bytes, rounded up to the granule
    start: int              # lifetime [start, end] in program positions
    end: int
    first_pipe: str | None  # pipe of the first / last access in program order
    last_pipe: str | None
    offset: int = -1
    vector_only: bool = False  # a loop-body buffer only V touches (see `buffer_pieces.vector_only`)
    # A buffer inside an `scf.if` (a core guard, a conv's band plans): the
    # outermost one's last position.
    # npu-insert-sync orders a later access of its bytes outside the guard
    # by flags set after the whole guard, so a hand-over waits for the
    # guard's last work on the pipe, however early the buffer's own last
    # access (-1: none).
    release: int = -1
    # The first and last position of the kernel it belongs to (the top-level
    # ops of its source op; -1: unknown): see KERNEL_RELEASE
    # (`npu.passes.buffer_kernels`).
    kernel_start: int = -1
    kernel_end: int = -1

    @property
    def handed_over(self) -> int:
        """Where a next user of its bytes outside its guard may start without
        waiting on another pipe's later work: its end, or its guard's
        (`release`); inside the guard, its end counts."""
        return max(self.end, self.release) if GUARD_RELEASE else self.end

    @property
    def kernel_release(self) -> int | None:
        """Its kernel's end where that is past `handed_over` (`KERNEL_RELEASE`), else None."""
        return self.kernel_end if KERNEL_RELEASE and self.kernel_end > self.handed_over else None

    @property
    def name(self) -> str:
        filename, line, col = _location_parts(self.op.location)
        where = f"line {line}" if line else "unknown location"
        return f"{self.space} alloc of {self.size} B at {where}"

    def overlaps(self, other: "Buffer") -> bool:
        return planner.overlaps(self, other)



# Pipe-aware windows tried in turn (program positions between the end of one
# lifetime and the start of the next within which reuse is refused when it
# would add a cross-pipe dependency); None is unlimited, 0 plain lifetimes.
# The 128 step: from 256 straight to 64, ResNet-50's layer4.0 downsample map
# reused the tail of the 3x3/2 conv's map 70 positions after it and waited
# for that conv's last img2col (3.4k cycles of idle MTE2).
WINDOWS = (None, 256, 128, 64, 16, 0)
_UNLIMITED = np.iinfo(np.int64).max  # the window None, in per-buffer windows


def conflicts(a: Buffer, b: Buffer, window: int | None) -> bool:
    """May a and b not share bytes? Overlapping lifetimes never may; with a
    window, neither may buffers whose reuse would make a pipe wait for
    another (last access of the first and first access of the second on
    different pipes) when they are less than `window` positions apart (from
    the first's kernel's end to the second's kernel's start when the second
    is past the first's kernel: KERNEL_RELEASE)."""
    if a.overlaps(b):
        return True
    if window == 0:
        return False
    first, second = (a, b) if a.end < b.start else (b, a)
    handed = first.handed_over if second.start > first.handed_over else first.end
    if first.kernel_release is not None and second.start > first.kernel_release:
        gap = _kernel_gap(first, second)  # a later kernel's buffer
    else:
        gap = second.start - handed
    if window is not None and gap > window:
        return False
    return (first.last_pipe is not None and second.first_pipe is not None
            and first.last_pipe != second.first_pipe)


def _kernel_gap(first: Buffer, second: Buffer) -> int:
    """Positions from the end of `first`'s kernel to the start of `second`'s."""
    start = second.kernel_start if second.kernel_start >= 0 else second.start
    return start - first.kernel_release


class _Lifetimes:
    """A group's lifetimes and pipes as arrays, for testing many pairs at once."""

    def __init__(self, buffers: list[Buffer]):
        codes: dict[str, int] = {}
        self.n = len(buffers)
        self.start = np.array([b.start for b in buffers], np.int64)
        self.end = np.array([b.end for b in buffers], np.int64)
        self.release = np.array([b.handed_over for b in buffers], np.int64)
        self.kernel = np.array([_UNLIMITED if b.kernel_release is None else b.kernel_release
                                for b in buffers], np.int64)
        self.kernel_start = np.array([b.kernel_start if b.kernel_start >= 0 else b.start
                                      for b in buffers], np.int64)
        self.last = np.array([-1 if b.last_pipe is None
                              else codes.setdefault(b.last_pipe, len(codes)) for b in buffers], np.int64)
        self.first = np.array([-1 if b.first_pipe is None
                               else codes.setdefault(b.first_pipe, len(codes)) for b in buffers], np.int64)

    def conflicts(self, rows: np.ndarray, window: int | None | np.ndarray,
                  kernels: np.ndarray | None = None) -> np.ndarray:
        """[len(rows), n]: does buffer rows[k] conflict with buffer j? Pair
        (i, j), i < j, is tested as `conflicts(buffers[i], buffers[j])`.
        Of two lifetimes that do not overlap, the one that ends first is
        `first` whichever of the two is tested as a; only when each ends
        before the other starts (unordered lifetimes, start > end) is the
        first the one earlier in the list. So rows are not swapped with
        columns into list order (those swaps were ten of the matrices this
        built, 0.37 CPU s of BERT-12's compile on 32 cores).
        `window` may also be one per buffer (`_UNLIMITED` for None): a pair
        then takes the smaller of its two (see `place_relaxed`); `kernels`,
        one per buffer, whether its hand-overs to a later kernel count
        between the kernels (KERNEL_RELEASE; a pair's do when both buffers'
        do; None: all do)."""
        a_start, a_end = self.start[rows, None], self.end[rows, None]
        b_start, b_end = self.start[None, :], self.end[None, :]
        a_before = a_end < b_start
        b_before = b_end < a_start
        overlap = ~(a_before | b_before)
        both = a_before & b_before
        if both.any():  # the one earlier in the list is first
            a_before &= ~(both & (np.arange(self.n)[None, :] < rows[:, None]))
        # (a later buffer inside the same guard: its own end)
        a_rel, b_rel = self.release[rows, None], self.release[None, :]
        a_op, b_op = self.kernel[rows, None], self.kernel[None, :]
        if kernels is not None:
            both_kernel = kernels[rows, None] & kernels[None, :]
            a_op = np.where(both_kernel, a_op, _UNLIMITED)
            b_op = np.where(both_kernel, b_op, _UNLIMITED)
        a_ks, b_ks = self.kernel_start[rows, None], self.kernel_start[None, :]
        gap = np.where(a_before,
                       np.where(b_start > a_op, b_ks - a_op,
                                b_start - np.where(b_start > a_rel, a_rel, a_end)),
                       np.where(a_start > b_op, a_ks - b_op,
                                a_start - np.where(a_start > b_rel, b_rel, b_end)))
        earlier_last = np.where(a_before, self.last[rows, None], self.last[None, :])
        later_first = np.where(a_before, self.first[None, :], self.first[rows, None])
        hand_over = (earlier_last >= 0) & (later_first >= 0) & (earlier_last != later_first)
        if isinstance(window, np.ndarray):
            hand_over &= gap <= np.minimum(window[rows, None], window[None, :])
        elif window is not None:
            hand_over &= gap <= window
        conflict = overlap | hand_over
        conflict[np.arange(len(rows)), rows] = False
        return conflict


def conflict_graph(buffers: list[Buffer], window: int | None | np.ndarray,
                   rows: int = 512, kernels: np.ndarray | None = None) -> list[set[int]]:
    """`planner.conflict_graph(buffers, conflicts(., ., window))`, every pair
    tested at once with numpy (a few rows at a time to bound the memory):
    testing pair by pair in Python was most of the pass on a large model.
    Pair (i, j), i < j, is tested as `conflicts(buffers[i], buffers[j])`."""
    lifetimes = _Lifetimes(buffers)
    adj: list[set[int]] = []
    for r0 in range(0, lifetimes.n, rows):
        conflict = lifetimes.conflicts(np.arange(r0, min(lifetimes.n, r0 + rows)), window, kernels)
        adj += [set(np.flatnonzero(row).tolist()) for row in conflict]
    return adj


def _window_array(levels: np.ndarray) -> np.ndarray:
    """Each buffer's window (`_UNLIMITED` for None) from its index into WINDOWS."""
    table = np.array([_UNLIMITED if w is None else w for w in WINDOWS], np.int64)
    return table[levels]


def _exceeding_clique(lifetimes: "_Lifetimes", sizes: np.ndarray, levels: np.ndarray,
                      capacity: int) -> list[int] | None:
    """A clique of pairwise conflicting buffers (grown greedily, largest
    first) whose sizes sum past `capacity`, or None: no placement under
    these windows can fit such a clique."""
    candidates = np.ones(lifetimes.n, bool)
    windows, kernels = _window_array(levels), np.zeros(lifetimes.n, bool)
    total, clique = 0, []
    for i in np.argsort(-sizes, kind="stable"):
        if candidates[i]:
            total += int(sizes[i])
            clique.append(int(i))
            if total > capacity:
                return clique
            candidates &= lifetimes.conflicts(np.array([i]), windows, kernels)[0]
    return None


def start_levels(buffers: list[Buffer], capacity: int) -> np.ndarray:
    """Each buffer's strictest window (index into WINDOWS) that no clique
    rules out: while some clique of conflicting buffers needs more than
    `capacity`, its members take the next window. The unlimited window
    makes nearly every pair conflict on a large function, where placing
    only to find the overflow cost more than all the other windows
    together; a clique found this way is the buffers that must give way."""
    lifetimes = _Lifetimes(buffers)
    sizes = np.array([b.size for b in buffers], np.int64)
    levels = np.zeros(len(buffers), np.int64)
    last = len(WINDOWS) - 1
    while True:
        clique = _exceeding_clique(lifetimes, sizes, levels, capacity)
        members = [i for i in clique or () if levels[i] < last]
        if not members:
            return levels  # fits, or overflows on plain lifetimes (`place` finds out)
        levels[members] += 1


def place(buffers: list[Buffer], window: int | None, algorithm: str) -> Plan:
    if window == 0:  # plain lifetimes: conflicts are overlaps
        adj = planner.overlap_graph(buffers)
    else:
        adj = conflict_graph(buffers, window)
    return planner.place(buffers, adj, algorithm)


@dataclass
class RelaxedPlan:
    """`place_relaxed`'s result: the plan and each buffer's window."""

    plan: Plan
    windows: list[int | None]

    @property
    def window(self) -> int | None:
        """The most relaxed window any buffer got (None: all pipe-aware)."""
        return min(self.windows, key=lambda w: _UNLIMITED if w is None else w, default=None)


def place_relaxed(buffers: list[Buffer], capacity: int, algorithm: str,
                  rounds: int = 8) -> RelaxedPlan:
    """A placement that relaxes the pipe-aware window only where the bytes
    run out, instead of for the whole function: every buffer starts at
    the strictest window no clique rules out for it (`start_levels`); after
    a placement that overflows, the buffers placed past `capacity` and those
    they conflict with (what pushed them up) take the next window, and the
    group is placed again. After `rounds` local steps every buffer takes the
    next window (as a function-wide fallback did), so it ends, at worst, at
    plain lifetimes, where the whole group fit before.

    Why: in a whole model on one core (one function), one kernel that fills
    UB had every kernel's buffers planned on plain lifetimes: ResNet-18's
    layer3.0 and layer4.0 downsample convs then had their drain slots at one
    UB offset, each drain waiting for the previous slot's store (8,686 and
    11,102 cycles against 6,742 and 8,510 estimated; with the slots apart
    6,997 and 8,444, and the whole model on one core 874,976 -> 837,072)."""
    levels = start_levels(buffers, capacity)
    last = len(WINDOWS) - 1
    local = 0
    off = np.zeros(len(buffers), bool)
    while True:
        adj = (planner.overlap_graph(buffers) if not levels.size or levels.min() == last
               else conflict_graph(buffers, _window_array(levels), kernels=off))
        plan = planner.place(buffers, adj, algorithm)
        if plan.peak <= capacity or not levels.size or levels.min() == last:
            if plan.peak <= capacity and levels.size and levels.min() < last:
                plan = _kernel_plan(buffers, capacity, algorithm, levels) or plan
            return RelaxedPlan(plan, [WINDOWS[k] for k in levels])
        over = [i for i, b in enumerate(buffers) if plan.offsets[i] + b.size > capacity]
        touched = sorted({j for i in over for j in adj[i]} | set(over))
        if local < rounds and any(levels[j] < last for j in touched):
            local += 1
            for j in touched:
                levels[j] = min(last, levels[j] + 1)
        else:
            local = 0
            levels = np.minimum(last, levels + 1)


def _kernel_plan(buffers: list[Buffer], capacity: int, algorithm: str,
                 levels: np.ndarray) -> Plan | None:
    """`place_relaxed`'s plan refined at its windows (`levels`): hand-overs to
    a later kernel count between the kernels (KERNEL_RELEASE), except for
    the buffers placed past `capacity` (or, when those are already
    excepted, the buffers they conflict with), placed again up to
    KERNEL_ROUNDS times; None when that does not fit (no window is given up
    for it).

    Why: ResNet-50 on one core: layer2.1 conv3's first loads reused the L1
    of conv2's band chunks, freed 900-1,600 positions earlier in program
    order but read by MTE1 until conv2's end in time, and conv3's MTE2
    waited 13.6k cycles for them (one core: ResNet-50 1,796,435 ->
    1,793,241, ResNet-18 725,744 -> 720,393, MobileNetV2 780,427 -> 774,122)."""
    if not KERNEL_RELEASE or all(b.kernel_release is None for b in buffers):
        return None
    kernels = np.ones(len(buffers), bool)
    windows = _window_array(levels)
    for _ in range(KERNEL_ROUNDS):
        adj = conflict_graph(buffers, windows, kernels=kernels)
        plan = planner.place(buffers, adj, algorithm)
        if plan.peak <= capacity:
            return plan
        over = [i for i, b in enumerate(buffers) if plan.offsets[i] + b.size > capacity]
        touched = [i for i in over if kernels[i]] or [
            j for j in {j for i in over for j in adj[i]} if kernels[j]]
        if not touched:
            return None
        kernels[touched] = False
    return None


__all__ = ["Buffer", "RelaxedPlan", "WINDOWS", "conflict_graph", "conflicts", "place",
           "place_relaxed", "start_levels"]
