"""Whether the pipelined schedule keeps A's row strip resident in L1, and
with which C tile width and B chunks (`resident_or_streamed`, called by
`npu.costmodel.matmul.tiling.choose_tiling`): the strip's room
(`resident_a_chunks`), a choice of tiles with A resident where it has room
(`make_choice`, which the tiling search builds its candidates with) and the
choice among plans by `npu.costmodel.matmul.pipelined.pipelined_time`."""

from __future__ import annotations

import dataclasses

from npu.costmodel.matmul.fitting import (MatmulShape, Tiles, TilingChoice, buffer_needs, capacities,
                                          largest_fitting_n, multiples, pipelines, traffic)
from npu.costmodel.matmul.pipelined import Drain, best_chunk, pipelined_time
from npu.costmodel.matmul.row_strips import (b_turns, row_strip_chunks, row_strips_time,
                                             row_strips_traffic)
from npu.target import Target


def resident_a_chunks(shape: MatmulShape, tiles: Tiles, l1_bytes: int, fractal: int,
                      a_in_l1: bool = False) -> list[int]:
    """B chunks (reduction blocks per GM -> L1 copy, largest first) with which
    the pipelined OS schedule can keep A's m x N row strip in L1 across the
    column tiles; empty when it cannot or it saves nothing.

    Needs C tiles that divide M x K (the pipelined schedule), one matrix and
    one row of C tiles (m = M: the strip is all of A, loaded once before the
    flat loop), more than one column tile (else A is read once anyway), and
    the strip plus two B chunks (the ping-pong) within (m + k) x N elements
    and L1: chunks of at most half the reduction, so the footprint is no
    larger than streaming both operands in two halves (the room left for
    `npu-prefetch` of the next op's weights). Where (m + k) x N exceeds L1
    (a long reduction: BERT's 128x3072x768, A 768 KiB), the chunks are
    those whose two copies fit beside the strip in L1; whether that beats
    streaming A is `choose_tiling`'s time estimate (more, smaller chunks pay
    the GM latency more often).

    Several rows of C tiles would need a loop per row, each filling and
    draining its pipeline behind its strip's copy: measured 512x768x512
    (two rows) 61k -> 77k cycles, although A's traffic halved.

    `a_in_l1`: A already is in L1 (a chained tensor, npu-fuse chains): the
    strip is all of it, one column tile is enough, and the chunks are those
    whose two B copies fit beside it."""
    if a_in_l1:
        if shape.batch != 1 or shape.M > tiles.m or not pipelines(shape, tiles):
            return []
        strip = shape.M * shape.N * shape.in_bytes
        chunk_bytes = tiles.k * fractal * shape.in_bytes  # one reduction block of B
        n1 = shape.N // fractal
        return [d for d in range(n1, 0, -1)
                if n1 % d == 0 and strip + 2 * d * chunk_bytes <= l1_bytes]
    if (shape.batch != 1 or shape.M > tiles.m or not pipelines(shape, tiles)
            or tiles.k >= shape.K):
        return []
    room = min(l1_bytes, (tiles.m + tiles.k) * shape.N * shape.in_bytes)
    strip = shape.M * shape.N * shape.in_bytes
    chunk_bytes = tiles.k * fractal * shape.in_bytes  # one reduction block of B
    n1 = shape.N // fractal
    return [d for d in range(n1 // 2, 0, -1)
            if n1 % d == 0 and strip + 2 * d * chunk_bytes <= room]


def make_choice(strategy: str, shape: MatmulShape, tiles: Tiles, target: Target,
                resident_a: bool = False, a_in_l1: bool = False) -> TilingChoice:
    """These tiles as a `TilingChoice`: the bytes each buffer holds and the GM
    traffic. `resident_a`: the schedule may keep A's row strip in L1 (it
    does when `resident_a_chunks` finds chunks for these tiles)."""
    needs = {b: v for b, _, v in buffer_needs(strategy, shape, tiles, target.fractal)}
    resident = resident_a and strategy == "os" and bool(
        resident_a_chunks(shape, tiles, target.capacity("l1"), target.fractal, a_in_l1))
    return TilingChoice(strategy, tiles, traffic(strategy, shape, tiles, resident), needs, resident)


# An other plan replaces the one before the time estimate only when its
# estimated time is this much lower: between near-equal estimates the model's
# error decides (the pinned 256x512x256 with a row-major f32 store: 32-wide
# tiles estimated 0.4% faster than one 256-wide tile ran 8% slower).
TIMED_MARGIN = 0.05
# Plans whose estimates are this close are the same to the estimate: the one
# holding less L1 leaves `npu-prefetch` room for the next op's weights, which
# then load during this op (BERT seq 128: ffn_in in 192-wide tiles holds 480
# KiB instead of 960 KiB, ffn_out's first B chunk loads during the layernorm
# between them: 383,089 -> 379,943 cycles).
SAME_TIME = 0.01
# Row strips keep the tiles and only cut A's reads, so their estimate
# against the same tiles streamed errs little: they replace the plan when
# estimated faster at all, though never for L1 alone. Simulated against the
# tiles streamed (one core, f32 or i32 C; ascend910 unless named), all 26
# shapes with several rows and columns of tiles that `bench/int8.py` and a
# sweep tried ran faster or the same, none slower: int8 1024^3 149,068 ->
# 143,985 (3.4%), 768^3 int8 11%, 384x768x768 13%, f16 512x768x3072 2.7%,
# f16 1024^3 1.9% (with no more strip parts and B turns than event ids:
# with more, npu-insert-sync merged their flags and f16 1024^3 ran 3%
# slower), ascend310 int8 1024^3 288,692 -> 280,147.
ROW_STRIPS_MARGIN = 0.0


def resident_or_streamed(shape: MatmulShape, best: TilingChoice, target: Target,
                         fixed_k: int = 0, fixed_n: int = 0, drain: Drain = Drain(),
                         timed: bool = True) -> TilingChoice:
    """The streaming search's OS tiles `best` as the pipelined schedule runs
    them: A's row strip resident in L1 (only B streams) or A streamed, and,
    with one row of C tiles (m = M), the other column widths k with the
    strip resident, each with the B chunk `pipelined_time` likes best. The
    plan as before (the first) stays unless an other is estimated
    TIMED_MARGIN faster (the fastest then) or, within SAME_TIME of it,
    holds less L1 (the smallest then); `timed=False`: the plan as before.

    The streaming search ranks tiles by traffic-bound time, which a
    resident strip makes equal for every k: narrower C tiles then drain
    less after the last mad (the tail nothing hides) and, where (m + k) x N
    exceeds L1, fit larger B chunks beside the strip, for more chunks (one
    GM latency each) and smaller mads. Other widths are tried only when the
    search took several column tiles: with one, A is read once anyway, and
    splitting that tile moves only its drain, which the estimate
    overvalues when the drain is as heavy as the mads, their pieces' L0C
    then waiting for their way out (256x256x256 + GELU in f32: 18.1k
    cycles in one tile, 20.1k in 32-wide ones estimated a third faster).
    Measured (BERT seq 128):
    128x3072x768 (A 768 KiB) streamed A twice in 384-wide tiles (107.5k
    cycles of loop); resident with 128-wide tiles and 512-row B chunks
    (L1 full) its loop is 90.7k after the 12.8k strip copy; 128x768x768
    with f32 row-major stores (half the path's rate: their tail is 6k in
    384-wide tiles) 29.5k -> 23.9k at k=192."""
    frac = target.fractal
    l1 = target.capacity("l1")
    options: list[tuple[float, TilingChoice, int]] = []

    def consider(tiles: Tiles, resident: bool, timed_chunk: bool = True) -> None:
        """An option of these tiles; `timed_chunk`: its B chunk is the
        estimate's best (kept in the choice), else the schedule's own."""
        if not pipelines(shape, tiles):
            return
        mb, kb, n1 = tiles.m // frac, tiles.k // frac, shape.N // frac
        blk = target.fractal_bytes(shape.in_bytes)
        choice = make_choice("os", shape, tiles, target, resident_a=resident)
        if resident:
            if not choice.a_resident:
                return
            chunks = [d for d in resident_a_chunks(shape, tiles, l1, frac)
                      if not fixed_n or d * frac % tiles.n == 0]
        else:
            chunks = [d for d in range(n1, 0, -1) if n1 % d == 0
                      and 2 * (mb + kb) * d * blk <= l1 and (not fixed_n or d * frac % tiles.n == 0)]
        t = choice.traffic

        def time(d: int) -> float:
            return pipelined_time(shape.M, shape.N, shape.K, shape.batch, mb, kb, d, resident,
                                  t.read_bytes(shape), t.c_writes * shape.acc_bytes,
                                  t.write_bytes(shape), target, drain)
        timed = resident and timed_chunk
        if timed:
            chunk = min(chunks, key=lambda d: (time(d), -d), default=None)
        else:
            chunk = best_chunk(chunks, mb, kb, n1, shape.batch * (shape.M // tiles.m)
                               * (shape.K // tiles.k), not resident, target)
        if chunk is not None:
            footprint = ((shape.M * shape.N * shape.in_bytes + 2 * kb * chunk * blk) if resident
                         else 2 * (mb + kb) * chunk * blk)
            options.append((time(chunk), dataclasses.replace(
                choice, chunk=chunk * frac if timed else 0), footprint))

    # The plan as before (the streaming search's tiles, the strip resident
    # where (m + k) x N fits L1) first: an other plan must beat it by
    # TIMED_MARGIN.
    old_rule = (best.tiles.m + best.tiles.k) * shape.N * shape.in_bytes <= l1
    consider(best.tiles, old_rule, timed_chunk=False)
    other_form = not old_rule
    if not options:  # e.g. one column tile: nothing to keep resident
        consider(best.tiles, False)
        other_form = None
    if not options:  # nothing pipelines: the simple schedule runs these tiles
        return make_choice("os", shape, best.tiles, target)
    if not timed:
        # Residency wherever it fits: several rows keep their strips too.
        consider_row_strips(shape, best.tiles, target, drain, fixed_n, options)
        return options[-1][1] if options[-1][1].row_strips else options[0][1]
    if other_form is not None:
        consider(best.tiles, other_form)
    consider_row_strips(shape, best.tiles, target, drain, fixed_n, options)
    if best.tiles.m == shape.M and best.tiles.k < shape.K and not fixed_n:
        for kk in ([fixed_k] if fixed_k else multiples(shape.K, frac)):
            if kk == best.tiles.k or shape.K % kk:
                continue
            nn = largest_fitting_n("os", shape, shape.M, kk, capacities(target),
                                   multiples(shape.N, frac))
            if nn is not None:
                consider(Tiles(shape.M, nn, kk), True)
    base_time, base, base_l1 = options[0]
    faster = [o for o in options[1:] if o[0] < (1 - (
        ROW_STRIPS_MARGIN if o[1].row_strips else TIMED_MARGIN)) * base_time]
    smaller = [o for o in options[1:] if o[0] <= (1 + SAME_TIME) * base_time and o[2] < base_l1
               and not o[1].row_strips]
    if faster:
        pick, why = min(faster, key=lambda o: o[0]), "estimate"
    elif smaller:
        pick, why = min(smaller, key=lambda o: (o[2], o[0])), "L1"
    else:
        return base
    return dataclasses.replace(pick[1], why=(
        f"the pipelined schedule's estimate: {pick[0]:.0f} cycles against {base_time:.0f}"
        f" for tiles {base.tiles}{' with the strip resident' if base.a_resident else ''}"
        + (f", holding {pick[2]} bytes of L1 instead of {base_l1}" if why == "L1" else "")))


def consider_row_strips(shape: MatmulShape, tiles: Tiles, target: Target, drain: Drain,
                        fixed_n: int, options: list) -> None:
    """Adds to `options` (time, choice, L1 bytes) these tiles with A's row
    strips resident (`npu.costmodel.matmul.row_strips`), in the parts the
    time estimate likes best, where that schedule applies: without an
    epilogue, whose pieces' drains (vector work, row-major stores) the
    estimate does not weigh against the parts (examples/matmul_512x768x768,
    its C stored row-major in f32: estimated 1.7% faster, ran 3.2% slower)."""
    if drain != Drain():
        return
    frac = target.fractal
    chunks = [d for d in row_strip_chunks(shape, tiles, target)
              if not fixed_n or d * frac % tiles.n == 0]
    if not chunks:
        return
    times = {d: row_strips_time(shape, tiles, d, target, drain) for d in chunks}
    chunk = min(chunks, key=lambda d: (times[d], -d))
    blk = target.fractal_bytes(shape.in_bytes)
    choice = dataclasses.replace(make_choice("os", shape, tiles, target),
                                 traffic=row_strips_traffic(shape, tiles), row_strips=True,
                                 chunk=chunk * frac)
    mb, kb, n1 = tiles.m // frac, tiles.k // frac, shape.N // frac
    turns = b_turns(mb, kb, n1, chunk, target)
    footprint = (mb * n1 + turns * kb * chunk) * blk
    options.append((times[chunk], choice, footprint))
