"""The modelled cycles of an attention tile plan (`npu.costmodel.attention.plan`): the
work of each pipe of `npu-lower-attention`'s kernel, from the target's
rates, for a tile of query rows x keys.

The kernel is vector-bound: per (query tile, key tile) step the scores'
drain, the row max, the shift and exp scale with the step's scores, but
an online softmax (several key tiles) also drains each step's partial P.V
and rescales the context (O = alpha O + P.V), and every step adds its
per-row work and the latencies of its dependent vector waves. So fewer key
tiles save vector work even when the query tiles shrink (whole-key tiles
fit L0C only with fewer query rows). Smaller query tiles load K^T and V to
L0B more often (MTE1), and K and V are reloaded from GM per query tile
unless they stay in L1 over a head's query tiles (`resident`).
"""

from __future__ import annotations

from dataclasses import dataclass

from npu.costmodel.attention import serial_steps
from npu.target import Target

# Vector cycles per step the work model does not count: the latencies of a
# step's chain of dependent vector waves (about 20, each ending at a
# pipe_barrier) and its waits on the cube and movers. Measured on the BERT
# layer (seq 384 and 512, f16 softmax): 300 to 490 idle vector cycles per
# step inside the kernel.
STEP_IDLE_CYCLES = 400


@dataclass(frozen=True)
class TileCost:
    """Modelled busy cycles of each pipe for all heads."""

    vector: int
    cube: int
    mte1: int
    mte2: int
    path: int = 0  # steps that cannot overlap, one after the other (`serial_steps`; 0: none)

    def __add__(self, other: "TileCost") -> "TileCost":
        return TileCost(self.vector + other.vector, self.cube + other.cube,
                        self.mte1 + other.mte1, self.mte2 + other.mte2, self.path + other.path)

    @property
    def cycles(self) -> int:
        """The pipes overlap (a software pipeline): the busiest one, or the
        steps' path when they cannot overlap."""
        return max(self.vector, self.cube, self.mte1, self.mte2, self.path)

    def text(self) -> str:
        steps = f", steps' path {self.path}" if self.path else ""
        return (f"{self.cycles} cycles (vector {self.vector}, cube {self.cube}, "
                f"L1->L0 {self.mte1}, GM->L1 {self.mte2}{steps})")


def mask_resident(seq_blocks: int, q_blocks: int, k_blocks: int, mask_bytes: int,
                  shared: bool = True) -> bool:
    """Whether `npu-lower-attention` keeps a whole mask of the scores in UB,
    made ready once (elements of `mask_bytes`: the softmax's precision),
    rather than reading each step's tile into two f32 slots: a mask shared
    by the heads (`shared`), with one tile a head or when the whole mask
    takes no more UB than the two slots."""
    whole = q_blocks >= seq_blocks and k_blocks >= seq_blocks
    return shared and (whole or seq_blocks ** 2 * mask_bytes <= 2 * q_blocks * k_blocks * 4)


def mask_rows_per_repeat(elem_bytes: int, row_blocks: int, t: Target) -> int:
    """Rows of a mask tile one vadd repeat reads into a key block's Nz slab
    (`ScoresMask.add_mask_tile`): eight f16 rows, each a block (a block
    stride of one row of the tile, `row_blocks`), while eight rows are
    within a repeat stride; else (and f32, two blocks a row) one."""
    return 8 if elem_bytes == 2 and 8 * row_blocks <= t.vector_max_stride else 1


def fold_across_cycles(rows: int, elem_bytes: int, t: Target) -> int:
    """Vector cycles of a row max's last step by a transpose and a halving
    tree (`npu-lower-attention`'s `fold_across`): the vnchwconv repeats,
    the tree's repeats and a vector latency per dependent step."""
    lanes = t.lanes(elem_bytes)
    transposes = (1 if elem_bytes == 2 else 2) * (rows // 16) * t.vnchwconv_cycles_per_repeat
    tree = sum(-(-width * rows // lanes) for width in (8, 4, 2, 1)) * t.vector_cycles("simple")
    return transposes + tree + 5 * t.vector_latency


def row_max_cycles(rows: int, elem_bytes: int, t: Target) -> int:
    """The cheaper of a vcmax repeat per row and `fold_across_cycles`."""
    return min(rows * t.vector_cycles("reduce"), fold_across_cycles(rows, elem_bytes, t))


def gm_loads(blocks: int, row_loads: bool, t: Target) -> int:
    """MTE2 cycles of `blocks` 16 x 16 f16 blocks from GM: their bytes, and a
    burst per 32-byte row piece when read as rows (`row_loads`), else a
    burst per block."""
    nbytes = blocks * 16 * 16 * 2
    bursts = nbytes // t.vector_block_bytes if row_loads else blocks
    return nbytes // t.path("gm_to_l1").bytes_per_cycle + bursts * t.gm_burst_cycles


def tile_cost(heads: int, seq_blocks: int, d_blocks: int, q_blocks: int, k_blocks: int,
              softmax: str, resident: bool, row_loads: bool, nz_out: bool,
              t: Target, on_chip: bool = False, guard: bool = False,
              key_mask: str = "", query_blocks: int | None = None,
              scores_mask: str = "", overlap: bool = False, path: bool = False) -> TileCost:
    """The pipes' cycles of `heads` heads of seq_blocks x seq_blocks scores
    in tiles of q_blocks x k_blocks (16-row blocks). `resident`: K and V are
    loaded once a head (else once per query tile); `row_loads`: Q, K, V are
    read as rows (one 32-byte burst per row and column block) rather than
    as fractals; `nz_out`: the context is cast to f16 on its way out;
    `on_chip`: the kernel makes Q, K and V itself (its projection,
    `npu.costmodel.attention.projection_plan`), so no GM loads; `guard`:
    P's NaN guard (`npu.costmodel.attention.guard`); `key_mask`: "before" or
    "after" the scale when the scores get a key mask, "" without one;
    `query_blocks`: the queries are a run of that many blocks (one core's
    share of a query cut, `npu-split-cores`), against all keys;
    `scores_mask`: "shared" or "head" (one per head) for a mask of the
    scores ([S, S]), "" without one: each step's tile read from GM in f32
    (a burst per row), clamped to the finite range (cast to f16 with the f16
    softmax) and added; or, kept whole in UB (`mask_resident`), read and made
    ready once for every head and step. `overlap`: every query tile has
    q_blocks, the last overlapping the one before
    (`npu.costmodel.attention.plan.overlapped`). `path`: the standalone
    kernel's in-order latencies, which the tiles' ranking leaves out: the
    steps' path when they cannot overlap (one key tile that
    `serial_steps.serial` finds too wide for two steps in L0B) and a GM
    latency per run of copies on MTE2."""
    s1, d1 = seq_blocks, d_blocks
    sq = s1 if query_blocks is None else query_blocks
    es = 2 if softmax == "f16" else 4
    frac2 = 16 * 16 * 2

    def repeats(elements: int, elem_bytes: int = 4) -> int:
        return -(-elements // t.lanes(elem_bytes))

    simple, fma = t.vector_cycles("simple"), t.vector_cycles("multiply_add")
    trans, conv = t.vector_cycles("transcendental"), t.vector_cycles("convert")
    drain_rate = t.path("l0c_to_ub").bytes_per_cycle
    q_tiles = [q_blocks if overlap else min(q_blocks, sq - x) for x in range(0, sq, q_blocks)]
    k_tiles = [min(k_blocks, s1 - y) for y in range(0, s1, k_blocks)]
    # The whole mask of the scores kept in UB: loaded and made ready once.
    once = bool(scores_mask) and mask_resident(s1, q_blocks, k_blocks, es,
                                               scores_mask == "shared")

    def ready(elements: int) -> int:
        """A mask tile made ready: clamped (f16: cast, then clamped both ways in f16)."""
        if es == 4:
            return repeats(elements) * simple
        return repeats(elements) * conv + 2 * repeats(elements, 2) * simple

    chained = (path and not on_chip and len(k_tiles) == 1 and len(q_tiles) > 1
               and serial_steps.serial(k_tiles[0], d1, t))
    vector = cube = mte1 = chain = 0
    for qb in q_tiles:
        rows = qb * 16
        slab = rows * 16
        for y, kb in enumerate(k_tiles):
            scores = slab * kb
            before = vector
            vector += scores * 4 // drain_rate  # the scores' drain (f32 read)
            vector += (kb - 1) * repeats(slab, es) * simple  # the row max's fold
            vector += row_max_cycles(rows, es, t)
            vector += kb * repeats(slab, es) * fma  # the scaled shift
            if es == 4:
                vector += repeats(scores) * conv  # P cast to f16
            vector += repeats(scores, 2) * trans  # exp
            vector += 8 * repeats(rows) * simple  # per-row steps (offsets, alpha)
            vector += rows // (32 // es) * t.vnchwconv_cycles_per_repeat  # the shift's broadcast
            pv_start = vector  # P.V's drain and the rescale: after the softmax
            vector += (d1 + 1) * slab * 4 // drain_rate  # P.V (and the sums) drained
            if y:
                vector += (d1 + 1) * repeats(slab) * fma  # O = alpha O + P.V
            pv = vector - pv_start
            if key_mask:  # one vadd per key slab (after the scale: the scores scaled first)
                vector += kb * repeats(slab, es) * simple
                vector += repeats(scores, es) * simple if key_mask == "after" else 0
            if scores_mask:  # the tile's vadds (and its clamp and cast, unless made once)
                row_blocks = (s1 if once else kb) * 16 * es // t.vector_block_bytes
                per = mask_rows_per_repeat(es, row_blocks, t)
                vector += kb * -(-rows // per) * simple + (0 if once else ready(scores))
            if guard:  # the rows' mask (vsub, vcmp) and one vsel over P
                vector += 2 * repeats(slab, es) * simple + repeats(scores, 2) * simple
            if chained:  # the step's softmax, before its P.V
                chain += serial_steps.step_chain(qb, kb, d1, vector - before - pv, resident,
                                                 row_loads, t)
            vector += STEP_IDLE_CYCLES
            cube += t.cube_cycles(qb * kb * (2 * d1 + 1))
            mte1 += (kb * (2 * d1 + 1) * frac2) // t.path("l1_to_l0b").bytes_per_cycle
            mte1 += (qb * kb * frac2) // t.path("l1_to_l0a").bytes_per_cycle
        mte1 += (qb * d1 * frac2) // t.path("l1_to_l0a").bytes_per_cycle
        vector += repeats(slab) * trans + d1 * repeats(slab) * (simple + (conv if nz_out else 0))
    gm = t.path("gm_to_l1").bytes_per_cycle
    mte2 = 0 if on_chip else gm_loads(sq * d1, row_loads, t) \
        + (1 if resident else len(q_tiles)) * gm_loads(2 * s1 * d1, row_loads, t)
    if path and not on_chip:
        # Each run of copies ends in a flag whose set waits for the run to
        # land, and MTE2 issues the next run after it: a GM latency a run.
        # One tile a head loads Q, K and V as one run (BERT seq 128: 2,654
        # cycles a head in the simulator, 2,304 of copies; 36,337 simulated
        # against 29,652 by the busiest pipe); else Q a query tile, and K
        # and V a key tile (once a head when `resident`).
        whole = len(q_tiles) == 1 and len(k_tiles) == 1
        runs = 1 if whole else len(q_tiles) * (1 + (0 if resident else 2 * len(k_tiles))) \
            + (2 if resident else 0)
        mte2 += runs * t.path("gm_to_l1").latency
    # The mask in f32: each head's steps' tiles (a burst per row), or the
    # whole mask once (a burst per 16 rows) and made ready once.
    once_mte2 = once_vector = 0
    if once:
        once_mte2 = s1 * s1 * 256 * 4 // gm + s1 * t.gm_burst_cycles
        once_vector = ready(s1 * s1 * 256)
    elif scores_mask:
        mte2 += sq * s1 * 256 * 4 // gm + sq * 16 * len(k_tiles) * t.gm_burst_cycles
    return TileCost(heads * vector + once_vector, heads * int(cube), heads * mte1,
                    heads * mte2 + once_mte2, int(heads * chain))
