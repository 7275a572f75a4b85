"""The pipelined schedule with A's row strips resident (`row_strips`): C in
several rows of several column tiles, each row's A strip (m x N) copied
into L1 once, in parts, during the row's first column tile, and kept there
while the row's other column tiles stream only B.

Why: output-stationary tiles re-read A once per column tile and B once per
row. Where L0C caps the C tile (an int8 or f32 accumulator of 256 x 256
fills L0C) and the matrix has several rows and columns of tiles, both
re-reads cost as much as the cube: the int8 1024^3 matmul in 256 x 256
tiles reads 8 MiB over a 64 B/cycle path, 131k cycles, exactly its int8
cube time, so neither pipe has slack and the fill (one whole strip of A and
of B before the first mad) is exposed. Keeping the strip reads A once: 5 MiB.

The strip is split into parts along the reduction, each its own L1 buffer,
and the loop over a tile's parts is unrolled: the flag that releases a part
to MTE1 is per part (the first mads wait for one part of A and of B, not the
whole strip), and the copy of the next row's part p only waits for the L0A
loads of this row's part p, which ran a tile earlier. B's parts take turns
in as many buffers as fit (`b_turns`). L1 holds the strip and those.
"""

from __future__ import annotations

from npu.costmodel.matmul.fitting import MatmulShape, Tiles, Traffic, pipelines, traffic
from npu.costmodel.matmul.pipelined import Drain, default_pieces, pipelined_time, piece_grid
from npu.target import Target


def b_turns(mb: int, kb: int, n1: int, chunk: int, target: Target) -> int:
    """L1 buffers B's parts take turns in (part p in p % turns): as many as
    fit beside the strip, up to one per part (a divisor of the parts, so
    that the turns repeat from tile to tile), at least two; 0 if two do not
    fit. With one per part, MTE2 may copy a whole tile ahead, so a row's
    first tile, which copies A's parts too, borrows the previous tile's
    slack. The strip's parts and the turns each carry a flag from MTE1 back
    to MTE2 round the loop; past `events_per_pipe_pair` of them,
    npu-insert-sync merges them all and MTE2 loses that lead (ascend310,
    int8 1024^3 in 8 parts and 8 turns: 290.7k cycles; in 4 and 4: 280.1k)."""
    parts = n1 // chunk
    blk = target.fractal_bytes(2)
    return max((t for t in range(min(parts, target.events_per_pipe_pair - parts), 1, -1)
                if parts % t == 0 and (mb * n1 + t * kb * chunk) * blk <= target.capacity("l1")),
               default=0)


def row_strip_chunks(shape: MatmulShape, tiles: Tiles, target: Target) -> list[int]:
    """Reduction blocks per part (largest first) with which the row-strips
    schedule fits these tiles; empty when it does not apply: one matrix,
    several rows and several columns of C tiles that divide M x K, and the
    strip plus two B parts within L1 (`b_turns`)."""
    if (shape.batch != 1 or not pipelines(shape, tiles) or tiles.m >= shape.M
            or tiles.k >= shape.K):
        return []
    frac = target.fractal
    mb, kb, n1 = tiles.m // frac, tiles.k // frac, shape.N // frac
    return [d for d in range(n1 // 2, 0, -1) if n1 % d == 0 and b_turns(mb, kb, n1, d, target)]


def row_strips_traffic(shape: MatmulShape, tiles: Tiles) -> Traffic:
    """A once, B once per row of C tiles, C once."""
    return traffic("os", shape, tiles, a_resident=True)


def row_strips_time(shape: MatmulShape, tiles: Tiles, chunk: int, target: Target,
                    drain: Drain = Drain(), handoffs: bool = False) -> float:
    """Estimated cycles of the row-strips schedule in parts of `chunk`
    reduction blocks: the streamed schedule's estimate (`pipelined_time`)
    with A read once, a part of A and of B as the fill and one GM latency
    per part (each part's copies end in one flag), plus what that average
    does not see:

      row starts  a row's first tile copies A's parts beside B's: where
                  those copies take longer than the tile's mads and the
                  previous tile's slack MTE2 may borrow (B's turns let it
                  run up to turns - 1 parts ahead), the cube waits the
                  difference, once per row;
      hand-over   the next tile's first mads into C piece 0 wait for its
                  drain (L0C -> UB and the epilogue's share), which only
                  the last part's mads of the other pieces hide (measured,
                  int8 1024^3: parts of 64 reduction elements 162.7k
                  cycles, of 128 144.0k)."""
    frac = target.fractal
    mb, kb, n1 = tiles.m // frac, tiles.k // frac, shape.N // frac
    t = row_strips_traffic(shape, tiles)
    base = pipelined_time(shape.M, shape.N, shape.K, shape.batch, mb, kb, chunk, False,
                          t.read_bytes(shape), t.c_writes * shape.acc_bytes,
                          t.write_bytes(shape), target, drain, handoffs)
    rows, cols, parts = shape.M // tiles.m, shape.K // tiles.k, n1 // chunk
    count = rows * cols
    blk = target.fractal_bytes(2)
    path = target.path("gm_to_l1")
    pieces = default_pieces(kb, drain.epilogue)
    _, sub = piece_grid(mb, kb, pieces, chunk, chunk, target)
    mad_blocks = mb * (sub or 1) * kb // pieces
    mad = target.cube_cycles(mad_blocks) + target.mad_latency
    tile_mads = pieces * (chunk // (sub or 1)) * parts * mad
    b_part = kb * chunk * blk / path.bytes_per_cycle + path.latency
    row_start = parts * ((mb + kb) * chunk * blk / path.bytes_per_cycle + path.latency)
    # MTE2 runs up to turns - 1 parts ahead: that share of the previous
    # tile's slack absorbs a row start's extra copies.
    turns = b_turns(mb, kb, n1, chunk, target)
    borrowed = (turns - 1) / parts * max(0.0, tile_mads - parts * b_part)
    piece_drain = (t.c_writes * shape.acc_bytes / target.path("l0c_to_ub").bytes_per_cycle
                   + drain.vector_cycles) / (count * pieces)
    window = (pieces - 1) * (chunk // (sub or 1)) * mad
    return (base + rows * max(0.0, row_start - tile_mads - borrowed)
            + (count - 1) * max(0.0, piece_drain - window))
