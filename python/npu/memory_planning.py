"""The static memory planner shared by `npu-plan-memory` (on-chip buffers)
and `npu-plan-gm` (the GM workspace of a whole graph).

The planner sees buffers only as sizes with lifetimes (closed intervals of
program positions) and a conflict graph (which buffers may not share bytes);
the passes decide what a position and a conflict are. Two heuristics from the
seeds place the buffers:

* greedy by size (seed 000): largest first, each into the smallest gap
  between the already placed buffers it conflicts with that fits, else on top;
* MegEngine's pushdown (seed 002): in program order into the best-fitting
  free chunk; when none fits, grow the largest free chunk (pushing the chunks
  above it up) if that is cheaper than starting a new one on top.

Both results are then pushed down (every buffer onto the conflicting buffers
below it) and the plan with the lower peak wins (`algorithm="auto"`). The
lower bound is the most bytes live at once: no placement can beat it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence, TypeVar

import numpy as np

ALGORITHMS = ("auto", "greedy-by-size", "pushdown")


class Lifetime(Protocol):
    """What the planner needs of a buffer."""

    size: int   # bytes, already rounded to the granule / alignment
    start: int  # first program position where it is live
    end: int    # last program position where it is live (closed)


B = TypeVar("B", bound=Lifetime)


@dataclass
class Plan:
    peak: int          # bytes from 0 to the highest placed byte
    algorithm: str
    offsets: list[int] = field(default_factory=list)


def overlaps(a: Lifetime, b: Lifetime) -> bool:
    return a.start <= b.end and b.start <= a.end


def _ordered(buffers: Sequence[Lifetime]) -> bool:
    return all(b.start <= b.end for b in buffers)


def lower_bound(buffers: Sequence[Lifetime]) -> tuple[int, int]:
    """(most bytes live at once, a program position where that happens)."""
    best, where = 0, 0
    if not _ordered(buffers):  # the sweep below assumes start <= end
        for t in sorted({b.start for b in buffers}):
            live = sum(b.size for b in buffers if b.start <= t <= b.end)
            if live > best:
                best, where = live, t
        return best, where
    # Sweep the start positions: bytes live at t = started by t - ended before t.
    by_start = sorted(buffers, key=lambda b: b.start)
    by_end = sorted(buffers, key=lambda b: b.end)
    live = i = k = 0
    for t in sorted({b.start for b in buffers}):
        while i < len(by_start) and by_start[i].start <= t:
            live += by_start[i].size
            i += 1
        while k < len(by_end) and by_end[k].end < t:
            live -= by_end[k].size
            k += 1
        if live > best:
            best, where = live, t
    return best, where


def lifetime_bounds(buffers: Sequence[Lifetime]) -> tuple[int, int]:
    """(lower, upper) bound of the peak `place` reaches with plain lifetime
    conflicts (`overlap_graph`). Lower: the most bytes live at once. Upper:
    the largest sum of sizes over the connected components of the lifetimes
    (after compaction every buffer rests on a chain of conflicting buffers of
    its own component). When the two meet, that is the peak, without placing."""
    if not buffers:
        return 0, 0
    low = lower_bound(buffers)[0]
    if not _ordered(buffers):
        return low, sum(b.size for b in buffers)
    high = component = 0
    end = None
    for b in sorted(buffers, key=lambda b: b.start):
        if end is None or b.start > end:  # a new component starts
            high, component, end = max(high, component), 0, b.end
        component += b.size
        end = max(end, b.end)
    return low, max(high, component)


def overlap_graph(buffers: Sequence[Lifetime]) -> list[set[int]]:
    """`conflict_graph(buffers, overlaps)`, by a sweep in start order instead
    of testing every pair (npu-double-buffer plans once per loop)."""
    if not _ordered(buffers):
        return conflict_graph(buffers, overlaps)
    adj: list[set[int]] = [set() for _ in buffers]
    live: list[int] = []
    for i in sorted(range(len(buffers)), key=lambda i: buffers[i].start):
        start = buffers[i].start
        live = [j for j in live if buffers[j].end >= start]
        for j in live:
            adj[i].add(j)
            adj[j].add(i)
        live.append(i)
    return adj


def conflict_graph(buffers: Sequence[B], conflicts: Callable[[B, B], bool]) -> list[set[int]]:
    n = len(buffers)
    adj: list[set[int]] = [set() for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            if conflicts(buffers[i], buffers[j]):
                adj[i].add(j)
                adj[j].add(i)
    return adj


def _gaps(placed: list[tuple[int, int]]) -> tuple[list[tuple[int, int]], int]:
    """Free [lo, hi) gaps below the top of `placed` intervals, and the top."""
    gaps, cursor = [], 0
    for lo, hi in sorted(placed):
        if lo > cursor:
            gaps.append((cursor, lo))
        cursor = max(cursor, hi)
    return gaps, cursor


# A buffer conflicting with at least this many others is placed with numpy
# (`_Dense`), the same answer as the Python lists: on BERT-12 at 32 cores the
# strictest window's UB graph has 1,441 buffers of 520 conflicts each on
# average, and placing it took 0.42 CPU s, most of npu-plan-memory's placing.
DENSE = 48


def neighbours(adj: list[set[int]]) -> list[np.ndarray | None]:
    """Each buffer's conflicts as an index array when it has many (`DENSE`),
    else None: made once for all the placements of one graph."""
    return [np.fromiter(a, np.int64, len(a)) if len(a) >= DENSE else None for a in adj]


class _Dense:
    """Offsets and sizes as arrays beside the lists, for the buffers with
    many conflicts (`DENSE`): their neighbours as an index array."""

    def __init__(self, sizes: list[int], adj: list[set[int]], offsets: list[int],
                 nbrs: list[np.ndarray | None] | None = None):
        self.sizes = np.array(sizes, np.int64)
        self.offsets = np.array(offsets, np.int64)
        self.nbrs = neighbours(adj) if nbrs is None else nbrs

    def gaps(self, i: int) -> tuple[np.ndarray, np.ndarray, int]:
        """`_gaps` of buffer i's placed neighbours: (gap starts, gap ends) in
        ascending order, and the top."""
        nb = self.nbrs[i]
        lo = self.offsets[nb]
        placed = lo >= 0
        lo = lo[placed]
        if not lo.size:
            return lo, lo, 0
        hi = lo + self.sizes[nb][placed]
        order = np.lexsort((hi, lo))
        lo, hi = lo[order], hi[order]
        cursor = np.maximum.accumulate(hi)
        before = np.concatenate(([0], cursor[:-1]))
        gap = lo > before
        return before[gap], lo[gap], int(cursor[-1])

    def below(self, i: int, new: np.ndarray) -> int:
        """`compact`'s offset for buffer i: the top of its placed neighbours."""
        nb = self.nbrs[i]
        tops = new[nb]
        placed = tops >= 0
        return int((tops[placed] + self.sizes[nb][placed]).max()) if placed.any() else 0


def _best_fit(starts: np.ndarray, ends: np.ndarray, size: int) -> int | None:
    """The start of the narrowest gap that fits `size` (the lowest of equals),
    as `min(fitting, key=(width, lo))` picks it; None when none fits."""
    widths = ends - starts
    fitting = np.flatnonzero(widths >= size)
    if not fitting.size:
        return None
    return int(starts[fitting[np.argmin(widths[fitting])]])


def _fit(i: int, offsets: list[int], sizes: list[int], adj: list[set[int]],
         dense: _Dense) -> tuple[int | None, list[tuple[int, int]], int]:
    """Buffer i among its placed neighbours: the start of the narrowest gap
    that fits it (the lowest of equals; None when none fits), the gaps when
    none fits, and the neighbours' top."""
    if dense.nbrs[i] is not None:
        starts, ends, top = dense.gaps(i)
        fit = _best_fit(starts, ends, sizes[i])
        return fit, (list(zip(starts.tolist(), ends.tolist())) if fit is None else []), top
    placed = [(offsets[j], offsets[j] + sizes[j]) for j in adj[i] if offsets[j] >= 0]
    gaps, top = _gaps(placed)
    fitting = [g for g in gaps if g[1] - g[0] >= sizes[i]]
    return (min(fitting, key=lambda g: (g[1] - g[0], g[0]))[0] if fitting else None), gaps, top


def greedy_by_size(buffers: Sequence[Lifetime], adj: list[set[int]],
                   nbrs: list[np.ndarray | None] | None = None) -> list[int]:
    order = sorted(range(len(buffers)), key=lambda i: (-buffers[i].size, buffers[i].start))
    offsets = [-1] * len(buffers)
    sizes = [b.size for b in buffers]
    dense = _Dense(sizes, adj, offsets, nbrs)
    for i in order:
        fit, _, top = _fit(i, offsets, sizes, adj, dense)
        offsets[i] = dense.offsets[i] = top if fit is None else fit
    return offsets


def pushdown(buffers: Sequence[Lifetime], adj: list[set[int]],
             nbrs: list[np.ndarray | None] | None = None) -> list[int]:
    order = sorted(range(len(buffers)), key=lambda i: (buffers[i].start, -buffers[i].size))
    offsets = [-1] * len(buffers)
    peak = 0  # top of everything placed so far (kept as it goes: rescanning was quadratic)
    sizes = [b.size for b in buffers]
    dense = _Dense(sizes, adj, offsets, nbrs)
    for i in order:
        size = sizes[i]
        fit, gaps, top = _fit(i, offsets, sizes, adj, dense)
        if fit is not None:
            offsets[i] = dense.offsets[i] = fit
            peak = max(peak, offsets[i] + size)
            continue
        if gaps:
            lo, hi = max(gaps, key=lambda g: (g[1] - g[0], -g[0]))
            grow = size - (hi - lo)
            if peak + grow < max(peak, top + size):
                for j in range(len(buffers)):
                    if offsets[j] >= hi:
                        offsets[j] += grow
                offsets[i] = lo
                dense.offsets = np.array(offsets, np.int64)
                peak = max((offsets[j] + buffers[j].size for j in range(len(buffers))
                            if offsets[j] >= 0), default=0)
                continue
        offsets[i] = dense.offsets[i] = top
        peak = max(peak, top + size)
    return offsets


def compact(buffers: Sequence[Lifetime], adj: list[set[int]], offsets: list[int],
            nbrs: list[np.ndarray | None] | None = None) -> list[int]:
    """Push every buffer down onto the conflicting buffers below it (keeps order)."""
    order = sorted(range(len(buffers)), key=lambda i: (offsets[i], i))
    new = [-1] * len(buffers)
    sizes = [b.size for b in buffers]
    dense = _Dense(sizes, adj, new, nbrs)
    for i in order:
        # Placed already (new[j] >= 0) is below in (offset, index) order:
        # `order` is that order, its keys distinct.
        if dense.nbrs[i] is not None:
            new[i] = dense.offsets[i] = dense.below(i, dense.offsets)
            continue
        below = [new[j] + sizes[j] for j in adj[i] if new[j] >= 0]
        new[i] = dense.offsets[i] = max(below, default=0)
    return new


def peak(buffers: Sequence[Lifetime], offsets: list[int]) -> int:
    return max((o + b.size for o, b in zip(offsets, buffers)), default=0)


def check_disjoint(buffers: Sequence[Lifetime], adj: list[set[int]], offsets: list[int],
                   nbrs: list[np.ndarray | None] | None = None) -> None:
    """Conflicting buffers must not share a byte (a planner bug otherwise)."""
    sizes = [b.size for b in buffers]
    dense = _Dense(sizes, adj, offsets, nbrs)
    for i in range(len(buffers)):
        lo, hi = offsets[i], offsets[i] + sizes[i]
        nb = dense.nbrs[i]
        if nb is not None:
            starts = dense.offsets[nb]
            clash = (lo < starts + dense.sizes[nb]) & (starts < hi)
            if clash.any():
                j = int(nb[np.flatnonzero(clash)[0]])
                raise AssertionError(f"planner bug: buffers #{i} and #{j} overlap")
            continue
        for j in adj[i]:
            if lo < offsets[j] + sizes[j] and offsets[j] < hi:
                raise AssertionError(f"planner bug: buffers #{i} and #{j} overlap")


def place(buffers: Sequence[Lifetime], adj: list[set[int]], algorithm: str = "auto") -> Plan:
    """Offsets for `buffers` such that no two adjacent in `adj` share bytes."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown planning algorithm '{algorithm}'")
    candidates = []
    nbrs = neighbours(adj)
    if algorithm in ("auto", "greedy-by-size"):
        candidates.append(("greedy-by-size", compact(buffers, adj, greedy_by_size(buffers, adj, nbrs),
                                                     nbrs)))
    if algorithm in ("auto", "pushdown"):
        candidates.append(("pushdown", compact(buffers, adj, pushdown(buffers, adj, nbrs), nbrs)))
    best = None
    for name, offsets in candidates:
        check_disjoint(buffers, adj, offsets, nbrs)
        plan = Plan(peak(buffers, offsets), name, offsets)
        if best is None or plan.peak < best.peak:
            best = plan
    return best
