"""The pipelined schedule with B's column strip resident (`col_strips`): one
C tile cut into several row tiles, B (this matmul's weights, N x k) copied
into L1 once, in parts, during the first row tile and kept there while the
other row tiles stream only A.

Why: split over many cores, a matmul is often one C tile per core (BERT-base
on 32 cores: every projection and FFN matmul), whose reduction runs outside:
every C piece drains after the last chunk's mads and nothing overlaps that
drain (its epilogue's vector work, its stores) before the chip barrier. In
row tiles, each tile's drain runs while the next tile's A parts load and
its mads run; only the last (smallest) tile's drain is exposed. The GM
traffic is the same (A once, B once) and so is each C element's reduction
order: results stay bit for bit those of the one tile.

The strip is split into parts along the reduction, each its own L1 buffer
(its own flag: the first mads wait for part 0 only); A's parts take turns
in as many buffers as the event ids and L1 allow (`a_turns`). The mirror of
`row_strips` (A resident across column tiles).
"""

from __future__ import annotations

import dataclasses

from npu.costmodel.matmul.fitting import MatmulShape, Tiles, TilingChoice, Traffic, pipelines
from npu.costmodel.matmul.pipelined import Drain, best_chunk, pipelined_time
from npu.target import Target

# The strips replace the one tile only when estimated this much faster:
# between near-equal estimates the model's error decides (as
# `residency.TIMED_MARGIN`).
COL_STRIPS_MARGIN = 0.05
# Row tiles tried: more, smaller tiles shorten the exposed drain but pay a
# GM latency per A part and smaller mads.
MAX_ROW_TILES = 8


def a_turns(mb: int, kb: int, n1: int, chunk: int, target: Target) -> int:
    """L1 buffers A's parts take turns in (part p in p % turns): as many as
    fit beside B's strip, up to one per part (a divisor of the parts), at
    least two, with the strip's parts' flags within `events_per_pipe_pair`
    (past it npu-insert-sync merges the loop's carried flags, see
    `row_strips.b_turns`); 0 if two do not fit."""
    parts = n1 // chunk
    blk = target.fractal_bytes(2)
    return max((t for t in range(min(parts, target.events_per_pipe_pair - parts), 1, -1)
                if parts % t == 0 and (kb * n1 + t * mb * chunk) * blk <= target.capacity("l1")),
               default=0)


def col_strip_chunks(shape: MatmulShape, mb: int, kb: int, target: Target) -> list[int]:
    """Reduction blocks per part (largest first) with which row tiles of mb
    blocks and B's strip resident fit: one matrix, one column of C (k = K),
    at least two row tiles dividing M, and the strip plus two A turns
    within L1."""
    frac = target.fractal
    m1, n1 = shape.M // frac, shape.N // frac
    if (shape.batch != 1 or kb * frac != shape.K or m1 % mb or m1 // mb < 2
            or not pipelines(shape, Tiles(mb * frac, frac, kb * frac))):
        return []
    return [d for d in range(n1 // 2, 0, -1) if n1 % d == 0 and a_turns(mb, kb, n1, d, target)]


def col_strips_time(shape: MatmulShape, mb: int, kb: int, chunk: int, target: Target,
                    drain: Drain = Drain(), handoffs: bool = False) -> float:
    """Estimated cycles of the strips in row tiles of mb blocks and parts of
    `chunk` reduction blocks: the streamed schedule's estimate
    (`pipelined_time`) with A and B read once: its fill is one part of A and
    of B, its tail one row tile's drain (`handoffs`: see `pipelined_time`)."""
    reads = (shape.M * shape.N + shape.N * shape.K) * shape.in_bytes
    return pipelined_time(shape.M, shape.N, shape.K, 1, mb, kb, chunk, False, reads,
                          shape.M * shape.K * shape.acc_bytes,
                          shape.M * shape.K * shape.out_bytes, target, drain, handoffs)


def one_tile_time(shape: MatmulShape, target: Target, drain: Drain) -> float | None:
    """The pipelined schedule's estimate of the matmul as one C tile, in the
    chunk the lowering takes (`best_chunk`); None if it does not pipeline."""
    frac = target.fractal
    m1, n1, k1 = shape.M // frac, shape.N // frac, shape.K // frac
    blk = target.fractal_bytes(shape.in_bytes)
    fitting = [d for d in range(n1, 0, -1)
               if n1 % d == 0 and 2 * (m1 + k1) * d * blk <= target.capacity("l1")]
    chunk = best_chunk(fitting, m1, k1, n1, 1, True, target)
    if chunk is None:
        return None
    reads = (shape.M * shape.N + shape.N * shape.K) * shape.in_bytes
    return pipelined_time(shape.M, shape.N, shape.K, 1, m1, k1, chunk, False, reads,
                          shape.M * shape.K * shape.acc_bytes,
                          shape.M * shape.K * shape.out_bytes, target, drain)


def col_strips_or(shape: MatmulShape, choice: TilingChoice, target: Target,
                  drain: Drain, fixed_n: int = 0) -> TilingChoice:
    """`choice` unless it is one C tile (m = M, k = K) that row tiles with
    B's strip resident are estimated COL_STRIPS_MARGIN faster than: then
    the fastest of those (row tiles, parts)."""
    frac = target.fractal
    t = choice.tiles
    if (choice.strategy != "os" or shape.batch != 1 or t.m != shape.M or t.k != shape.K
            or fixed_n or choice.row_strips or choice.a_resident):
        return choice
    base = one_tile_time(shape, target, drain)
    if base is None:
        return choice
    m1, kb = shape.M // frac, shape.K // frac
    best: tuple[float, int, int] | None = None
    for rows in range(2, MAX_ROW_TILES + 1):
        if m1 % rows:
            continue
        mb = m1 // rows
        for d in col_strip_chunks(shape, mb, kb, target):
            time = col_strips_time(shape, mb, kb, d, target, drain)
            if best is None or time < best[0]:
                best = (time, mb, d)
    if best is None or best[0] >= (1 - COL_STRIPS_MARGIN) * base:
        return choice
    time, mb, d = best
    return dataclasses.replace(
        choice, tiles=Tiles(mb * frac, t.n, t.k), col_strips=True, chunk=d * frac,
        traffic=Traffic(shape.M * shape.N, shape.N * shape.K, shape.M * shape.K),
        why=(f"the pipelined schedule's estimate: {time:.0f} cycles in {m1 // mb} row tiles "
             f"with B's strip resident against {base:.0f} as one tile"))
