"""The planner's numpy path for buffers with many conflicts (`DENSE`) places
exactly as its Python lists do: the same offsets from greedy-by-size,
pushdown (its grown gaps included) and the compaction, and the same check."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from npu import memory_planning as planner


@dataclass
class _Buffer:
    size: int
    start: int
    end: int


def _graph(seed: int) -> tuple[list[_Buffer], list[set[int]]]:
    """Random lifetimes, plus random extra conflicts (pipe-aware windows make
    most pairs conflict on a large function)."""
    rng = random.Random(seed)
    n, span = rng.choice([(40, 30), (120, 200), (200, 60)])
    buffers = []
    for _ in range(n):
        start = rng.randrange(span)
        buffers.append(_Buffer(rng.choice([32, 64, 512, 4096, 32 * rng.randrange(1, 20)]),
                               start, start + rng.randrange(rng.choice([1, 10, span]))))
    extra = rng.choice([0.0, 0.3, 0.8])
    adj: list[set[int]] = [set() for _ in buffers]
    for i in range(n):
        for j in range(i + 1, n):
            if planner.overlaps(buffers[i], buffers[j]) or rng.random() < extra:
                adj[i].add(j)
                adj[j].add(i)
    return buffers, adj


@pytest.mark.parametrize("seed", range(12))
def test_dense_path_places_as_the_lists_do(seed, monkeypatch):
    buffers, adj = _graph(seed)
    monkeypatch.setattr(planner, "DENSE", 10**9)  # every buffer through the lists
    lists = {alg: planner.place(buffers, adj, alg) for alg in ("greedy-by-size", "pushdown")}
    lists_pushed = planner.pushdown(buffers, adj)
    monkeypatch.setattr(planner, "DENSE", 1)  # every buffer with a conflict through numpy
    for alg, plan in lists.items():
        dense = planner.place(buffers, adj, alg)
        assert (dense.peak, dense.offsets) == (plan.peak, plan.offsets)
    assert planner.pushdown(buffers, adj) == lists_pushed


def test_dense_check_finds_an_overlap(monkeypatch):
    monkeypatch.setattr(planner, "DENSE", 1)
    buffers = [_Buffer(64, 0, 5), _Buffer(64, 3, 8), _Buffer(64, 9, 9)]
    adj = planner.overlap_graph(buffers)
    planner.check_disjoint(buffers, adj, [0, 64, 0])  # disjoint where they conflict
    with pytest.raises(AssertionError, match="buffers #0 and #1 overlap"):
        planner.check_disjoint(buffers, adj, [0, 32, 0])
