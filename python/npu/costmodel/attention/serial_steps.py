"""The in-order path of a standalone attention kernel whose steps cannot
overlap (`npu.costmodel.attention.cost.tile_cost`'s `path`): what the busiest
pipe does not see.

A key tile that fits L0B in one chunk (`npu.costmodel.attention.plan.key_chunks`)
but whose K^T and V do not fit there twice leaves no room for the next
step's K^T while this step's V is in L0B, so the next Q.K^T waits for this
step's P.V, and with it the next step's loads (Q, and K unless it stays in
L1 for the head) wait for this step's P and V to reach L0: each step is
one chain, loads, Q.K^T, the softmax up to P in L1, P and V to L0. BERT
seq 208 (tile 112 x 208, K and V reloaded per query tile): the
simulator's step is 5,570 cycles from one P.V to the next (Q's copies
1,022, K's 1,598, K^T to L0B 124, Q.K^T 384, scores drained and softmax
with P to L1 2,196, P and V to L0 242), against 2,744 of the vector's
busy work; the kernel simulated 130,268 cycles against 74,880 estimated
by its busiest pipe. Seq 197 (K and V kept in L1): 104,071 against 65,856.
The chunked key tiles of seq 256 and 512 alternate two L0B buffers and
stay vector-bound (simulated 0.92 and 0.99 of the busiest pipe).
"""

from __future__ import annotations

from npu.target import Target

FRACTAL_F16 = 16 * 16 * 2


def serial(k_blocks: int, d_blocks: int, t: Target) -> bool:
    """Whether a key tile runs in one chunk on the cube (K^T and V fit L0B
    together) but two steps' K^T and V do not fit L0B at once."""
    per_key = (2 * d_blocks + 1) * FRACTAL_F16
    cap = t.capacity("l0b")
    return k_blocks * per_key <= cap < 2 * k_blocks * per_key


def gm_run(blocks: int, row_loads: bool, t: Target) -> float:
    """A run of GM -> L1 copies of `blocks` f16 fractals (a burst per row
    and column block when read as rows) with the GM latency: the step's
    next copies wait for its flag, which waits for the run to land."""
    gm = t.path("gm_to_l1")
    nbytes = blocks * FRACTAL_F16
    bursts = nbytes // t.vector_block_bytes if row_loads else blocks
    return nbytes / gm.bytes_per_cycle + bursts * t.gm_burst_cycles + gm.latency


def step_chain(q_blocks: int, k_blocks: int, d_blocks: int, softmax_cycles: float,
               resident: bool, row_loads: bool, t: Target) -> float:
    """Cycles from one step's P.V to the next's: the next step's Q (and K,
    unless `resident`) from GM, K^T to L0B, Q.K^T with the mad's latency,
    the scores' drain and softmax (`softmax_cycles`, the vector's work of
    the step before P.V), the last half of P to L1 (the first half's copy
    runs beside the exp of the second), P to L0A and V to L0B."""
    qb, kb, d1 = q_blocks, k_blocks, d_blocks
    to_a, to_b = t.path("l1_to_l0a"), t.path("l1_to_l0b")
    to_l1 = t.path("ub_to_l1")
    loads = gm_run(qb * d1, row_loads, t) + (0 if resident else gm_run(kb * d1, row_loads, t))
    k_t = kb * d1 * FRACTAL_F16 / to_b.bytes_per_cycle + to_b.latency
    qk = t.cube_cycles(qb * kb * d1) + t.mad_latency
    p_tail = qb * kb * FRACTAL_F16 / 2 / to_l1.bytes_per_cycle + to_l1.latency
    l0 = (qb * kb * FRACTAL_F16 / to_a.bytes_per_cycle
          + kb * (d1 + 1) * FRACTAL_F16 / to_b.bytes_per_cycle + to_b.latency)
    return loads + k_t + qk + softmax_cycles + p_tail + l0
