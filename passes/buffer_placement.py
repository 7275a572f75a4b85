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
GUARD_RELEASE = True


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

    @property
    def handed_over(self) -> int:
        """Where a next user of its bytes outside its guard may start without
        waiting on another pipe's later work: its end, or its guard's
        (`release`); inside the guard, its end counts."""
        return max(self.end, self.release) if GUARD_RELEASE else self.end

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
    handed = first.handed_over if second.start > first.handed_over else first.end
    if window is not None and second.start - handed > window:
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
        self.release = np.array([b.handed_over for b in buffers], np.int64)
        self.last = np.array([-1 if b.last_pipe is None
                              else codes.setdefault(b.last_pipe, len(codes)) for b in buffers], np.int64)
        self.first = np.array([-1 if b.first_pipe is None
                               else codes.setdefault(b.first_pipe, len(codes)) for b in buffers], np.int64)
        self.columns = np.arange(self.n)

    def conflicts(self, rows: np.ndarray, window: int | None) -> np.ndarray:
        """[len(rows), n]: does buffer rows[k] conflict with buffer j? Pair
        (i, j), i < j, is tested as `conflicts(buffers[i], buffers[j])`."""
        start, end, last, first, columns = self.start, self.end, self.last, self.first, self.columns
        release = self.release
        below = columns[None, :] < rows[:, None]  # j < i: tested as conflicts(b_j, b_i)
        a_start = np.where(below, start[None, :], start[rows, None])
        a_end = np.where(below, end[None, :], end[rows, None])
        a_rel = np.where(below, release[None, :], release[rows, None])
        b_rel = np.where(below, release[rows, None], release[None, :])
        b_start = np.where(below, start[rows, None], start[None, :])
        b_end = np.where(below, end[rows, None], end[None, :])
        a_last = np.where(below, last[None, :], last[rows, None])
        a_first = np.where(below, first[None, :], first[rows, None])
        b_last = np.where(below, last[rows, None], last[None, :])
        b_first = np.where(below, first[rows, None], first[None, :])
        overlap = (a_start <= b_end) & (b_start <= a_end)
        a_before = a_end < b_start  # else b is the first of the two
        # (a later buffer inside the same guard: its own end)
        a_out = np.where(b_start > a_rel, a_rel, a_end)
        b_out = np.where(a_start > b_rel, b_rel, b_end)
        gap = np.where(a_before, b_start - a_out, a_start - b_out)
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


__all__ = ["Buffer", "WINDOWS", "conflict_graph", "conflicts", "exceeds", "place"]
