"""Runs of (head, query row) blocks over the cores, crossing head boundaries.

A grid of head parts x query runs (`npu-split-cores`) leaves cores idle
when the heads and their row blocks do not cut into as many equal shares
as there are cores: BERT-base's 12 heads of 32 row blocks (seq 512) on 32
cores run as 12 x 2 on 24. Flattened, the heads' row blocks are H x S/16
units in order (head-major); P cores take n = H * S/16 / P of them each, so
a core's run may end one head and start the next (12 x 32 / 32 = 12 blocks:
core 2 does head 0's blocks 24..31, then head 1's 0..3).

A run of fewer blocks than a head has is one segment (a head's rows from
some block) or two (the end of one head, the start of the next), so a core's
work is one of a few shapes (`variants`), each the same program up to its
first head and first block, which the kernel computes from the block index.
Each segment reads its own head's K and V: a core crossing a boundary
loads two heads' K and V (the cost of the shape; `modelled`).
"""

from __future__ import annotations

from dataclasses import dataclass

from npu.costmodel.attention import pattern as att
from npu.costmodel.attention import plan as cost
from npu.costmodel.attention.core_start import finished, segment
from npu.costmodel.attention.cost import TileCost
from npu.target import Target

# The group attribute `npu-split-cores` sets on an attention it cut into
# flat runs (its `npu.core_part` then counts the runs).
FLAT_RUNS_ATTR = "npu.flat_runs"


@dataclass(frozen=True)
class Variant:
    """One shape of a core's run: the blocks of each segment (one head
    each, in order) and the first segment's first block, None when the
    shape holds for several (then a single segment, its start computed at
    run time); later segments start at block 0 of the next head."""

    lengths: tuple[int, ...]
    first: int | None


def runs_fit(heads: int, seq_blocks: int, runs: int) -> bool:
    """Whether `runs` flat runs are worth a shape of their own: equal runs
    of whole blocks, shorter than a head (a run covers at most two heads)
    and not dividing a head (else a grid of heads x query runs is the same
    split)."""
    total = heads * seq_blocks
    if runs < 2 or total % runs:
        return False
    n = total // runs
    return n < seq_blocks and seq_blocks % n != 0


def variants(heads: int, seq_blocks: int, runs: int) -> list[Variant]:
    """The shapes of the runs' cores (`runs_fit` runs): those that cross a
    head boundary first, by their first block, then the one-segment shape."""
    n = heads * seq_blocks // runs
    crossing: dict[int, Variant] = {}
    single = False
    for c in range(runs):
        r0 = c * n % seq_blocks
        if r0 + n <= seq_blocks:
            single = True
        else:
            crossing[r0] = Variant((seq_blocks - r0, n - (seq_blocks - r0)), r0)
    return [crossing[r] for r in sorted(crossing)] + ([Variant((n,), None)] if single else [])


def segment_tile(q_blocks: int, blocks: int) -> int:
    """The query tile of a segment of `blocks` (the group's tile of
    `q_blocks` at most)."""
    return cost.run_tile(q_blocks, blocks)


def modelled(a: att.Attention, heads: int, q_blocks: int, k_blocks: int, target: Target,
             softmax: str, runs: int) -> TileCost:
    """The attention cost model's pipes for the slowest shape of `runs` flat
    runs: each segment a head's run of query rows against all its keys (its
    K and V loaded once), started cold (`core_start`)."""
    worst: TileCost | None = None
    for v in variants(heads, a.seq_blocks, runs):
        total: TileCost | None = None
        for blocks in v.lengths:
            tile = segment_tile(q_blocks, blocks)
            c = segment(cost.modelled(a, tile, k_blocks, target, softmax, heads=1,
                                      query_blocks=blocks), a, 1, blocks, tile, k_blocks, target)
            total = c if total is None else total + c
        total = finished(total, a, tile, target)
        if worst is None or total.cycles > worst.cycles:
            worst = total
    assert worst is not None
    return worst
