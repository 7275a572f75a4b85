"""The arithmetic of `npu-lower-matmul`'s pipelined schedule that the cost
model shares with the pass: how many L0C pieces a C tile drains in, the L0
sub-step and grid of those pieces, the L1 chunk of the reduction, and the
time of one tiling streamed that way (`pipelined_time`).

All sizes are in fractal blocks (16 elements) unless named otherwise; every
rate and latency is the target's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from npu.costmodel.matmul.drain_ring import Ring, ring_time
from npu.target import Target

# C tiles from which npu-lower-matmul moves each piece to one staged UB
# buffer before its epilogue (its `staged-drain` option's default; measured
# figures in `passes/lower_matmul/plan.py`'s `stages_drain`).
STAGED_DRAIN_TILES = 7


@dataclass(frozen=True)
class Drain:
    """What the time estimate knows of C's way out: the epilogue's vector
    work over all of C, the GM write time of all of C (0: the traffic's
    write bytes at the path's rate; row-major stores pay a burst per row of
    16, `store_cycles`), and whether an epilogue drains the pieces (4 of
    them instead of 2)."""

    vector_cycles: float = 0.0
    store_cycles: float = 0.0
    epilogue: bool = False
    landing: int = 1  # 2: an f16 drain into two UB landing slots by turns


def store_cycles(target: Target, elements: int, bytes_per_element: int,
                 burst_elements: int = 0) -> float:
    """GM write time of `elements` stored in bursts of `burst_elements`
    (0: long bursts, one per column block): each burst's request set-up
    (`gm_burst_cycles`) beside the bytes at the path's rate. A row-major
    store writes one burst per 16-element row: f32 at half the path's rate."""
    cycles = elements * bytes_per_element / target.path("ub_to_gm").bytes_per_cycle
    if burst_elements:
        cycles += elements / burst_elements * target.gm_burst_cycles
    return cycles


def default_pieces(kb: int, epilogue: bool) -> int:
    """L0C pieces of a C tile of kb column blocks: an epilogue's vector
    work holds its piece of L0C while it drains, so smaller pieces let the
    cube refill sooner (BERT's ffn_in + GELU 295k -> 281k cycles with 4);
    8 need more carried event ids than npu-insert-sync leaves a loop inside
    the BERT layer (it merges them into one: ffn_in 217k -> 256k there,
    although alone it runs 239k -> 209k)."""
    split = 4 if epilogue and kb % 4 == 0 else 2
    return split if kb % split == 0 else 1


def piece_grid(mb: int, kb: int, pieces: int, top: int, chunk: int, target: Target,
               rows: int = 0, split: Callable[[int], bool] = lambda _blocks: True
               ) -> tuple[int, int | None]:
    """(row pieces, L0 sub-step) of a C tile mb x kb in `pieces` L0C
    pieces, `rows` of them along m when given (`c-piece-rows`). The
    sub-step is the largest divisor of `top` (the requested n, else the
    chunk) dividing the chunk with two slots in L0A (piece rows x n) and in
    L0B (n x piece columns): a tile n that fills L0 once (the simple
    schedule's) is halved.

    Without `rows`, the split whose mads are largest (a mad is mb x sub x
    kb / pieces blocks whatever the rows; ties keep whole-height column
    slabs): a set_flag after a mad waits for its completion (`mad_latency`)
    and holds M meanwhile, so each mad costs its blocks plus that latency
    (one slot release per mad). Column slabs of a tall tile leave a thin
    L0B slot beside a full L0A one: a 256x256 tile in four 256x64 slabs
    mads 256 blocks at a time (sub-step 64, L0A's two slots full), in 2 x 2
    pieces of 128x128, 512 (both slots full). Only where those stalls bind
    (`split(mad blocks of the slabs)`): shorter pieces take more row-major
    store copies and epilogue instructions, which cost the drain that
    nothing hides in a single C tile (the pinned 256x512x256 + bias + relu:
    56,355 -> 56,447). Measured (BERT seq 512, 256x256 tiles): q_proj
    248.0k -> 244.9k, out_proj 88.5k -> 86.8k, ffn_in 328.1k -> 323.1k,
    ffn_out 319.1k -> 317.2k cycles. (sub None: no sub-step fits.)"""
    blk = target.fractal_bytes(2)
    subs = [d for d in range(top, 0, -1) if top % d == 0 and chunk % d == 0]

    def sub_for(r: int) -> int | None:
        mbp, khb = mb // r, kb * r // pieces
        return next((d for d in subs if 2 * mbp * d * blk <= target.capacity("l0a")
                     and 2 * d * khb * blk <= target.capacity("l0b")), None)

    if rows:
        return rows, sub_for(rows)
    best = (1, sub_for(1))
    if best[1] is not None and not split(mb * kb * best[1] // pieces):
        return best
    for r in range(2, pieces + 1):
        if pieces % r or mb % r or kb % (pieces // r):
            continue
        sub = sub_for(r)
        if sub is not None and (best[1] is None or sub > best[1]):
            best = (r, sub)
    return best


def l0_turns(rows: int, sub: int, cols: int, target: Target) -> int:
    """L0A / L0B slots a pipelined loop's sub-steps take turns in (rows x
    sub blocks of A, sub x cols of B each): four where four fit both
    buffers, else two. With four, npu-lower-matmul loads two sub-steps'
    slots and then runs their mads back to back, so one slot release (a
    set_flag after a mad holds M for `mad_latency`) follows two sub-steps'
    mads, and the loads of the next two go on behind them."""
    blk = target.fractal_bytes(2)
    fits = (4 * rows * sub * blk <= target.capacity("l0a")
            and 4 * sub * cols * blk <= target.capacity("l0b"))
    return 4 if fits else 2


def best_chunk(chunks: Iterable[int], mb: int, kb: int, n1: int, tiles: int, a_streams: bool,
               target: Target) -> int | None:
    """The L1 chunk (reduction blocks per GM -> L1 copy) among `chunks`: it
    trades the GM path's per-copy latency (paid once per chunk: one flag
    per chunk) against the pipeline's fill and drain (the first chunk's
    copy before the first mad, the last chunk's mads after the last copy).
    `a_streams`: each copy carries an A chunk too (else only B)."""
    blk = target.fractal_bytes(2)
    path = target.path("gm_to_l1")

    def estimate(d: int) -> float:
        trips = tiles * (n1 // d)
        copy = ((mb if a_streams else 0) + kb) * d * blk / path.bytes_per_cycle + path.latency
        cube = target.cube_cycles(float(mb * kb * d))
        return max(copy + cube * trips, copy * trips + cube)
    return min(chunks, key=lambda d: (estimate(d), -d), default=None)


def pipelined_time(m: int, n: int, k: int, batch: int, mb: int, kb: int, chunk: int,
                   resident: bool, read_bytes: float, c_bytes: float, write_bytes: float,
                   target: Target, drain: Drain, handoffs: bool = False, pieces: int = 0,
                   sub: int = 0) -> float:
    """Estimated cycles of an m x n x k matmul (elements; batch of them)
    streamed by the pipelined schedule in C tiles of mb x kb blocks and L1
    chunks of `chunk` reduction blocks, A's row strip `resident` in L1 or
    not, with the cost model's GM reads, C's accumulator bytes (L0C -> UB)
    and GM writes:

      fill   the strip (resident) and the first chunk's copy before the first mad;
      MTE2   the reads, plus the GM latency once per chunk (a set_flag after
             each copy holds MTE2 until it lands) and once for the strip;
      M      the cube's blocks plus `mad_latency` per mad (the slot release
             after each mad waits for its completion), mads of the pieces'
             grid (`piece_grid`), or the L1 -> L0 loads feeding them if
             longer (A once per column of pieces of each C tile, B once per
             row of them);
      drain  L0C -> UB and the epilogue's vector work, or the GM writes
             plus the GM latency once per piece (the flag releasing its UB
             holds MTE3 until its stores land);
      tail   what nothing hides after the last mad: the last tile's drain
             beyond its pieces' stagger over the last chunk (pieces finish
             a piece's share of that chunk apart), at least one piece's.

    Time = the later of the last mad (after MTE2 and the last chunk's
    mads, or after the fill and M) plus the tail, and the fill, the first
    tile's mads and all the drains. A narrower C tile of a resident
    strip shortens the tail (its drain is smaller) for more chunks and
    smaller mads; the time weighs them.

    `handoffs` (an epilogue's drain only): also the L0C-piece / drain /
    store hand-offs iteration by iteration (`drain_ring`), the later of the
    two. Only the fusion decisions' estimates ask for it (`kernel_cycles`):
    npu-lower-matmul's tiling choice keeps the pipe sums, as with the ring
    it picked tiles that ran slower on 32 cores (BERT seq 128 49,151 ->
    49,535, seq 512 107,492 -> 112,676 cycles).

    `pieces` (0: `default_pieces`) and `sub` (0: `piece_grid`'s) are the
    plan's C pieces and L0 sub-step when it takes others (column strips:
    the one tile's sub-step, `col_strips.one_tile_sub`)."""
    frac = target.fractal
    blk = target.fractal_bytes(2)
    path = target.path("gm_to_l1")
    n1 = n // frac
    tiles = batch * (m // frac // mb) * (k // frac // kb)
    trips = tiles * (n1 // chunk)
    mte2 = read_bytes / path.bytes_per_cycle + (trips + resident) * path.latency
    blocks = m * n * k * batch // frac ** 3
    cube = target.cube_cycles(blocks)
    pieces = pieces or default_pieces(kb, drain.epilogue)
    rows, grid_sub = piece_grid(mb, kb, pieces, chunk, chunk, target)
    sub = sub or grid_sub
    mads = trips * pieces * (chunk // (sub or 1))
    # L1 -> L0: each piece loads its rows of A and its columns of B per
    # sub-step, so A goes to L0A once per column of pieces, B to L0B once
    # per row of them, for every C tile.
    a_bytes, b_bytes = m * n * 2 * batch, n * k * 2 * batch
    mte1 = (a_bytes * (k // frac // kb) * (pieces // rows)
            / target.path("l1_to_l0a").bytes_per_cycle
            + b_bytes * (m // frac // mb) * rows / target.path("l1_to_l0b").bytes_per_cycle)
    last = cube / trips
    store = target.path("ub_to_gm")
    drains = max(c_bytes / target.path("l0c_to_ub").bytes_per_cycle + drain.vector_cycles,
                 (drain.store_cycles or write_bytes / store.bytes_per_cycle)
                 + tiles * pieces * store.latency)
    per_tile = drains / tiles
    tail = max(per_tile / pieces, per_tile - (pieces - 1) / pieces * last)
    strip = m * n * 2 if resident else 0
    fill = (strip + ((0 if resident else mb) + kb) * chunk * blk) / path.bytes_per_cycle \
        + path.latency
    m_end = max(mte2 + last, fill + max(cube + mads * target.mad_latency, mte1))
    pipes = max(m_end + tail, fill + cube / tiles + drains)
    if not (handoffs and drain.epilogue):
        return pipes
    # The hand-offs of the L0C pieces, their drains and stores, iteration
    # by iteration (`drain_ring`): the cube waits for V, V for the stores.
    per_piece = tiles * pieces
    staged = drain.landing == 1 and tiles >= STAGED_DRAIN_TILES
    move = target.path("l0c_to_ub")
    ring = Ring(tiles, n1 // chunk, pieces,
                mad=max(cube + mads * target.mad_latency, mte1) / (trips * pieces),
                copy=((0 if resident else mb) + kb) * chunk * blk / path.bytes_per_cycle
                + path.latency,
                move=c_bytes / per_piece / move.bytes_per_cycle + move.latency,
                vector=drain.vector_cycles / per_piece,
                store=(drain.store_cycles or write_bytes / store.bytes_per_cycle) / per_piece
                + store.latency,
                # Several pieces through the one staged buffer of an f32
                # drain each wait for the store of the piece before; else
                # a piece's slot is two pieces back (f16 landing slots, one
                # piece's buffer and npu-double-buffer's copy, the unstaged
                # drains' buffers).
                landing=1 if pieces > 1 and staged else 2,
                every_iteration=pieces == 1 or drain.landing > 1)
    start = strip / path.bytes_per_cycle + path.latency if resident else 0.0
    return max(pipes, start + ring_time(ring))
