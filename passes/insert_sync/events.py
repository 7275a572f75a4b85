"""`npu-insert-sync` mode=precise, event ids: the flag pairs, their
allocation by interval colouring, and where a loop-carried pair's pre-set
and balancing wait go (`carried-span` fit / block)."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from npu.passes.insert_sync.nodes import Node



@dataclass(eq=False)
class FlagPair:
    """One set_flag/wait_flag pair; `loop` is set for a loop-carried pair.
    Compared by identity (each pair is one object): a field-by-field
    compare of their nodes made every list removal walk the nodes."""

    src: str
    dst: str
    producer: Node
    consumer: Node
    loop: Node | None = None
    intervals: list[tuple[int, int]] = field(default_factory=list)
    event: int = -1
    # A carried pair's balancing wait goes before this node of the loop's
    # block (a consumer of the loop's work it orders) instead of at the end;
    # `balance_fixed`: it stays at the end, where later syncs count on it.
    balance_at: Node | None = None
    balance_fixed: bool = False
    # Where event allocation put a carried pair's pre-set (before this node
    # of the loop's block; None: at the block's start) and, without
    # `balance_at`, its balancing wait (None: at the block's end).
    preset_before: Node | None = None
    wait_before: Node | None = None
    # `loop_chain`: this first pair's balancing wait, or this second pair's
    # pre-set, is dropped (the second takes the first's last set)
    chained_wait: bool = False
    chained_preset: bool = False



class _EventAllocation:
    """Event ids of `_PreciseMode`'s pairs (a mixin: it works on the pairs,
    timeline and barrier lists of `_PreciseMode`)."""

    def _merge_carried(self, group: list[FlagPair], keep_up_to: int = 0,
                       only: set[int] | None = None) -> list[FlagPair]:
        """One carried pair per loop: set after the latest producer, wait
        before the earliest consumer. It still orders every producer of one
        iteration before every consumer of the next, with one event id per
        loop instead of one per buffer slot (used only when ids run out).
        Loops with at most `keep_up_to` carried pairs, or (with `only`)
        whose id is not in it, keep theirs."""
        merged: dict[int, FlagPair] = {}
        kept = []
        per_loop: dict[int, int] = {}
        for fp in group:
            if fp.loop is not None:
                per_loop[id(fp.loop)] = per_loop.get(id(fp.loop), 0) + 1
        for fp in group:
            if fp.loop is None or per_loop[id(fp.loop)] <= keep_up_to or (
                    only is not None and id(fp.loop) not in only):
                kept.append(fp)
                continue
            have = merged.get(id(fp.loop))
            if have is None:
                merged[id(fp.loop)] = fp
                kept.append(fp)
                continue
            if self.pos[id(fp.producer)].after > self.pos[id(have.producer)].after:
                have.producer = fp.producer
            if self.pos[id(fp.consumer)].before < self.pos[id(have.consumer)].before:
                have.consumer = fp.consumer
            if fp.balance_at is not None and (
                    have.balance_at is None
                    or self.pos[id(fp.balance_at)].before < self.pos[id(have.balance_at)].before):
                have.balance_at = fp.balance_at
            have.balance_fixed |= fp.balance_fixed
            self._carried_intervals(have, tight=False)
        return kept

    # -- event ids -------------------------------------------------------------------
    def _color(self, group: list[FlagPair], pairwise: bool = False) -> list[FlagPair]:
        """Greedy interval colouring by first use; returns the pairs left without an id.

        The pairs on one id never meet, so each id's intervals are kept as
        one sorted list of disjoint ones (`_Occupied`) and a pair is tested
        against it by bisection: testing it against every interval on the
        id (`_Intervals`, still used when an interval is empty, i.e. ends
        before it starts, or with `pairwise`) made this quadratic in the
        pairs of a function."""
        limit = self.target.events_per_pipe_pair
        group.sort(key=lambda f: min(a for a, _ in f.intervals))
        if pairwise or any(lo > hi for fp in group for lo, hi in fp.intervals):
            used = [_Intervals() for _ in range(limit)]
        else:
            used = [_Occupied() for _ in range(limit)]
        failed = []
        for fp in group:
            fp.event = -1
            for e in range(limit):
                if not used[e].meets(fp.intervals):
                    fp.event = e
                    used[e].add(fp.intervals)
                    break
            else:
                failed.append(fp)
        return failed

    # -- carried pairs: where the pre-set and the balancing wait go ----------------
    #
    # A carried pair's pre-set may stand anywhere in the loop's block before
    # the loop, and its balancing wait anywhere after it (before `balance_at`
    # when a later node counts on it): earlier or later only changes how
    # long the other pipe waits, never what is ordered. The farther out, the
    # less they delay (a pre-set right before the loop makes the loop's first
    # consumer wait for all of the producer pipe's earlier work, e.g. the
    # previous op's stores; a balancing wait right after it stalls the
    # consumer pipe's next op), but the longer they hold an event id. With
    # `carried-span=block` they span the whole block, as before: a function
    # of many loops then ran out of ids and fell back to full barriers
    # between ops. With `fit` they start at the loop (ids are allocated on
    # those tight intervals) and are then widened as far as some id stays
    # free (`_widen_carried`).

    def _block_of(self, loop: Node) -> tuple[list[Node], list[int], int]:
        """(the nodes of `loop`'s block, their `before` ticks (ascending),
        the loop's index among them), the ticks listed once per block."""
        nodes = self.block_nodes[id(loop)]
        cached = self._block_ticks.get(id(nodes))
        if cached is None:
            cached = self._block_ticks[id(nodes)] = (
                [self.pos[id(n)].before for n in nodes], {id(n): i for i, n in enumerate(nodes)})
        befores, index = cached
        return nodes, befores, index[id(loop)]

    def _tightest(self, fp: FlagPair) -> tuple[tuple[int, Node | None], tuple[int, Node | None]]:
        """((tick, node) where the pre-set goes right before the loop, and where
        the balancing wait goes right after it (or before `balance_at`));
        a node None is the block's end."""
        nodes, befores, k = self._block_of(fp.loop)
        if fp.balance_at is not None:
            wait = (self.pos[id(fp.balance_at)].before, fp.balance_at)
        elif k + 1 < len(nodes):
            wait = (befores[k + 1], nodes[k + 1])
        else:
            wait = (self.block_span[id(fp.loop)][1], None)
        return (befores[k], nodes[k]), wait

    def _earliest_preset_after(self, fp: FlagPair, tick: int) -> tuple[int, Node | None]:
        """The earliest place for the pre-set (before a node of the block up to
        the loop, or at its start: node None) later than `tick`."""
        nodes, befores, k = self._block_of(fp.loop)
        start, _ = self.block_span[id(fp.loop)]
        if start > tick:
            return start, None
        i = bisect.bisect_right(befores, tick, 0, k + 1)
        if i > k:
            raise StopIteration
        return befores[i], nodes[i]

    def _latest_wait_before(self, fp: FlagPair, tick: int) -> tuple[int, Node | None]:
        """The latest place for the balancing wait (before a node after the loop,
        or at the block's end: node None; only before `balance_at` when set)
        earlier than `tick`."""
        if fp.balance_at is not None:
            at = self.pos[id(fp.balance_at)].before
            if at < tick:
                return at, fp.balance_at
            raise StopIteration
        nodes, befores, k = self._block_of(fp.loop)
        _, end = self.block_span[id(fp.loop)]
        if end < tick:
            return end, None
        i = bisect.bisect_left(befores, tick, k + 1, len(nodes)) - 1
        if i < k + 1:
            raise StopIteration
        return befores[i], nodes[i]

    def _carried_intervals(self, fp: FlagPair, tight: bool) -> None:
        """Right around the loop (`tight`) or over the whole block."""
        if tight:
            (x, fp.preset_before), (y, fp.wait_before) = self._tightest(fp)
        else:
            x, y = self.block_span[id(fp.loop)]
            fp.preset_before = fp.wait_before = None
        fp.intervals = [(x, self.pos[id(fp.consumer)].before),
                        (self.pos[id(fp.producer)].after, y)]

    def _widen_carried(self, group: list[FlagPair]) -> None:
        """Move each carried pair's pre-set earlier and balancing wait later,
        on whichever event id lets them go farthest without meeting another
        pair's interval on that id (loops in program order)."""
        by_event: dict[int, list[FlagPair]] = {}
        for fp in group:
            by_event.setdefault(fp.event, []).append(fp)
        carried = sorted((fp for fp in group if fp.loop is not None),
                         key=lambda f: self.pos[id(f.loop)].before)
        for fp in carried:
            by_event[fp.event].remove(fp)
            consumer, producer = self.pos[id(fp.consumer)].before, self.pos[id(fp.producer)].after
            (pre0, _), (wait0, _) = self._tightest(fp)
            best = None
            for event in range(self.target.events_per_pipe_pair):
                # One pass over the other pairs' intervals on this id: none
                # may meet the tight [pre0, consumer] or [producer, wait0];
                # [x, consumer] and [producer, y] must miss every one.
                after, before, meets = -1, 1 << 62, False
                for o in by_event.get(event, ()):
                    for lo, hi in o.intervals:
                        if (pre0 <= hi and lo <= consumer) or (producer <= hi and lo <= wait0):
                            meets = True
                            break
                        if lo <= consumer and hi > after:
                            after = hi
                        if hi >= producer and lo < before:
                            before = lo
                    if meets:
                        break
                if meets:
                    continue
                x = self._earliest_preset_after(fp, after)
                y = self._latest_wait_before(fp, before)
                gain = (pre0 - x[0]) + (y[0] - wait0)
                if best is None or gain > best[0] or (gain == best[0] and event == fp.event):
                    best = (gain, event, x, y)
            _, fp.event, (x, fp.preset_before), (y, fp.wait_before) = best
            fp.intervals = [(x, consumer), (producer, y)]
            by_event.setdefault(fp.event, []).append(fp)

    def _fit(self, group: list[FlagPair]) -> list[FlagPair]:
        """`carried-span=fit` for a pipe pair whose block-wide intervals ran
        out of ids: returns the pairs still without one (`group` is updated
        in place). A loop with more carried pairs than half the ids is
        merged first (its sets would hold the producer pipe once per buffer
        every iteration: the fused 4-op chain of test_pinned_cycles runs 40%
        slower unmerged), the others keep one pair per buffer (merging a
        matmul's 3 or 4 L1/L0 ping-pong pairs costs BERT's ffn_in 20%).
        While ids still run out, a failed pair of one iteration shares the
        id of one it meets (`_coalesce`), else one more loop is merged, one
        whose pairs meet the failed ones (`_loop_to_merge`), not every loop
        of the function."""
        merged = self._merge_carried(group, self.target.events_per_pipe_pair // 2)
        for fp in merged:
            if fp.loop is not None:
                self._carried_intervals(fp, tight=True)
        failed = self._color(merged)
        while failed:
            failed = self._coalesce(merged, failed)
            if not failed:
                break
            loop = self._loop_to_merge(merged, failed)
            if loop is None:
                break
            merged = self._merge_carried(merged, only={loop})
            for fp in merged:
                if fp.loop is not None and id(fp.loop) == loop:
                    self._carried_intervals(fp, tight=True)
            failed = self._color(merged)
        self._widen_carried([fp for fp in merged if fp.event >= 0])
        group[:] = merged
        return failed

    def _coalesce(self, group: list[FlagPair], failed: list[FlagPair]) -> list[FlagPair]:
        """Give each failed pair of one iteration (not loop-carried) the id of
        a pair it meets in the same block: the two become one pair, set
        after the later producer and waited before the earlier consumer
        (both pipes run in order, so it orders both dependencies). Its
        interval lies within the holder's, so the id stays free of the
        others on it. Of the holders, the one whose producer and consumer
        are nearest the failed pair's (the least added wait). Returns the
        pairs still without an id (`group` loses the coalesced ones).

        Why: a conv's last weight tile read by L1->L0B loads one block at a
        time, the next op's weight copies overwriting those blocks one by
        one, holds one MTE1->MTE2 pair per block, more than there are ids
        (ResNet-50's layer3.0 conv2 taking rows 14: 19 pairs, 8 ids)."""
        left = []
        gone: set[int] = set()
        for f in failed:
            if f.loop is not None or len(f.intervals) != 1 or f.intervals[0][0] > f.intervals[0][1]:
                left.append(f)
                continue
            (a, b), block = f.intervals[0], self.block_nodes[id(f.producer)]
            best, best_cost = None, None
            for g in group:
                if g.event < 0 or g.loop is not None or len(g.intervals) != 1:
                    continue
                c, d = g.intervals[0]
                if c > b or a > d or self.block_nodes[id(g.producer)] is not block:
                    continue
                cost = abs(a - c) + abs(b - d)
                if best_cost is None or cost < best_cost:
                    best, best_cost = g, cost
            if best is None:
                left.append(f)
                continue
            if a > best.intervals[0][0]:
                best.producer = f.producer
            if b < best.intervals[0][1]:
                best.consumer = f.consumer
            best.intervals = [(max(a, best.intervals[0][0]), min(b, best.intervals[0][1]))]
            gone.add(id(f))
        group[:] = [fp for fp in group if id(fp) not in gone]
        return left

    @staticmethod
    def _loop_to_merge(group: list[FlagPair], failed: list[FlagPair]) -> int | None:
        """The loop (its id) whose carried pairs, merged, most likely give a
        failed pair an id: of the loops with more than one carried pair
        that meet some failed pair (hold an id where it needs one), the one
        meeting the most failed pairs, then the one with the most pairs
        meeting them. Merging only these keeps the other loops' pairs per
        buffer: merging every loop of the function on a shortage in one
        place made ResNet-50's fc 7k cycles slower (74.8k -> 81.9k)."""
        per_loop: dict[int, list[FlagPair]] = {}
        for fp in group:
            if fp.loop is not None:
                per_loop.setdefault(id(fp.loop), []).append(fp)
        best, best_score = None, (0, 0)
        for loop, pairs in per_loop.items():
            if len(pairs) < 2:
                continue
            hit = [f for f in failed if any(_meet(f.intervals, p.intervals) for p in pairs)]
            if not hit:
                continue
            score = (len(hit), sum(1 for p in pairs if any(_meet(f.intervals, p.intervals)
                                                              for f in hit)))
            if score > best_score:
                best, best_score = loop, score
        return best

    def _allocate_events(self) -> None:
        """Event ids per pipe pair, by interval colouring. Carried pairs first
        span their whole block. When the ids run out, `carried-span=block`
        merges each loop's carried pairs into one; `fit` shrinks them to the
        loop and widens them again as far as ids allow (`_fit`). A pair
        still without an id becomes a full barrier."""
        by_pipes: dict[tuple[str, str], list[FlagPair]] = {}
        for fp in self.pairs:
            if fp.loop is not None:
                self._carried_intervals(fp, tight=False)
            by_pipes.setdefault((fp.src, fp.dst), []).append(fp)
        kept = []
        for group in by_pipes.values():
            if self._color(group):
                if self.carried_span == "fit":
                    failed = self._fit(group)
                else:
                    group = self._merge_carried(group)
                    failed = self._color(group)
                for fp in failed:
                    # Still out of ids: a full barrier right before the
                    # consumer orders the producer too (in any earlier iteration),
                    # and one before the node its balancing wait was to order.
                    self.all_barriers.append(fp.consumer)
                    if fp.balance_at is not None:
                        self.all_barriers.append(fp.balance_at)
                    elif fp.balance_fixed:
                        self.end_barriers.append(fp.loop)
            kept += [fp for fp in group if fp.event >= 0]
        self.pairs = kept


def _meet(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> bool:
    """Do two lists of closed intervals share a tick?"""
    return any(x0 <= y1 and y0 <= x1 for x0, x1 in a for y0, y1 in b)


class _Occupied:
    """The ticks one event id is held at: disjoint closed intervals sorted by
    start (so also by end)."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def meets(self, intervals: list[tuple[int, int]]) -> bool:
        """Does any of `intervals` (closed, start <= end) share a tick with these?"""
        for lo, hi in intervals:
            k = bisect.bisect_right(self.starts, hi) - 1  # the last one starting by hi
            if k >= 0 and self.ends[k] >= lo:
                return True
        return False

    def add(self, intervals: list[tuple[int, int]]) -> None:
        """Hold the id over `intervals` too (they must not meet the held ones,
        but may meet each other)."""
        merged: list[list[int]] = []
        for lo, hi in sorted(intervals):
            if merged and lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        for lo, hi in merged:
            k = bisect.bisect_left(self.starts, lo)
            self.starts.insert(k, lo)
            self.ends.insert(k, hi)


class _Intervals:
    """The ticks one event id is held at, as the intervals of its pairs."""

    def __init__(self) -> None:
        self.intervals: list[tuple[int, int]] = []

    def meets(self, intervals: list[tuple[int, int]]) -> bool:
        return _meet(intervals, self.intervals)

    def add(self, intervals: list[tuple[int, int]]) -> None:
        self.intervals += intervals
