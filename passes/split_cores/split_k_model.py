"""When to split a matmul's reduction whose sums a row group adds
(`split_k_rows`): npu-split-cores' model, priced as its grids are
at each grid's tile floor).

A grid of output tiles reads, on every core, its A rows and B columns over
the whole reduction; P parts over equal runs of the reduction, each on
cores / P cores side by side, read 1/P of it on tiles P times as large, and
write f32 tiles P times as large; the unsplit grid's weights are not its
phase's bytes when npu-prefetch loads them all before its barrier
(`weights_early`). The row group that reads the result then
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

from npu.costmodel.matmul.fitting import MatmulShape
from npu.costmodel.matmul.tiling import TilingError, choose_tiling
from npu.target import Target

from .prefetched import weight_slot

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


def weights_early(m: int, n: int, k: int, in_bytes: int, out_bytes: int, room: float,
                  target: Target) -> bool:
    """Whether npu-prefetch loads all of a core's weights (N x K of an
    M x N x K share) before its chip barrier, as the grid ranking counts
    whole weights (`prefetched.ranked`): its two slots (`weight_slot`) as
    far as `room` (the MTE2 idle cycles the unit before leaves at its end)
    holds them and, for an odd number of L1 chunks, the last one
    (npu-double-buffer's remainder, which npu-prefetch loads in earlier
    phases on several cores). BERT seq 128's ffn_out on 32 cores (16x2,
    295 KB of weights a core in three chunks, ffn_in's tail before it):
    its phase then loads A alone, and the split, whose partials' weights
    load after the barrier, was slower (41,727 -> 43,568 cycles,
    bench/chip.py)."""
    shape = MatmulShape(m, n, k, 1, in_bytes, 4, out_bytes)
    try:
        slot, count = weight_slot(shape, choose_tiling(shape, target), target)
    except TilingError:
        return False
    weights = n * k * in_bytes
    chunks = -(-weights // slot)
    slots = min(slot * count, room * target.path("gm_to_l1").bytes_per_cycle)
    return slots + (slot if chunks % 2 == 1 and chunks > count else 0) >= weights


def grid_cost(m: int, n: int, k: int, cores: int, in_bytes: int, out_bytes: int,
              target: Target, room: float = 0.0) -> float | None:
    """The least phase of an M x N (reduction) x K matmul on `cores` cores
    over any grid of output tiles, at its tile's floor: each core reads its
    A rows and B columns once (the grids' measured MTE2, docs/multicore.md
    "What each core reads"), the cube overlapping, then stores its C tile
    (a 16-element row piece per burst: the defractalized rows a row group
    reads); None when no grid cuts whole fractals. `room` (B a host
    constant, the unit before leaving that much idle MTE2): a grid whose
    weights npu-prefetch loads before the barrier whole (`weights_early`)
    reads only its A rows in the phase."""
    f = target.fractal
    load = target.path("gm_to_l1").bytes_per_cycle
    store = target.path("ub_to_gm").bytes_per_cycle
    best = None
    for pk in range(1, cores + 1):
        if (k // f) % pk:
            continue
        # the most row parts that divide M's blocks on the cores left (a
        # grid may leave cores idle: C's 13 row blocks of ViT's 197 rows
        # take none but 1 and 13)
        pm = max(p for p in range(1, cores // pk + 1) if (m // f) % p == 0)
        tm, tk = m // pm, k // pk
        weights = 0 if room and weights_early(tm, n, tk, in_bytes, out_bytes, room,
                                              target) else tk
        moved = (tm + weights) * n * in_bytes / load
        cube = target.cube_cycles(float(tm // f * (n // f) * (tk // f)))
        out = tm * tk * out_bytes
        drain = out / store + out / (f * out_bytes) * target.gm_burst_cycles
        cost = max(moved, cube) + drain
        best = cost if best is None else min(best, cost)
    return best


def choose(m: int, n: int, k: int, cores: int, in_bytes: int, out_bytes: int,
           target: Target, room: float = 0.0) -> SplitChoice | None:
    """The best number of equal runs for the reduction N of an M x N x K
    matmul whose f32 result (`out_bytes` unsplit) a row group reads, or
    None when no grid fits at all; `room`: the MTE2 idle cycles before the
    unsplit matmul's barrier, when B is a host constant (its weights may
    load there, `weights_early`; the partials' are taken to load after)."""
    f = target.fractal
    unsplit = grid_cost(m, n, k, cores, in_bytes, out_bytes, target, room)
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
