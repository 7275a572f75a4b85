"""When to split a matmul's reduction whose sums a row group adds
(`split_k_rows`): npu-split-cores' model, priced as its grids are
at each grid's tile floor).

A grid of output tiles reads, on every core, its A rows and B columns over
the whole reduction; P parts over equal runs of the reduction, each on
cores / P cores side by side, read 1/P of it on tiles P times as large, and
write f32 tiles P times as large. The row group that reads the result then
loads P - 1 more f32 tensors of C's shape, over all the cores. The split
is taken when the phase it saves is larger than those reads by `MARGIN`
of the unsplit phase and by a chip barrier's cycles (the model does not
price the partials' drain tail, their weights' prefetch or the row
kernel's extra chunks: measured on BERT's ffn_out, docs/multicore.md).
`split_k.apply_model` also leaves it when a matmul follows the row group
(its prefetched weights already fill the unsplit phase's idle MTE2).
"""

from __future__ import annotations

from dataclasses import dataclass

from npu.target import Target

# estimate: the least saving, as a share of the unsplit phase, for which a
# split is taken (the unpriced drains and chunks above)
MARGIN = 0.1
MOST_PARTS = 8  # estimate: beyond, the f32 tiles' stores outweigh the reads saved


@dataclass(frozen=True)
class SplitChoice:
    parts: int  # runs of the reduction (1: unsplit)
    cycles: float  # the matmul's phase plus the row group's added loads
    unsplit: float
    reads: float  # the row group's added loads, in cycles per core


def grid_cost(m: int, n: int, k: int, cores: int, in_bytes: int, out_bytes: int,
              target: Target) -> float | None:
    """The least phase of an M x N (reduction) x K matmul on `cores` cores
    over any grid of output tiles, at its tile's floor: each core reads its
    A rows and B columns once (the grids' measured MTE2, docs/multicore.md
    "What each core reads"), the cube overlapping, then stores its C tile
    (a 16-element row piece per burst: the defractalized rows a row group
    reads); None when no grid cuts whole fractals."""
    f = target.fractal
    load = target.path("gm_to_l1").bytes_per_cycle
    store = target.path("ub_to_gm").bytes_per_cycle
    best = None
    for pk in range(1, cores + 1):
        pm = cores // pk
        if cores % pk or (k // f) % pk or (m // f) % pm:
            continue
        tm, tk = m // pm, k // pk
        moved = (tm + tk) * n * in_bytes / load
        cube = target.cube_cycles(float(tm // f * (n // f) * (tk // f)))
        out = tm * tk * out_bytes
        drain = out / store + out / (f * out_bytes) * target.gm_burst_cycles
        cost = max(moved, cube) + drain
        best = cost if best is None else min(best, cost)
    return best


def choose(m: int, n: int, k: int, cores: int, in_bytes: int, out_bytes: int,
           target: Target) -> SplitChoice | None:
    """The best number of equal runs for the reduction N of an M x N x K
    matmul whose f32 result (`out_bytes` unsplit) a row group reads, or
    None when no grid fits at all."""
    f = target.fractal
    unsplit = grid_cost(m, n, k, cores, in_bytes, out_bytes, target)
    if unsplit is None:
        return None
    best = SplitChoice(1, unsplit, unsplit, 0.0)
    rate = target.path("gm_to_ub").bytes_per_cycle
    for parts in range(2, MOST_PARTS + 1):
        if cores % parts or (n // f) % parts:
            continue
        cost = grid_cost(m, n // parts, k, cores // parts, in_bytes, 4, target)
        if cost is None:
            continue
        reads = (parts - 1) * m * k * 4 / cores / rate
        # at an equal estimate, the more parts: fewer bytes through each
        # core's MTE2, the pipe the measured phases exceed their floor on
        if cost + reads <= best.cycles:
            best = SplitChoice(parts, cost + reads, unsplit, reads)
    saved = best.unsplit - best.cycles
    if best.parts > 1 and (saved < MARGIN * best.unsplit or saved < target.sync_all_cycles):
        return SplitChoice(1, unsplit, unsplit, 0.0)
    return best
