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
    a core guard (`release`) and kernels (`kernel_start`, `kernel_end`)
    included, and row blocks smaller than the graph."""
    from npu.passes.buffer_placement import Buffer, conflict_graph as pipe_graph, conflicts

    rng = random.Random(7)
    pipes = [None, "mte2", "vector", "cube"]
    for _ in range(300):
        buffers = []
        for _ in range(rng.randrange(0, 30)):
            start = rng.randrange(0, 60)
            end = start + rng.randrange(-2, 15)
            release = rng.choice([-1, end, end + rng.randrange(0, 40)])
            kernel_end = rng.choice([-1, end, end + rng.randrange(0, 40)])
            kernel_start = rng.choice([-1, start - rng.randrange(0, 20)])
            buffers.append(Buffer(None, "ub", 32, start, end, rng.choice(pipes), rng.choice(pipes),
                                  release=release, kernel_start=kernel_start,
                                  kernel_end=kernel_end))
        for window in (None, 16, 4):
            want = conflict_graph(buffers, lambda a, b: conflicts(a, b, window))
            assert pipe_graph(buffers, window, rows=7) == want


def test_relaxed_windows_step_through_128_positions():
    """A buffer handed from MTE1 to MTE2 100 positions later keeps its own
    bytes when a 128-position window fits but 256 does not. Without the
    128 step the planner fell from 256 to 64 and let the two share: in
    ResNet-50's layer4.0 the downsample's map then reused the last 4 KB of
    the 3x3/2 conv's map (70 positions apart) and waited for that conv's
    last img2col, 3.4k cycles of idle MTE2."""
    from npu.passes.buffer_placement import Buffer, WINDOWS, place_relaxed

    assert 128 in WINDOWS
    a = Buffer(None, "l1", 400, 0, 10, "MTE2", "MTE1")
    b = Buffer(None, "l1", 400, 110, 120, "MTE2", "MTE1")       # 100 after a
    c = Buffer(None, "l1", 400, 260, 300, "MTE2", "MTE1")       # 250 after a, 140 after b
    live = Buffer(None, "l1", 100, 0, 300, "MTE2", "MTE2")
    relaxed = place_relaxed([a, b, c, live], 1000, "auto")
    offsets = relaxed.plan.offsets
    assert relaxed.plan.peak <= 1000
    assert relaxed.windows[:2] == [128, 128]
    assert offsets[0] + a.size <= offsets[1] or offsets[1] + b.size <= offsets[0]


def test_next_kernel_keeps_clear_of_the_previous_kernels_reads():
    """A buffer of a later kernel does not take the bytes of an earlier
    kernel's buffer handed from MTE1 to MTE2 when the later kernel starts
    within a window of the earlier one's end (`Buffer.kernel_end`), however
    early that buffer's last access is in program order (MTE1 reads it near
    the kernel's end in time), where the bytes allow; where they do not, the
    plan still fits and shares them. Without a kernel end, the hand-over
    counts from the buffer's end as before."""
    from npu.passes.buffer_placement import Buffer, place_relaxed

    def group(kernel_end):
        a = Buffer(None, "l1", 400, 0, 10, "MTE2", "MTE1", kernel_end=kernel_end)  # early band
        w = Buffer(None, "l1", 200, 0, 300, "MTE2", "MTE1", kernel_end=kernel_end)  # weights
        b = Buffer(None, "l1", 400, 310, 400, "MTE2", "MTE1", kernel_end=800)  # next kernel's
        c = Buffer(None, "l1", 400, 700, 800, "MTE2", "MTE1", kernel_end=800)  # its later band
        return [a, w, b, c]

    def shared(plan, i, j, bufs):
        return not (plan.offsets[i] + bufs[i].size <= plan.offsets[j]
                    or plan.offsets[j] + bufs[j].size <= plan.offsets[i])

    for kernel_end, capacity, apart in ((300, 1000, True), (-1, 1000, False), (300, 600, False)):
        bufs = group(kernel_end)
        relaxed = place_relaxed(bufs, capacity, "auto")
        assert relaxed.plan.peak <= capacity
        assert relaxed.windows[0] == relaxed.windows[2] == 256  # a, b: 300 positions apart
        assert shared(relaxed.plan, 0, 2, bufs) != apart
