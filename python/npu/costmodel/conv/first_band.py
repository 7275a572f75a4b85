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

from npu.target import Target


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
