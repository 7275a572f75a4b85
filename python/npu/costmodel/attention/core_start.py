"""What a core's share of a split attention costs beyond its busiest pipe:
the start of each run of one head's rows (`npu-split-cores`'s grids and
flat runs), which the tile model (`npu.costmodel.attention.cost`, a
software pipeline in its steady state) leaves out.

A run of a head's query rows starts cold: its first scores need the
head's K loaded from GM (the GM latency and its bytes), laid out in L1
through UB when it is read as rows (`Attention.sources`), its first key
chunk in L0B and the first Q.K^T drained; the vector idles until then.
A grid's core runs its heads as one pipeline (the next head's K and V load
behind this head's steps): one start. A flat run's segments are separate
pipelines (`passes/lower_attention/flat_runs.py`): one start each.
Simulated, BERT's 12 heads at seq 512 on 32 cores (the attention alone,
`split-cores-grids=attention:...`): the vector's first work 2.5k to 2.7k
cycles into the phase, the crossing core's second segment idles 1.7k
more; without the start the model's core estimate was 1.9k (12 x 2) to
2.5k (flat runs) under the simulated phase.
"""

from __future__ import annotations

from dataclasses import replace

from npu import ir as nir
from npu.costmodel.attention import pattern as att
from npu.costmodel.attention import plan as cost
from npu.costmodel.attention.cost import TileCost, gm_loads
from npu.target import Target

FRACTAL_F16 = 16 * 16 * 2


def staged_f16(rows: int, d_blocks: int, target: Target, first: bool = False) -> bool:
    """Whether `rows` f16 rows of a head's `d_blocks` column blocks load
    through UB (one copy of a burst a row, laid out in L1 by MTE3) rather
    than straight to L1 (a burst per row and column block;
    `npu-lower-attention`'s operands read it here): when the bursts it saves
    take MTE2 longer than the GM latencies it adds. Its flag to MTE3 holds
    MTE2 until the tile lands: one latency, and a second for a `first` tile
    (Q), whose K queues behind it (`K_BEHIND_Q`) and would otherwise land
    under the same flag. BERT's 64-wide heads (4 column blocks): K and V of
    128 rows (seq 128, 384 cycles of bursts saved against 350) are staged,
    Q tiles of 64 or 128 rows (192, 384 against 700) are not, of 256 rows
    (768) they are."""
    saved = rows * (d_blocks - 1) * target.gm_burst_cycles
    return saved > target.path("gm_to_ub").latency * (2 if first else 1)


def load_cycles(a: att.Attention, rows: int, target: Target,
                first: bool = False) -> tuple[int, int]:
    """(MTE2, MTE3) cycles of `rows` rows of one head's Q, K or V as the
    kernel reads them (the tile model counts a burst per row and column
    block for every row load): f32 sources or f16 tiles `staged_f16` takes
    through UB (a burst a row, one when the heads are the sources'
    outer dim), smaller f16 tiles a burst per row and column block."""
    d = a.head_dim
    if a.sources is None:  # Nz fractals: a burst per fractal
        nbytes = rows * d * 2
        return int(nbytes / target.path("gm_to_l1").bytes_per_cycle) + nbytes // FRACTAL_F16, 0
    src = a.sources[1]
    es = nir.element_bytes(nir.memref_element(src))
    nbytes = rows * d * es
    gm = target.path("gm_to_l1").bytes_per_cycle
    if es == 2 and not staged_f16(rows, a.d_blocks, target, first):
        return int(nbytes / gm) + rows * a.d_blocks * target.gm_burst_cycles, 0
    shape = nir.memref_shape(src)  # head-major ([H, S, D], [H, D, S]): one run a head
    bursts = 1 if len(shape) == 3 and shape[1] * shape[2] == a.seq * d else rows
    layout = rows * d * 2 / target.path("ub_to_l1").bytes_per_cycle
    return int(nbytes / gm) + bursts * target.gm_burst_cycles, int(layout)


def start_cycles(a: att.Attention, q_blocks: int, k_blocks: int, target: Target) -> int:
    """Cycles from a head's run start to its first scores on the vector:
    K from GM (latency and bytes; through UB to L1 when read as rows), the
    first key chunk's K^T to L0B, the first Q.K^T and its drain's latency."""
    d1, s1 = a.d_blocks, a.seq_blocks
    k_load, k_layout = load_cycles(a, a.seq, target)
    cycles = target.path("gm_to_l1").latency + k_load
    if k_layout:  # K laid out in L1 by MTE3 from UB
        cycles += k_layout + target.path("ub_to_l1").latency
    chunk = cost.key_chunks(min(k_blocks, s1), d1, target)[0]
    to_b = target.path("l1_to_l0b")
    cycles += chunk * d1 * FRACTAL_F16 / to_b.bytes_per_cycle + to_b.latency
    cycles += target.cube_cycles(q_blocks * chunk * d1) + target.mad_latency
    cycles += target.path("l0c_to_ub").latency
    return int(cycles)


def pv_tail_cycles(a: att.Attention, q_blocks: int, k_blocks: int, target: Target) -> int:
    """A run's last P.V after its softmax, which no later step of the run
    hides: P to L0A, the mads and the context's drain."""
    d1, kb = a.d_blocks, min(k_blocks, a.seq_blocks)
    to_a, drain = target.path("l1_to_l0a"), target.path("l0c_to_ub")
    return int(q_blocks * kb * FRACTAL_F16 / to_a.bytes_per_cycle
               + target.cube_cycles(q_blocks * kb * (d1 + 1)) + target.mad_latency
               + (d1 + 1) * q_blocks * 256 * 4 / drain.bytes_per_cycle + drain.latency)


def last_step_cycles(a: att.Attention, q_blocks: int, k_blocks: int, target: Target) -> int:
    """Cycles from a run's last GM load landing (V, after K's run landed:
    a GM latency each) to its context in UB: V to L0B, then `pv_tail_cycles`."""
    d1, kb = a.d_blocks, min(k_blocks, a.seq_blocks)
    to_b = target.path("l1_to_l0b")
    return int(2 * target.path("gm_to_l1").latency
               + kb * (d1 + 1) * FRACTAL_F16 / to_b.bytes_per_cycle + to_b.latency
               + pv_tail_cycles(a, q_blocks, k_blocks, target))


def store_cycles(a: att.Attention, q_blocks: int, target: Target) -> int:
    """The last query tile's context to GM (its bytes and the latency)."""
    out = target.path("ub_to_gm")
    return int(q_blocks * a.d_blocks * FRACTAL_F16 / out.bytes_per_cycle + out.latency)


def _tile_loads(a: att.Attention, query_blocks: int, kv: int, target: Target) -> int:
    """The tile model's MTE2 cycles for a head's Q and `kv` times its K and
    V (`cost.tile_cost`'s loads), which `segment` replaces."""
    rows = a.sources is not None
    return gm_loads(query_blocks * a.d_blocks, rows, target) \
        + kv * gm_loads(2 * a.seq_blocks * a.d_blocks, rows, target)


def segment(c: TileCost, a: att.Attention, heads: int, query_blocks: int, q_blocks: int,
            k_blocks: int, target: Target, on_chip: bool = False) -> TileCost:
    """`c`, `heads` heads' runs of `query_blocks` (one core's share; K and V
    loaded once a head when they stay in L1, `plan.resident`, else once a
    query tile), started cold: MTE2 as the kernel loads (`load_cycles`),
    and the path: the vector after the start (`start_cycles`; the other
    pipes work through it), or MTE2's loads then the last step
    (`last_step_cycles`)."""
    if on_chip or c.mte2 == 0:
        mte2 = c.mte2
    else:
        q_tiles = -(-query_blocks // q_blocks)
        kv = 1 if cost.resident(a, q_blocks, k_blocks, target,
                                None if query_blocks == a.seq_blocks else query_blocks) \
            else q_tiles
        q_load = load_cycles(a, q_blocks * 16, target, first=True)[0]
        mte2 = heads * (q_tiles * q_load + kv * 2 * load_cycles(a, a.seq, target)[0])
        mte2 += c.mte2 - heads * _tile_loads(a, query_blocks, kv, target)
    c = replace(c, mte2=mte2)
    cold = start_cycles(a, q_blocks, k_blocks, target) + pv_tail_cycles(a, q_blocks, k_blocks,
                                                                        target)
    path = max(c.cycles, c.vector + heads * cold,
               c.mte2 + last_step_cycles(a, q_blocks, k_blocks, target))
    return replace(c, path=path)


def finished(c: TileCost, a: att.Attention, q_blocks: int, target: Target) -> TileCost:
    """`c` (its segments, `segment`) with the last context's store."""
    return replace(c, path=c.cycles + store_cycles(a, q_blocks, target))
