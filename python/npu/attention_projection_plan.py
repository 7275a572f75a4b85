"""The cost model of `npu-fuse-attention-projection` (`choose`): every
attention tile and projection plan (`candidates`) whose buffers fit on chip
(`npu.attention_projection.footprint`), each pipe's busy cycles estimated
from the target's rates (`estimate`), the least busiest pipe taken, against
the projection's own kernel followed by the attention at its own tile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from npu import ir as nir
from npu.attention import Attention
from npu.attention_plan import MAX_HEAD_STEPS
from npu.attention_projection import FRACTAL_F16, FRACTAL_F32, Projection, ProjPlan, footprint
from npu.target import Target


def candidates(a: Attention, p: Projection) -> list[list[ProjPlan]]:
    """The configurations `choose` weighs, in groups that differ only in
    the L0 sub-step (largest first: `choose` takes the largest that fits):
    X resident or in strips of 8 or 4 row blocks, pieces of one of Q, K, V
    (or half of one), one to three L0C slots, one or two scores slots, W
    chunks for two heads, one head or a few; W chunks of the largest
    divisor of the reduction up to 32 blocks that the sub-step divides."""
    d1, n1, m1 = a.d_blocks, p.n1, p.m1
    divisors = [d for d in range(n1, 0, -1) if n1 % d == 0]
    subs = [s for s in (16, 8, 6, 4, 3, 2, 1) if n1 % s == 0]
    groups = []
    for resident in (True, False):
        for rows in sorted({m1} if resident else {min(m1, 8), min(m1, 4)}, reverse=True):
            for cols in sorted({d1, d1 // 2} if d1 % 2 == 0 else {d1}, reverse=True):
                for c_slots in (3, 2, 1):
                    for scores_slots in (2, 1):
                        for depth in ("2 heads", "1 head", 8, 4, 2):
                            group = []
                            for sub in subs:
                                chunk = next((c for c in divisors if c % sub == 0 and c <= 32),
                                             sub)
                                per_head = n1 // chunk * 3 * (d1 // cols) * -(-m1 // rows)
                                # At least a job's chunks (`npu-lower-attention` copies a
                                # job's chunks right before its mads, each to its own slot).
                                w_slots = max(n1 // chunk, {"2 heads": 2 * per_head,
                                                            "1 head": per_head}.get(depth, depth))
                                group.append(ProjPlan(resident, rows, cols, c_slots, sub, chunk,
                                                      scores_slots, w_slots))
                            groups.append(group)
    return groups


def tiles_to_try(a: Attention) -> list[tuple[int, int]]:
    """Attention tiles `choose` tries: query tiles of up to 8 blocks (all
    rows, 8, 4, 2, 1) and key tiles giving 1 to 8 tiles a row."""
    s1 = a.seq_blocks
    qbs = sorted({min(s1, q) for q in (8, 4, 2, 1)}, reverse=True)
    kbs = sorted({-(-s1 // n) for n in range(1, 9)}, reverse=True)
    return [(qb, kb) for qb in qbs for kb in kbs]


def attention_vector_cycles(a: Attention, qb: int, kb: int, target: Target) -> float:
    """The attention's vector work (V pipe, L0C -> UB moves included) over
    all heads at tile qb x kb: per (query tile, key tile) the scores moved
    from L0C, the row max folds, the scaled shift, P's cast and exp in f16;
    per key tile after the first the context's rescaling; per query tile
    its P.V moves and the normalisation. An estimate from the target's
    rates (the schedule's stalls are not in it)."""
    s1, d1 = a.seq_blocks, a.d_blocks
    move = target.path("l0c_to_ub").bytes_per_cycle
    simple = target.vector_cycles("simple")
    exp = target.vector_cycles("transcendental")
    n_keys, n_queries = -(-s1 // kb), -(-s1 // qb)
    total = 0.0
    for y in range(n_keys):
        kbk = min(kb, s1 - y * kb)
        slab = 4 * qb  # f32 repeats of one [rows, 16] slab
        step = (kbk * qb * FRACTAL_F32 / move + (kbk - 1) * slab * simple + 16 * qb
                + 3 * kbk * slab * simple + kbk * 2 * qb * exp)
        pv = (d1 + 1) * qb * FRACTAL_F32 / move + (slab * (d1 + 1) if y else 0)
        total += step + pv
    total += d1 * 4 * qb * simple + 4 * qb  # the normalisation of a query tile
    return total * n_queries * a.heads


def estimate(a: Attention, qb: int, kb: int, p: Projection | None, pp: ProjPlan | None,
             target: Target) -> dict[str, float]:
    """Busy cycles per pipe of the attention kernel at tile qb x kb, with
    the projection (`pp`) or reading Q, K, V from GM (`pp` None), and
    `fill`: the first head's projection, which nothing overlaps."""
    s1, d1, h = a.seq_blocks, a.d_blocks, a.heads
    gm = target.path("gm_to_l1").bytes_per_cycle
    to_a, to_b = (target.path(f"l1_to_l0{x}").bytes_per_cycle for x in "ab")
    n_keys, n_queries = -(-s1 // kb), -(-s1 // qb)
    cube = h * (s1 * s1 * d1 + s1 * s1 * (d1 + 1))
    mte1 = h * n_queries * (d1 * qb * FRACTAL_F16 / to_a + n_keys * (
        kb * qb * FRACTAL_F16 / to_a + (2 * d1 + 1) * kb * FRACTAL_F16 / to_b))
    vector = attention_vector_cycles(a, qb, kb, target)
    reloads = 1 if n_queries == 1 else (1 if 2 * (2 * d1 + 1) * s1 * FRACTAL_F16 * 2
                                        <= target.capacity("l1") // 2 else n_queries)
    mte2 = h * (d1 * s1 + 2 * d1 * s1 * reloads) * FRACTAL_F16 / gm
    fill = 0.0
    if pp is not None:
        jobs = pp.jobs_per_head(p.m1, d1)
        head_blocks = 3 * d1 * p.n1 * p.m1
        cube += h * head_blocks + h * jobs * (p.n1 // pp.sub) * target.mad_latency
        if pp.w_slots < 2 * p.n1 // pp.chunk:
            # No room for the next job's W chunks while this one's are read:
            # each job's mads wait for its own copies.
            cube += h * jobs * pp.cols * p.n1 * FRACTAL_F16 / gm
        x_bytes = p.n1 * p.m1 * FRACTAL_F16
        w_bytes = 3 * d1 * p.n1 * FRACTAL_F16
        mte2 = (x_bytes * (1 if pp.x_resident else h)
                + w_bytes * h * pp.row_tiles(p.m1)) / gm
        mte1 += h * (jobs * pp.rows * p.n1 * FRACTAL_F16 / to_a
                     + pp.row_tiles(p.m1) * w_bytes / to_b)
        vector += h * 3 * d1 * p.m1 * FRACTAL_F32 / target.path("l0c_to_ub").bytes_per_cycle \
            + p.vector_cycles * 3 * d1 * h / p.c_blocks
        fill = max(head_blocks, (x_bytes + w_bytes) / gm)
    return {"M": cube, "MTE1": mte1, "MTE2": mte2, "V": vector, "fill": fill}


def projection_cycles(p: Projection, target: Target) -> float:
    """The projection as its own kernel (npu-lower-matmul's pipelined
    schedule): its cube work or its A and B traffic, the larger."""
    m = p.m1 * target.fractal
    xs = nir.memref_shape(p.x)
    blocks = p.m1 * p.n1 * p.c_blocks
    traffic = (math.prod(xs) * 2 + p.c_blocks * p.n1 * FRACTAL_F16 + m * p.c_blocks * 16 * 2)
    return max(target.cube_cycles(blocks), traffic / target.path("gm_to_l1").bytes_per_cycle)


@dataclass(frozen=True)
class Choice:
    """`choose`'s pick: the attention tile with the projection's plan and
    the estimated cycles fused and apart."""

    qb: int
    kb: int
    plan: ProjPlan
    ub_bytes: int
    fused: float
    apart: float


def choose(a: Attention, p: Projection, target: Target, ub_fraction: float,
           apart_tile: tuple[int, int], footprint_of) -> Choice | str:
    """The attention tile (`tiles_to_try`) and projection plan that fit on
    chip with the least estimated time (the busiest pipe plus the first
    head's projection), against the projection's own kernel plus the
    attention at `apart_tile` (its own plan); a string says why none is
    taken. `footprint_of(qb, kb)`: the attention's own footprint at that
    tile (None: it does not fit by itself)."""
    def busiest(est: dict) -> float:
        return max(v for k, v in est.items() if k != "fill") + est["fill"]

    # Apart, the attention's first loads wait for the projection's last
    # stores: a GM write and read latency between the two kernels.
    boundary = target.path("ub_to_gm").latency + target.path("gm_to_l1").latency
    apart = (projection_cycles(p, target) + boundary
             + busiest(estimate(a, *apart_tile, None, None, target)))
    best: Choice | None = None
    why = "no tile of the attention leaves room on chip for one C piece of the projection"
    s1 = a.seq_blocks
    for qb, kb in tiles_to_try(a):
        own = footprint_of(qb, kb)
        if own is None:
            continue
        if s1 > qb and s1 % qb == 0 and -(-s1 // qb) * -(-s1 // kb) > MAX_HEAD_STEPS:
            why = (f"a head has more tiles ({-(-s1 // qb) * -(-s1 // kb)}) than one static "
                   "pipeline holds")
            continue
        whole = qb >= s1 and kb >= s1
        for group in candidates(a, p):
            if group[0].scores_slots == 1 and not whole:
                continue  # see `ProjPlan`: only a head's jobs may sit between Q.K^T and the softmax
            for pp in group:
                need = footprint(a, qb, kb, p, pp, own)
                budget = {sp: target.capacity(sp) for sp in need}
                budget["ub"] = int(budget["ub"] * ub_fraction)
                if any(need[sp] > budget[sp] for sp in need):
                    continue
                est = busiest(estimate(a, qb, kb, p, pp, target))
                if best is None or est < best.fused:
                    best = Choice(qb, kb, pp, need["ub"], est, apart)
                break
    if best is None:
        return why
    if best.fused >= apart:
        return (f"estimated {int(best.fused)} cycles fused against {int(apart)} apart "
                f"(projection kernel, then attention)")
    return best


