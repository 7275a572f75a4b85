"""The projection's W chunks as a ring of L1 slots feeding an in-order
cube path (`npu-lower-attention`'s `head_tiles` schedule with its
projection, `SpreadJobs`): what a busiest-pipe model cannot see.

Head h+1's jobs are spread over head h's steps (`spread`); the W copies
of a step's jobs are one run in MTE2's queue, emitted after the previous
step's mads, whose one flag (npu-insert-sync sets it after the run) the
step's first job waits for. A job's copy waits for the slots it reuses,
which the job `w_slots / chunks` before it frees once MTE1 has loaded its
last sub-step. MTE1 feeds the cube in program order: while a job's first
sub-step waits for its W chunks, the attention's loads behind it wait
too, so the cube idles instead of doing the attention's work.

`cube_path` replays that ring step by step (each pipe's queue in order,
job by job): on the BERT layer at seq 256 (tile 64 x 256, two jobs a
step, slots for two) the cube path is 2,598 cycles a job in the
simulator, against 2,080 of cube work, because a step's copies (3,072
cycles) and the GM latency sit between one job's slot release and the
next step's first mad.

`step_path` is the attention's own part of a step on that path: its
Q.K^T and P.V mads in chunks of keys, each waiting for its chunk's L1 ->
L0 loads and carrying the mad's latency, which the busy cycles of the
attention's model (`npu.costmodel.attention.cost.tile_cost`) do not count.
"""

from __future__ import annotations

from npu.costmodel.attention.plan import key_chunks
from npu.costmodel.attention.projection import FRACTAL_F16, Projection, ProjPlan
from npu.target import Target


def spread(jobs: int, per_head: int, c_slots: int) -> tuple[dict[int, list[int]], bool]:
    """(step -> the jobs of the next head it carries, deferred drains):
    `SpreadJobs`'s placement. With four steps a head or more, the jobs end
    at the third last step and each drain comes two steps after its mads
    when the L0C pieces hold three steps' jobs; else they span the steps
    after the first."""

    def over(steps: int) -> dict[int, list[int]]:
        return {j: [i for i in range(jobs) if 1 + i * steps // jobs == j]
                for j in range(per_head)}

    def most(at: dict[int, list[int]], span: int) -> int:
        return max(sum(len(at.get(j + d, [])) for d in range(span)) for j in at)

    at = over(per_head - 3) if per_head >= 4 else {}
    deferred = bool(at) and most(at, 3) <= c_slots
    if not deferred:
        at = over(per_head - 1)
    return at, deferred


def copies_ahead(at: dict[int, list[int]], chunks: int, w_slots: int) -> bool:
    """Whether a step's copies come a step ahead of its jobs (the W slots
    hold the busiest step's chunks), rather than right before each job."""
    return max(len(v) for v in at.values()) * chunks <= w_slots


def step_path(seq_blocks: int, d_blocks: int, q_blocks: int, k_blocks: int,
              target: Target) -> float:
    """Cycles of one (query tile, key tile) step's attention mads on the
    cube's in-order path, averaged over a head's key tiles: per chunk of
    keys (`key_chunks`) Q.K^T then P.V, each mad after its chunk's L1 ->
    L0 loads (K^T's d rows of the chunk to L0B; V's d+1 rows to L0B and P's
    query rows to L0A; two buffers each, so a chunk's loads run beside the
    mad before and wait for the one two before) plus the mad's latency; a
    first chunk's loads run beside the jobs' mads. BERT seq 256 (tile 32 x
    256, three chunks of 96, 80, 80 keys): 428 cycles against 288 of mads;
    the simulator's steps take 422-432 from the first Q.K^T to the last P.V."""
    d1, qb = d_blocks, q_blocks
    to_a, to_b = target.path("l1_to_l0a"), target.path("l1_to_l0b")
    latency = max(target.mad_latency, to_a.latency, to_b.latency)
    tiles = [min(k_blocks, seq_blocks - y) for y in range(0, seq_blocks, k_blocks)]
    total = 0.0
    for kb in tiles:
        for mad_rows, b_rows, a_rows in ((d1, d1, 0), (d1 + 1, d1 + 1, qb)):
            for i, c in enumerate(key_chunks(kb, d1, target)):
                mad = target.cube_cycles(qb * mad_rows * c)
                load = (b_rows * c * FRACTAL_F16 / to_b.bytes_per_cycle
                        + a_rows * c * FRACTAL_F16 / to_a.bytes_per_cycle)
                total += (mad if i == 0 else max(mad, load)) + latency
    return total / len(tiles)


def cube_path(heads: int, per_head: int, p: Projection, pp: ProjPlan, d_blocks: int,
              attention_step: float, target: Target, vector_step: float = 0.0) -> float:
    """Cycles of the in-order cube path of `heads` heads of `per_head`
    steps: each step's attention work on the cube (`attention_step`, its
    mads or their L1 -> L0 loads, the larger) and the next head's jobs it
    carries, each job waiting for its W chunks; the first head's jobs (the
    prologue) are the caller's fill. MTE2 copies a step's jobs one after
    the other (with their share of X's strips, streamed), each once the
    job that held its slots has loaded its last sub-step. A step takes at
    least `vector_step` (its share of the vector's work): the scores have
    two L0C slots, so the vector unit's softmax of a step cannot run ahead
    of the cube by more than a step, nor the cube ahead of it; a step that
    carries jobs is the cube's, one without them the vector's (BERT seq
    208: 3 steps of 13 a head carry a job of 2,736 cycles of mads, the
    other 10 take the vector's 486; the simulator's head takes 14,380)."""
    jobs = pp.jobs_per_head(p.m1, d_blocks)
    chunks = p.n1 // pp.chunk
    at, _ = spread(jobs, per_head, pp.c_slots)
    ahead = copies_ahead(at, chunks, pp.w_slots)
    depth = max(1, pp.w_slots // chunks)  # jobs whose chunks the slots hold
    gm = target.path("gm_to_l1")
    copy = pp.cols * p.n1 * FRACTAL_F16 / gm.bytes_per_cycle
    if not pp.x_resident:  # the next row tile's strip, in pieces after the jobs' mads
        strips = pp.row_tiles(p.m1) - min(pp.row_tiles(p.m1), 2)
        copy += strips * p.n1 * pp.rows * FRACTAL_F16 / gm.bytes_per_cycle / jobs
    sub_mad = target.cube_cycles(pp.rows * pp.cols * pp.sub) + target.mad_latency
    mads = (p.n1 // pp.sub) * sub_mad
    hold = mads - sub_mad  # from a job's first mad until MTE1 has loaded its last sub-step
    # MTE1 loads a job's first sub-step (X's and W's sub-tiles) once its
    # chunks have landed, and only then may its first mad start.
    first_load = sum(nbytes / target.path(name).bytes_per_cycle + target.path(name).latency
                     for name, nbytes in (("l1_to_l0a", pp.rows * pp.sub * FRACTAL_F16),
                                          ("l1_to_l0b", pp.sub * pp.cols * FRACTAL_F16)))
    latency = gm.latency + 2 * target.flag_latency
    cube = mte2 = 0.0
    released: dict[int, float] = {}  # job of the sequence (h * jobs + k) -> its slots free
    arrive: dict[tuple[int, int], float] = {}

    def copy_run(h: int, ks: list[int]) -> None:
        nonlocal mte2
        for k in ks:
            reused = h * jobs + k - depth
            mte2 = max(mte2, released.get(reused, 0.0)) + copy
        for k in ks:
            arrive[(h, k)] = mte2 + latency

    for h in range(heads - 1):  # head h's steps carry head h+1's jobs
        for j in range(per_head):
            begin = cube
            if not ahead:  # each job's copies right before its mads
                for k in at.get(j, []):
                    copy_run(h + 1, [k])
            for k in at.get(j, []):
                start = max(cube, arrive.get((h + 1, k), 0.0) + target.flag_latency + first_load)
                released[(h + 1) * jobs + k] = start + hold
                cube = start + mads
            cube = max(cube + attention_step, begin + vector_step)
            if ahead:
                copy_run(h + 1, at.get(j + 1, []) if j + 1 < per_head else [])
    # The last head's steps carry no jobs.
    return cube + per_head * max(attention_step, vector_step)
