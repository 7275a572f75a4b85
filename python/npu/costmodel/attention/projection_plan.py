"""The cost model of `npu-fuse-attention-projection` (`choose`): every
attention tile npu-fuse-attention weighs and projection plan
(`candidates`) whose buffers fit on chip
(`npu.costmodel.attention.projection.footprint`), each pipe's busy cycles estimated
from the target's rates (`estimate`: the attention's by the one model of
`npu.costmodel.attention.cost`, with the softmax's precision, plus the projection's
own work), the least busiest pipe taken, against the projection's own
kernel followed by the attention at its own tile (the same model).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from npu import ir as nir
from npu.costmodel.attention import weight_ring
from npu.costmodel.attention.pattern import Attention
from npu.costmodel.attention.cost import STEP_IDLE_CYCLES, TileCost
from npu.costmodel.attention.plan import MAX_HEAD_STEPS, modelled, tile_shapes
from npu.costmodel.attention.projection import FRACTAL_F16, FRACTAL_F32, Projection, ProjPlan, footprint
from npu.costmodel.matmul.fitting import MatmulShape
from npu.costmodel.matmul.pipelined import Drain, store_cycles
from npu.costmodel.matmul.tiling import kernel_cycles
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


def projection_work(a: Attention, p: Projection, pp: ProjPlan, target: Target,
                    snake: bool = True) -> tuple[TileCost, float]:
    """The projection's own busy cycles per pipe inside the attention kernel
    at plan `pp`, for all heads, and the first head's projection (which no
    attention overlaps: `fill`). Cube: every head's C blocks and a mad's
    latency per L0 sub-step (each waits for its slot's release), plus the
    W copies each job waits for when the W slots hold only its own chunks,
    and with one C slot each piece's move out of L0C before the next job;
    GM -> L1: X once (resident) or in strips once a head (`snake`: but the
    two strips a head starts with, which the previous head left in L1), W's
    columns of a head once per row tile; L1 -> L0: X's sub-tiles once per
    job, W once per row tile; vector: the drains (L0C -> UB, f32 read) and the epilogue's
    members."""
    d1, h = a.d_blocks, a.heads
    gm = target.path("gm_to_l1").bytes_per_cycle
    to_a, to_b = (target.path(f"l1_to_l0{x}").bytes_per_cycle for x in "ab")
    jobs = pp.jobs_per_head(p.m1, d1)
    head_blocks = 3 * d1 * p.n1 * p.m1
    cube = h * head_blocks + h * jobs * (p.n1 // pp.sub) * target.mad_latency
    if pp.w_slots < 2 * p.n1 // pp.chunk:
        # No room for the next job's W chunks while this one's are read:
        # each job's mads wait for its own copies.
        cube += h * jobs * pp.cols * p.n1 * FRACTAL_F16 / gm
    if pp.c_slots == 1:
        # One C piece in L0C: each job's first mad waits until the vector
        # unit has moved the previous piece out (L0C -> UB), at the least.
        drain = target.path("l0c_to_ub")
        piece = pp.rows * pp.cols * FRACTAL_F32
        cube += h * jobs * (piece / drain.bytes_per_cycle + drain.latency)
    x_bytes = p.n1 * p.m1 * FRACTAL_F16
    w_bytes = 3 * d1 * p.n1 * FRACTAL_F16
    rows = pp.row_tiles(p.m1)
    mte2 = gm_read_bytes(a, p, pp, snake) / gm
    mte1 = h * (jobs * pp.rows * p.n1 * FRACTAL_F16 / to_a + rows * w_bytes / to_b)
    vector = (h * 3 * d1 * p.m1 * FRACTAL_F32 / target.path("l0c_to_ub").bytes_per_cycle
              + p.vector_cycles * 3 * d1 * h / p.c_blocks)
    work = TileCost(int(vector), int(cube), int(mte1), int(mte2))
    return work, max(head_blocks, (x_bytes + w_bytes) / gm)


def gm_read_bytes(a: Attention, p: Projection, pp: ProjPlan, snake: bool) -> int:
    """The projection's GM reads in the kernel: X once (resident), or once
    a head in row strips (`snake`: the first head all of them, the others
    all but the two they start with: `npu-lower-attention`'s `row_of`),
    and each head's W columns once per row tile."""
    x_bytes = p.n1 * p.m1 * FRACTAL_F16
    rows = pp.row_tiles(p.m1)
    strips = rows * (1 if pp.x_resident else a.heads)
    if snake and not pp.x_resident:
        strips -= (a.heads - 1) * min(rows, 2)
    return (x_bytes * strips // rows
            + 3 * a.d_blocks * p.n1 * FRACTAL_F16 * a.heads * rows)


def v_jobs_overlap(a: Attention, p: Projection, pp: ProjPlan, target: Target) -> bool:
    """Whether npu-lower-attention runs the last head's V jobs after its
    Q.K^T (one tile a head, `head-scope`): their cube work, which its
    softmax then overlaps, exceeds what they then add after the softmax
    (their drains L0C -> UB with the epilogue, UB -> L1, V's tile -> L0B)."""
    d1 = a.d_blocks
    jobs = pp.row_tiles(p.m1) * (d1 // pp.cols)
    cube = target.cube_cycles(p.m1 * p.n1 * d1) + jobs * (p.n1 // pp.sub) * target.mad_latency
    paths = [(target.path("l0c_to_ub"), p.m1 * d1 * FRACTAL_F32),
             (target.path("ub_to_l1"), p.m1 * d1 * FRACTAL_F16),
             (target.path("l1_to_l0b"), a.seq_blocks * (d1 + 1) * FRACTAL_F16)]
    after = (sum(nbytes / path.bytes_per_cycle + path.latency for path, nbytes in paths)
             + p.vector_cycles * d1 / p.c_blocks)
    return cube > after


def overlapped(a: Attention, qb: int, kb: int) -> bool:
    """Whether npu-lower-attention overlaps a head's projection with the
    previous head's attention at tile qb x kb: one tile a head
    (`head_pipeline`) or query tiles that divide the sequence
    (`head_tiles`); otherwise each head is projected before its query
    tiles (`projected_heads`), in one pipe queue after the other."""
    s1 = a.seq_blocks
    return (qb >= s1 and kb >= s1) or s1 % qb == 0


def estimate(a: Attention, qb: int, kb: int, p: Projection, pp: ProjPlan, target: Target,
             softmax: str, attention: TileCost | None = None, steps: bool = True
             ) -> tuple[TileCost, float]:
    """Busy cycles per pipe of the attention kernel at tile qb x kb with the
    projection at plan `pp`, and the estimated time: the attention's own
    work by the shared model (`npu.costmodel.attention.plan.modelled` with the
    softmax's precision, Q, K, V on chip; `attention` when the caller has
    it) plus `projection_work`; the time is the busiest pipe of the sum
    (with query tiles a head, the cube's is the steps' path,
    `weight_ring.cube_path`) plus the first head's projection, or (not
    `overlapped`) the two one after the other. `steps` = False: without the steps' floor of the
    vector's work (`weight_ring.cube_path`), the busiest pipes (`choose`'s
    remark)."""
    if attention is None:
        attention = modelled(a, qb, kb, target, softmax, on_chip=True)
    work, fill = projection_work(a, p, pp, target, overlapped(a, qb, kb))
    total = attention + work
    s1 = a.seq_blocks
    if overlapped(a, qb, kb) and not (qb >= s1 and kb >= s1):
        # `head_tiles`: the cube's path with the waits for the W chunks
        # that MTE1's in-order queue passes on to the attention's work
        # (`weight_ring`; BERT seq 256: 160,512 -> 187,145 cycles estimated,
        # 218,899 simulated).
        # Each step's attention mads wait for their chunks' L1 -> L0 loads
        # and carry the mad's latency (`weight_ring.step_path`; seq 256,
        # tile 32 x 256: 160,512 -> 165,349 cycles estimated, 207,826
        # simulated).
        per_head = s1 // qb * -(-s1 // kb)
        step = max(max(attention.cube, attention.mte1) / (a.heads * per_head),
                   weight_ring.step_path(s1, a.d_blocks, qb, kb, target))
        # A step takes at least its share of the vector's busy work (the
        # attention's without the idle cycles `tile_cost` adds a step for
        # its waits on the cube, which the path itself now has, and the
        # drains of the jobs), so the path is the sum of each step's longer
        # side rather than the longer of the two sums (seq 208: 148,752 ->
        # 169,391 cycles estimated, and pieces of 208 x 32 taken instead of
        # 208 x 64: 180,952 -> 175,111 simulated).
        n = a.heads * per_head
        vector_step = (attention.vector - n * STEP_IDLE_CYCLES + work.vector) / n if steps else 0
        path = weight_ring.cube_path(a.heads, per_head, p, pp, a.d_blocks, step, target,
                                     vector_step)
        total = replace(total, cube=max(total.cube, int(path)))
    if overlapped(a, qb, kb):
        return total, total.cycles + fill
    return total, attention.cycles + work.cycles


def projection_cycles(p: Projection, target: Target) -> float:
    """The projection as its own kernel: npu-lower-matmul's pipelined
    schedule with the epilogue on its drains and Q, K, V stored row-major
    (`kernel_cycles`, the figure npu-fuse gives the epilogue group). Its
    cube work or its A and B traffic, the larger, left out the fill, the
    latencies and the stores: BERT seq 208 89,856 against 105,462 (the
    kernel simulates about 133,000 from its first mad)."""
    frac = target.fractal
    c_bytes = nir.element_bytes(nir.memref_element(p.matmul.operands[-1]))
    shape = MatmulShape(p.m1 * frac, p.n1 * frac, p.c_blocks * frac, out_bytes=c_bytes)
    stores = store_cycles(target, shape.M * shape.K, 2, frac)  # Q, K, V: f16 rows
    return kernel_cycles(shape, target, Drain(p.vector_cycles, stores, True, landing=2))


@dataclass(frozen=True)
class Choice:
    """`choose`'s pick: the attention tile with the projection's plan, the
    estimated cycles fused (`cost`: each pipe's, `fused`: the busiest plus
    the first head's projection; `busiest`: without the steps' floor) and
    apart, and why the tile the attention
    has apart was not kept (`apart_why`, None when it was)."""

    qb: int
    kb: int
    plan: ProjPlan
    ub_bytes: int
    fused: float
    apart: float
    cost: TileCost | None = None
    apart_why: str | None = None
    busiest: float = 0.0  # `fused` by the busiest pipes (`estimate`'s steps=False)


def choose(a: Attention, p: Projection, target: Target, ub_fraction: float,
           apart_tile: tuple[int, int], footprint_of, softmax: str = "f32") -> Choice | str:
    """The attention tile (`npu.costmodel.attention.plan.tile_shapes`, the tiles
    npu-fuse-attention's cost model weighs) and projection plan that fit
    on chip with the least estimated time (`estimate`), against the
    projection's own kernel plus the attention at `apart_tile` (its own
    plan, by the same model of the attention with its steps' path:
    `modelled`); a string says why none is taken.
    `footprint_of(qb, kb)`: the attention's own footprint at that tile
    (None: it does not fit by itself)."""
    # Apart, the attention's first loads wait for the projection's last
    # stores: a GM write and read latency between the two kernels.
    boundary = target.path("ub_to_gm").latency + target.path("gm_to_l1").latency
    # The attention apart with its steps' path (`serial_steps`: at seq 208
    # its steps cannot overlap, 130,268 cycles simulated, 126,228 estimated,
    # 74,880 by the busiest pipe).
    apart = (projection_cycles(p, target) + boundary
             + modelled(a, *apart_tile, target, softmax, path=True).cycles)
    best: Choice | None = None
    why = "no tile of the attention leaves room on chip for one C piece of the projection"
    # Why the apart tile is not kept: the least overflow of its plans, or
    # its best estimate.
    apart_over: tuple[float, str] | None = None
    apart_best: float | None = None
    s1 = a.seq_blocks
    plans = candidates(a, p)
    for qb, kb in tile_shapes(s1):
        own = footprint_of(qb, kb)
        if own is None:
            continue
        steps = -(-s1 // qb) * -(-s1 // kb)
        if s1 > qb and s1 % qb == 0 and steps > MAX_HEAD_STEPS:
            why = f"a head has more tiles ({steps}) than one static pipeline holds"
            if (qb, kb) == apart_tile:
                apart_over = (0.0, f"{steps} tiles a head, more than one static pipeline holds "
                                   f"({MAX_HEAD_STEPS})")
            continue
        whole = qb >= s1 and kb >= s1
        attention = modelled(a, qb, kb, target, softmax, on_chip=True)
        for group in plans:
            if group[0].scores_slots == 1 and not whole:
                continue  # see `ProjPlan`: only a head's jobs may sit between Q.K^T and the softmax
            for pp in group:
                need = footprint(a, qb, kb, p, pp, own)
                budget = {sp: target.capacity(sp) for sp in need}
                budget["ub"] = int(budget["ub"] * ub_fraction)
                over = [sp for sp in need if need[sp] > budget[sp]]
                if over:
                    if (qb, kb) == apart_tile:
                        worst = max(over, key=lambda sp: need[sp] / budget[sp])
                        ratio = need[worst] / budget[worst]
                        if apart_over is None or ratio < apart_over[0]:
                            apart_over = (ratio, f"needs {need[worst]} bytes of "
                                                 f"{worst.upper()} beside the projection's "
                                                 f"buffers, more than {budget[worst]}")
                    continue
                cost, est = estimate(a, qb, kb, p, pp, target, softmax, attention)
                if (qb, kb) == apart_tile and (apart_best is None or est < apart_best):
                    apart_best = est
                if best is None or est < best.fused:
                    best = Choice(qb, kb, pp, need["ub"], est, apart, cost)
                break
    if best is None:
        return why
    # Fused against apart, each with its path: the attention apart has its
    # steps' path (`serial_steps`), so the whole estimate of the fused
    # kernel is weighed (before, the busiest pipes of both: apart at seq 208
    # was 165,436 estimated against 283,687 simulated, and the fused path
    # against it kept the kernels apart where they are slower, as the
    # reverted cfe2815 did: BERT-base layer seq 208 630,731 -> 718,890).
    _, busiest = estimate(a, best.qb, best.kb, p, best.plan, target, softmax, steps=False)
    best = replace(best, busiest=busiest)
    if best.fused >= apart:
        return (f"estimated {int(best.fused)} cycles fused ({int(busiest)} by the busiest "
                f"pipes) against {int(apart)} apart (projection kernel, then attention)")
    if (best.qb, best.kb) != apart_tile:
        if apart_best is not None:
            reason = f"estimated {int(apart_best)} cycles with the projection"
        else:
            reason = apart_over[1] if apart_over else "no plan of the projection fits beside it"
        best = replace(best, apart_why=reason)
    return best
