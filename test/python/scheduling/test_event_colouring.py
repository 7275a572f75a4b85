"""npu-insert-sync's event-id colouring keeps each id's intervals as one
sorted list (`_Occupied`) instead of testing a pair against every interval on
the id (`pairwise`): both must give every pair the same id."""

from __future__ import annotations

import random
from types import SimpleNamespace

from npu.passes.insert_sync.events import FlagPair, _EventAllocation


def _pairs(rng: random.Random, n: int) -> list[FlagPair]:
    pairs = []
    for _ in range(n):
        lo = rng.randrange(0, 400)
        intervals = [(lo, lo + rng.randrange(0, 40))]
        if rng.random() < 0.4:  # a carried pair: two intervals, which may meet each other
            lo2 = rng.randrange(0, 400)
            intervals.append((lo2, lo2 + rng.randrange(0, 60)))
        pairs.append(FlagPair("MTE2", "M", None, None, intervals=intervals))
    return pairs


def _colouring(events: int) -> _EventAllocation:
    alloc = _EventAllocation()
    alloc.target = SimpleNamespace(events_per_pipe_pair=events)
    return alloc


def test_bisection_colours_like_the_pairwise_test():
    rng = random.Random(13)
    for trial in range(200):
        alloc = _colouring(rng.choice((1, 2, 4, 8)))
        pairs = _pairs(rng, rng.randrange(1, 60))
        twin = [FlagPair(p.src, p.dst, None, None, intervals=list(p.intervals)) for p in pairs]
        failed = alloc._color(list(pairs))
        failed_twin = alloc._color(list(twin), pairwise=True)
        assert [p.event for p in pairs] == [p.event for p in twin], trial
        assert len(failed) == len(failed_twin)
        # Pairs on one id never share a tick.
        for a in pairs:
            for b in pairs:
                if a is not b and a.event == b.event >= 0:
                    assert not any(x0 <= y1 and y0 <= x1 for x0, x1 in a.intervals
                                   for y0, y1 in b.intervals)
