"""The sweeps that make planning fast give exactly what the pairwise
definitions give: the overlap graph and the lower bound (value and where)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from npu.memory_planning import conflict_graph, lower_bound, overlap_graph, overlaps


@dataclass
class Life:
    size: int
    start: int
    end: int


def pairwise_lower_bound(buffers: list[Life]) -> tuple[int, int]:
    best, where = 0, 0
    for t in sorted({b.start for b in buffers}):
        live = sum(b.size for b in buffers if b.start <= t <= b.end)
        if live > best:
            best, where = live, t
    return best, where


def test_sweeps_match_the_pairwise_definitions():
    rng = random.Random(13)
    for _ in range(2000):
        buffers = []
        for _ in range(rng.randrange(0, 25)):
            start = rng.randrange(0, 40)
            buffers.append(Life(rng.choice([32, 64, 512, 4096]), start, start + rng.randrange(0, 12)))
        assert overlap_graph(buffers) == conflict_graph(buffers, overlaps)
        assert lower_bound(buffers) == pairwise_lower_bound(buffers)


def test_empty_and_touching_lifetimes():
    assert overlap_graph([]) == [] and lower_bound([]) == (0, 0)
    touching = [Life(32, 0, 5), Life(64, 5, 9), Life(32, 10, 12)]
    assert overlap_graph(touching) == [{1}, {0}, set()]
    assert lower_bound(touching) == (96, 5)


def test_pipe_aware_conflict_graph_matches_the_pairwise_test():
    """npu-plan-memory's vectorised graph against `conflicts` pair by pair,
    with unordered lifetimes (start > end), missing pipes and buffers inside
    a core guard (`release`) included, and row blocks smaller than the
    graph."""
    from npu.passes.buffer_placement import Buffer, conflict_graph as pipe_graph, conflicts

    rng = random.Random(7)
    pipes = [None, "mte2", "vector", "cube"]
    for _ in range(300):
        buffers = []
        for _ in range(rng.randrange(0, 30)):
            start = rng.randrange(0, 60)
            end = start + rng.randrange(-2, 15)
            release = rng.choice([-1, end, end + rng.randrange(0, 40)])
            buffers.append(Buffer(None, "ub", 32, start, end, rng.choice(pipes), rng.choice(pipes),
                                  release=release))
        for window in (None, 16, 4):
            want = conflict_graph(buffers, lambda a, b: conflicts(a, b, window))
            assert pipe_graph(buffers, window, rows=7) == want
