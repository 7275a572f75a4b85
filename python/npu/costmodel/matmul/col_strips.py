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
from npu.costmodel.matmul.pipelined import (Drain, best_chunk, default_pieces, piece_grid,
                                         pipelined_time)
from npu.target import Target

# The strips replace the one tile only when estimated this much faster:
# between near-equal estimates the model's error decides (as
# `residency.TIMED_MARGIN`).
COL_STRIPS_MARGIN = 0.05
# ... or this much, for a drain whose stores outweigh its epilogue's vector
# work (what the row tiles overlap with the next tile's mads is then MTE3's,
# beside the cube): BERT's V share on 32 cores (256 x 768 x 192, its f16 Nz
# store since the attention reads the projections' Nz, passes/attention_nz.py:
# 384 cycles of epilogue, 1,536 of stores) estimates its strips 4.7% faster,
# and they are (BERT seq 512 on 32 cores 92,574 -> 90,142 cycles; 8 cores
# 244,095 -> 243,581; seq 256 on 4 cores 237,898 -> 236,158). Not for a
# vector-heavy drain: the 64 x 256 x 256 GELU share of a small layer (hidden
# 256, seq 64, 4 cores; 2,048 cycles of epilogue, 512 of stores), 4.5%,
# took the layer 28,438 -> 30,854.
STORE_DRAIN_MARGIN = 0.04
# Fewer C pieces than the default only in row tiles of at least this many
# blocks (`piece_counts`).
FEWER_PIECES_ROWS = 4
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


def one_tile_sub(m1: int, kb: int, n1: int, pieces: int, chunks: list[int], target: Target,
                 rows: int = 0) -> int:
    """The L0 sub-step (reduction blocks) of the plan of one m1 x kb C tile
    in `pieces` (its chunk among `chunks` by `best_chunk`), which column
    strips keep (its mads' reduction boundaries, hence its bits); 0 if none."""
    blk = target.fractal_bytes(2)
    fitting = [d for d in chunks if 2 * (m1 + kb) * d * blk <= target.capacity("l1")]
    chunk = best_chunk(fitting, m1, kb, n1, 1, True, target)
    if chunk is None:
        return 0
    return piece_grid(m1, kb, pieces, chunk, chunk, target, rows, lambda _blocks: False)[1] or 0


def col_strips_time(shape: MatmulShape, mb: int, kb: int, chunk: int, target: Target,
                    drain: Drain = Drain(), handoffs: bool = False, pieces: int = 0) -> float:
    """Estimated cycles of the strips in row tiles of mb blocks and parts of
    `chunk` reduction blocks in `pieces` C pieces (0: `default_pieces`): the
    streamed schedule's estimate (`pipelined_time`) with A and B read once:
    its fill is one part of A and of B, its tail one row tile's drain
    (`handoffs`: see `pipelined_time`), its mads the one tile's sub-step
    (`one_tile_sub`: a row tile of 4 blocks mads 4 reduction blocks at a
    time where its own grid would take 12, and pays a `mad_latency` each)."""
    frac = target.fractal
    n1 = shape.N // frac
    pieces = pieces or default_pieces(kb, drain.epilogue)
    reads = (shape.M * shape.N + shape.N * shape.K) * shape.in_bytes
    return pipelined_time(shape.M, shape.N, shape.K, 1, mb, kb, chunk, False, reads,
                          shape.M * shape.K * shape.acc_bytes,
                          shape.M * shape.K * shape.out_bytes, target, drain, handoffs, pieces,
                          one_tile_sub(shape.M // frac, kb, n1, pieces, divisors(n1), target))


def divisors(n: int) -> list[int]:
    """n's divisors, largest first (the L1 chunks a reduction of n blocks takes)."""
    return [d for d in range(n, 0, -1) if n % d == 0]


def one_tile_time(shape: MatmulShape, target: Target, drain: Drain, pieces: int = 0
                  ) -> float | None:
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
                          shape.M * shape.K * shape.out_bytes, target, drain, pieces=pieces)


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
    m1, n1, kb = shape.M // frac, shape.N // frac, shape.K // frac

    def fastest(pieces: int, least_rows: int = 1) -> tuple[float, int, int, int] | None:
        """The fastest (time, row tile, part, pieces) of the strips in
        `pieces`, row tiles of at least `least_rows` blocks."""
        sub = one_tile_sub(m1, kb, n1, pieces, divisors(n1), target)
        times = [(col_strips_time(shape, m1 // rows, kb, d, target, drain, pieces=pieces),
                  m1 // rows, d, pieces)
                 for rows in range(2, MAX_ROW_TILES + 1)
                 if sub and m1 % rows == 0 and m1 // rows >= least_rows
                 for d in col_strip_chunks(shape, m1 // rows, kb, target)
                 if d % sub == 0]  # the plan keeps the one tile's sub-step
        return min(times, default=None)

    # Strips or the one tile: both at the default piece count (the one
    # tile's); then fewer pieces where estimated COL_STRIPS_MARGIN faster
    # still (`piece_counts`).
    counts = piece_counts(kb, drain.epilogue)
    first = fastest(counts[0])
    margin = (STORE_DRAIN_MARGIN if drain.epilogue and drain.store_cycles > drain.vector_cycles
              else COL_STRIPS_MARGIN)
    if first is None or first[0] >= (1 - margin) * base:
        return choice
    fewer = min((x for p in counts[1:] if (x := fastest(p, FEWER_PIECES_ROWS)) is not None),
                default=None)
    time, mb, d, pieces = (fewer if fewer is not None
                           and fewer[0] < (1 - COL_STRIPS_MARGIN) * first[0] else first)
    return dataclasses.replace(
        choice, tiles=Tiles(mb * frac, t.n, t.k), col_strips=True, chunk=d * frac,
        pieces=pieces,
        traffic=Traffic(shape.M * shape.N, shape.N * shape.K, shape.M * shape.K),
        why=(f"the pipelined schedule's estimate: {time:.0f} cycles in {m1 // mb} row tiles "
             f"with B's strip resident, {pieces} C piece(s), against {base:.0f} as one tile"))


def piece_counts(kb: int, epilogue: bool) -> list[int]:
    """The C piece counts the strips try, most first: `default_pieces` and
    its halvings that divide kb. A row tile is a few blocks tall, and it
    keeps the one tile's L0 sub-step (`one_tile_sub`: 4 blocks for BERT
    seq 512's 256 x 192 shares, where its own grid would take 12), so
    every piece pays a `mad_latency` per sub-step and chunk: fewer pieces,
    fewer mads and fewer L1 -> L0 loads of A (once per column of pieces),
    for a longer last drain.

    The count only refines strips that beat the one tile at the default
    count (both estimated in the same pieces), and a smaller count must be
    COL_STRIPS_MARGIN faster than the default's strips, in row tiles of at
    least FEWER_PIECES_ROWS blocks. BERT layer cycles (bench/chip.py,
    ascend910, seq 128 on 2 / 8 / 32 cores, seq 512 on 8 / 32), each rule
    left out in turn:
      * fewer pieces wherever they beat the one tile: q_proj and k_proj at
        seq 128 on 32 cores (64 x 768 x 128 a core) as strips of 32 rows in
        one piece, ffn_in (+ GELU) in two: 48,481 -> 50,239;
      * the fastest count whatever the margin (estimates 1-2% apart): seq
        128 237,426 / 100,611 -> 244,730 / 102,757 on 2 / 8 cores;
      * 2-block row tiles: seq 128's out_proj on 2 cores (128 x 768 x 384)
        in 32-row tiles of two pieces, 237,426 -> 238,284;
      * with all three: seq 128 unchanged, seq 512 265,692 -> 262,434 (8
        cores), 105,380 -> 103,429 (32: V's and ffn_in's 256 x 768 x 192
        shares in two pieces of 4 x 6 blocks, not four of 4 x 3).
    """
    first = default_pieces(kb, epilogue)
    return [p for p in (first, first // 2, first // 4) if p and kb % p == 0]


def _parts_end(parts: list[int], m1: int, kb: int, sub: int, target: Target) -> float:
    """When the last mad of one m1 x kb C tile ends, its reduction's parts
    (blocks, first to last) of A copied one after another, each waited for
    (its GM latency) before its mads, which run one part after another (a
    `mad_latency` per sub-step)."""
    path = target.path("gm_to_l1")
    a_block = m1 * target.fractal_bytes(2) / path.bytes_per_cycle
    landed = done = 0.0
    for s in parts:
        landed += s * a_block + path.latency
        done = max(done, landed) + s * (target.cube_cycles(m1 * kb)
                                         + target.mad_latency / sub)
    return done


def last_chunk_parts(m1: int, kb: int, n1: int, chunk: int, sub: int, target: Target
                     ) -> tuple[int, ...]:
    """A's parts (blocks, first to last) for one m1 x kb C tile whose B
    streams in `chunk`-block chunks: all but the last chunk in one part,
    the last chunk in parts that shrink towards its end, or () where the
    even chunks end as early by `_parts_end`.

    Why: each part's copy is waited for on its own (its flag holds MTE2 one
    GM latency), and the mads after the last copy lands are the tail
    nothing hides. The last chunk is cut from its end: one sub-step last,
    before it the most sub-steps whose mads end while that part loads (its
    copy and latency), the rest first; the chunks before it are one part
    (one latency for them all, their mads overlapping the last chunk's
    copies). At least three chunks (two before the last: their flag then
    replaces two)."""
    even = n1 // chunk
    if even < 3 or n1 % chunk or chunk % sub or chunk <= sub:
        return ()
    path = target.path("gm_to_l1")
    a_block = m1 * target.fractal_bytes(2) / path.bytes_per_cycle
    per_block = target.cube_cycles(m1 * kb) + target.mad_latency / sub
    tail = [sub]
    left = chunk - sub
    while left > 0:
        fits = int((tail[-1] * a_block + path.latency) // per_block) // sub * sub
        if fits <= 0:
            return ()
        tail.append(min(fits, left))
        left -= tail[-1]
    parts = [(even - 1) * chunk] + tail[::-1]
    if _parts_end(parts, m1, kb, sub, target) >= _parts_end([chunk] * even, m1, kb, sub,
                                                             target):
        return ()
    return tuple(parts)
