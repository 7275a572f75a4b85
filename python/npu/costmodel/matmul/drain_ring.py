"""The pipelined schedule's L0C-piece / drain / store hand-offs, iteration by
iteration (`ring_time`): what `pipelined_time`'s pipe sums leave out when
C's way out is long (row-major stores, an epilogue's vector work) and
L0C holds one C tile.

`npu-lower-matmul`'s flat loop (`passes/lower_matmul/pipelined.py`) runs
one (C tile, L1 chunk) pair an iteration; its C pieces live in L0C across
the loop (one copy each: npu-double-buffer duplicates only the buffers the
body allocates), its drain of piece h is under `scf.if last chunk`, but
npu-insert-sync's flags around it are set and waited for every iteration:

  * M's mads into piece h wait for V's read of piece h in the iteration
    before (the L0C slot), which V passes only after its own waits;
  * V's move of piece h waits for M's mads of piece h in the iteration and
    for MTE3 to have left its UB landing slot: with an f16 drain's two
    landing slots (`npu-lower-matmul`'s `landing_slots`) or one piece a
    tile (its buffer and npu-double-buffer's copy), the slot of two pieces
    back; several pieces drained in f32 through one staged buffer, the
    piece before's (out_proj at seq 197 in two pieces);
  * MTE3 stores a drained piece after its epilogue.

V's wait for its landing slot sits outside the drain's scf.if, so it holds
V, and through V the next iteration's mads, in iterations that drain
nothing, with one piece a tile and with an f16 drain's landing slots (seq
197's Q/K/V projection in two pieces: the cube waits 3.1k cycles a tile in
the two iterations after a drain); with several pieces drained in f32
only the drains wait (seq 256's out_proj in two pieces: 5,370 cycles a
tile simulated, 5,480 by this model, 6,176 with the wait every iteration).

So in the first iterations of a C tile the cube waits for V, and V for the
stores of the tile before: with one C piece of 256 x 144 (BERT seq 256's
Q/K/V projection apart, stored row-major) the cube sits about 1.2k cycles
a tile for the move and 1.7k for the stores (simulated 10,052 cycles a tile
against 7,152 of mads; seq 197's ffn_in with its GELU, 2,734 against
2,112). `ring_time` runs those hand-offs over the iterations with the
target's rates and latencies.

Only the fusion decisions' estimate asks for it (`kernel_cycles`, through
`pipelined_time(handoffs=True)`); npu-lower-matmul's tiling choice keeps
the pipe sums (with the ring in it, BERT on 32 cores ran slower).
"""

from __future__ import annotations

from dataclasses import dataclass

# Iterations simulated before the steady period is extrapolated (a tile's
# hand-offs repeat from the second tile on; the cap bounds the model's
# time on large matmuls).
RING_TILES = 6


@dataclass(frozen=True)
class Ring:
    """One tile's pieces and the durations of their steps (cycles): `mad` a
    piece's mads of one chunk (the cube's work with the mads' latencies, or
    its L1 -> L0 loads if longer), `copy` one chunk's GM -> L1 copy with its
    latency (the flag after it waits for the copy to land), `move` a
    piece's L0C -> UB move, `vector` its epilogue's work, `store` its GM
    write with the latency of the flag that waits for it."""

    tiles: int
    chunks: int
    pieces: int
    mad: float
    copy: float
    move: float
    vector: float
    store: float
    landing: int = 1  # pieces back whose store frees a piece's UB landing slot
    every_iteration: bool = True  # V waits for its slot every iteration, not only to drain


def ring_time(r: Ring, start: float = 0.0) -> float:
    """Cycles from `start` (the first chunk's copy may begin) to the last
    piece's store, by the hand-offs of the module docstring; MTE2 keeps two
    L1 chunks in flight (npu-double-buffer's ping-pong)."""
    tiles = min(r.tiles, RING_TILES)
    n = tiles * r.chunks
    p = r.pieces
    back = 2 * p  # iterations -2 and -1: the start
    m_end = [start] * (n + 2)  # M's end of each iteration
    vpoint = [start] * (back + n * p)  # V past piece h's waits (and move)
    mte3_end = [start] * (back + n * p)  # MTE3 past piece h's stores
    m_t = v_t = s_t = mte2_t = start
    tile_end = []
    for i in range(n):
        last = i % r.chunks == r.chunks - 1
        mte2_t = max(mte2_t, m_end[i]) + r.copy  # m_end[i]: iteration i - 2's
        for h in range(p):
            v = back + i * p + h
            m_t = max(m_t, mte2_t, vpoint[v - p]) + r.mad
            landed = mte3_end[v - r.landing] if r.every_iteration or last else start
            v_t = max(v_t, m_t, landed) + (r.move if last else 0.0)
            vpoint[v] = v_t
            v_t += r.vector if last else 0.0
            s_t = max(s_t, v_t) + (r.store if last else 0.0)
            mte3_end[v] = s_t
        m_end[i + 2] = m_t
        if last:
            tile_end.append(s_t)
    if r.tiles > tiles:
        period = (tile_end[-1] - tile_end[-3]) / 2 if tiles >= 3 else tile_end[-1] - start
        return tile_end[-1] - start + (r.tiles - tiles) * period
    return tile_end[-1] - start
