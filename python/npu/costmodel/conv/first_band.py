"""How much of a conv's first band the cube gets done before its resident
weights have all landed (`tiling.estimate`), with the runs of copies that
npu-lower-conv issues the first super tile's weight pieces in.

After the first chunk, the lowering issues the next `ahead_pieces` pieces
at once (this module's; `passes/lower_conv/weights.py` calls it), unless
the band's map goes out in blocks beside the pieces; later pieces go out one a chunk.
Sync insertion then flags the whole run once, after its last copy, so every
chunk reading one of its pieces waits for all of it. MobileNetV2's last
projection (1x1 960->320 on 7x7, super tiles of 19 and 1 Cout blocks, 6
pieces of 3..18 K rows): pieces 2-6 go out in one run and the first tile's
second chunk waits 8.9k cycles for the run's flag, where the estimate had
the whole tile done while the weights loaded (14,568 estimated, 18,280
simulated).
"""

from __future__ import annotations

import math

from npu.target import Target


# Bands whose maps npu-lower-conv sends out block by block with the weight
# pieces (`defer_map`), each a run of copies of its own; the residual in the
# cube counts its copies' runs by them (`residual.work`).
DEFER_BANDS = 2


def ahead_pieces(m1: int, kc: int, n1: int, diagonal: bool, t: Target) -> int:
    """The pieces the lowering issues in one run after the first chunk of
    m1 x kc x n1 fractals (n1: the super tile's Cout blocks, one a chunk's
    mads for a block-diagonal conv): enough to hide a GM latency and one
    piece's transfer behind chunks. npu-lower-conv issues this many
    (`ConvWeights.ahead_pieces` calls it), so the estimate and the kernel
    cannot drift apart."""
    path = t.path("gm_to_l1")
    chunk_cycles = max(1, m1 * kc * (1 if diagonal else n1))
    piece_cycles = kc * n1 * t.fractal_bytes(2) // path.bytes_per_cycle
    return -(-(path.latency + piece_cycles) // chunk_cycles) + 1


def first_tile_left(pieces: list[tuple[int, int]], later: list[float], ahead: int, one_run: bool,
                    row_cycles: float, row_load: float, latency: int) -> float:
    """Cube cycles of the first super tile's work left when the last
    weights have landed. `pieces`: its (first K1 row, rows), `row_load`
    cycles of MTE2 a K1 row, `row_cycles` of cube a K1 row; `later`: the
    later super tiles' loads (cycles each, one copy a tile, after its
    pieces). Runs: the first piece (with the band's map), then, where
    `one_run`, the next `ahead` loads together, then one load a chunk; each
    run lands its bytes and a GM latency after the one before (its flag
    holds MTE2), and the cube works through a run's rows once it lands."""
    loads = [(rows * row_load, rows) for _, rows in pieces] + [(c, 0) for c in later]
    step = ahead if one_run else 1
    runs = [loads[:1], loads[1:1 + step]] + [[x] for x in loads[1 + step:]]
    land = cube = 0.0
    for k, run in enumerate(r for r in runs if r):
        land += sum(c for c, _ in run) + (latency if k else 0)
        rows = sum(r for _, r in run)
        if rows:
            cube = max(cube, land) + rows * row_cycles
    return max(0.0, cube - land)


def tapered_end(pieces: list[tuple[int, int]], row_cycles: float, row_load: float,
                latency: int) -> float:
    """When the cube ends a conv of one band whose weight pieces each go
    out in their own run (`tapered_pieces`), with the map blocks their rows
    read: a run lands a GM latency and its bytes (`row_load` cycles a K1
    row) after the one before; the cube works through a piece's rows
    (`row_cycles` each) once it lands."""
    land = cube = 0.0
    for _, rows in pieces:
        land += latency + rows * row_load
        cube = max(cube, land) + rows * row_cycles
    return cube


def weight_pieces(k1: int, kc: int, cap: int | None = None) -> list[tuple[int, int]]:
    """(first K1 row, rows) of resident weights' pieces as npu-lower-conv
    loads them: 1, 1, 2, 4, ... chunks of kc rows, at most `cap` chunks
    (`piece_cap`). Each copy is followed by its flag, which waits for the
    copy's GM latency, so a piece must cover more compute than the previous
    one took to arrive."""
    step, pieces, k0, size = min(kc, k1), [], 0, 1
    while k0 < k1:
        rows = min(min(size, cap or size) * step, k1 - k0)
        pieces.append((k0, rows))
        k0 += rows
        size = size if len(pieces) == 1 else 2 * size
    return pieces


def tapered_pieces(k1: int, kc: int) -> list[tuple[int, int]]:
    """(first K1 row, rows) of resident weights' pieces where MTE2 paces a
    conv of one band: 1, 1, 2, 2, 3, 3, ... chunks counted from the last
    piece back, the first taking what is left. The cube works through a
    piece only once it lands, so the last must be small; an earlier piece
    may cover about one more chunk than the one after it takes to land
    with its GM latency (1x1 1024->256 14, 16 chunks: 4, 3, 3, 2, 2, 1, 1)."""
    chunks = -(-k1 // kc)
    sizes: list[int] = []
    while sum(sizes) < chunks:
        sizes.append(min(len(sizes) // 2 + 1, chunks - sum(sizes)))
    pieces, k0 = [], 0
    for size in reversed(sizes):
        rows = min(size * kc, k1 - k0)
        pieces.append((k0, rows))
        k0 += rows
    return pieces


def piece_cap(chunks: int, chunk_cycles: float, latency: int) -> int:
    """The most chunks one weight piece of the first band covers. Each piece
    ends in a flag that holds MTE2 for the GM latency, and where MTE2 paces
    the band the cube works through the last piece only after it lands:
    `p` chunks a piece cost about latency * chunks / p + p * chunk_cycles,
    least at p = sqrt(latency * chunks / chunk_cycles). (Doubling without a
    cap: 3x3/2 128->128 56's last 8 of 18 chunks waited for one 131 KB
    piece.)"""
    return max(1, round(math.sqrt(latency * chunks / max(chunk_cycles, 1))))
