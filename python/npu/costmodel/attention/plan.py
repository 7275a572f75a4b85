"""The cost model of `npu-fuse-attention`: the tile of query rows x keys one
head is computed in, what it needs on chip, and the GM bytes it moves.

A key tile covering all keys keeps one head's scores of the query tile on
chip at once; otherwise the keys are streamed in tiles with a running row
max and sum (online softmax) and the partial context rescaled. Tiles are
ranked by their modelled cycles (`npu.costmodel.attention.cost`); a key tile whose
K^T and V do not fit L0B together runs on the cube in chunks of keys.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from npu import ir as nir
from npu.costmodel.attention.pattern import Attention, drop_casts, drop_prologues
from npu.costmodel.attention.cost import TileCost, mask_resident, tile_cost
from npu.target import Target

# UB share of one tile's buffers by `footprint` (the rest: granule rounding
# and room for the memory planner's pipe-aware placement).
ATTENTION_UB_FRACTION = 0.94
# Largest query tile in 16-row blocks: a vcmax/vcadd repeat per row (<= 255).
MAX_Q_BLOCKS = 8
# Most (query, key) tiles of a head `npu-lower-attention` emits as static
# steps of one pipeline over the heads; with more, each head is a pipeline
# whose middle query tiles loop, so the kernel's size stays bounded.
MAX_HEAD_STEPS = 32


@dataclass(frozen=True)
class Plan:
    """Tile sizes in 16-row / 16-key blocks, what one tile needs on chip and
    (ranked by cost) its modelled cycles."""

    q_blocks: int
    k_blocks: int
    ub_bytes: int
    cost: TileCost | None = None

    def online(self, seq_blocks: int) -> bool:
        return self.k_blocks < seq_blocks


def key_chunks(k_blocks: int, d_blocks: int, target: Target) -> list[int]:
    """The key blocks of a key tile's chunks on the cube: the whole tile when
    its K^T (d_blocks per key block) and V (d_blocks + 1: the ones column)
    fit L0B together, else the fewest chunks, as even as possible (the
    wider first), of which two of K^T and two of V fit (each alternates
    between two buffers: one loads while the other is multiplied)."""
    per_key = (2 * d_blocks + 1) * 16 * 16 * 2
    whole = target.capacity("l0b") // per_key
    if k_blocks <= whole:
        return [k_blocks]
    n = -(-k_blocks // max(1, whole // 2))
    base, wider = divmod(k_blocks, n)
    return [base + 1] * wider + [base] * (n - wider)


def footprint(q_blocks: int, k_blocks: int, d_blocks: int, absorbed: bool = False,
              whole: bool = False, nz_out: bool = False,
              target: Target | None = None, guard: bool = False,
              mask_blocks: int = 0, mask_bytes: int = 0,
              seq_blocks: int = 0, mask_shared: bool = True,
              mask_realigned: bool = False) -> dict[str, int]:
    """Bytes per on-chip buffer of one tile (`npu-lower-attention`'s
    buffers). UB: what lives through the tile (the context with its row-sum
    slab, the row max; `whole` and `absorbed`: the f32 staging of Q and K,
    kept for all heads; `nz_out` with several tiles per head: the f16 context slabs on their
    way to the Nz output, apart from the steps' buffers so that the next
    scores never wait for their stores) plus the largest of its phases: the
    f32 -> f16 staging of a Q, K or V tile (`absorbed`; `whole`: only the
    f16 copy), the scores phase (scores, P, the row fold, the key mask and
    two broadcasts) and the P.V phase. P.V has one more column block (ones: the
    row sums). The scores and P.V in L0C and V's tile in L1 have two slots
    (the software pipeline of `npu-lower-attention`); `whole`: one tile per
    head (all queries and keys), Q's and K's L1 tiles in two slots too. With
    `target`, a key tile whose K^T and V do not fit L0B together holds two
    chunks of each in L0B and two of P in L0A (`key_chunks`). `guard`: the
    buffers of P's NaN guard (`npu.costmodel.attention.guard`); `mask_blocks`:
    the key blocks of a key mask (`npu.costmodel.attention.key_mask`),
    `mask_realigned`: a mask's row ends inside a 32-byte block (the last
    values' realignment buffers);
    `mask_bytes`: a mask of the scores of `seq_blocks` blocks, added in
    elements of that size (the softmax's precision; 0: none): two f32 slots
    of its tile (each step's loaded a step ahead) live through the tile and
    the scores phase holds its f16 copy, or the whole mask is kept ready
    (`mask_resident`: shared by the heads, `mask_shared`; in f16 through an
    f32 staging of 16 rows)."""
    frac4, frac2 = 16 * 16 * 4, 16 * 16 * 2
    slab = q_blocks * frac4  # one [rows, 16] f32 slab
    rows = q_blocks * 16
    persistent = (d_blocks + 1) * slab + 8 * rows * 4
    if nz_out and not whole:
        persistent += d_blocks * rows * 16 * 2
    scores = k_blocks * slab + k_blocks * q_blocks * frac2 + 4 * slab
    if mask_bytes and mask_resident(seq_blocks, q_blocks, k_blocks, mask_bytes, mask_shared):
        persistent += seq_blocks ** 2 * 256 * mask_bytes + (mask_bytes == 2) * seq_blocks * 1024
    elif mask_bytes:
        persistent += 2 * k_blocks * slab
        scores += (mask_bytes == 2) * k_blocks * q_blocks * frac2
    staging = max(q_blocks, k_blocks) * d_blocks * 16 * 16 * 6 if absorbed else 0
    if whole and absorbed:
        persistent += 2 * rows * d_blocks * 16 * 4
        staging = rows * d_blocks * 16 * 2
    if guard:  # P's NaN guard: a slab of max - max, its i8 mask, the row flags, a zero block
        persistent += slab + rows * 16 + rows * 5 + 32
    # A key mask of `mask_blocks` key blocks: its f32 values and, per key
    # block, one repeat of them over four rows (f32) or one block (f16).
    persistent += mask_blocks * (16 * 4 + 4 * 16 * 4)
    if mask_realigned:  # (`load_tail`) a staged block, 8 expanded, 16 assembled, 6 compacted
        persistent += (1 + 8 + 16 + 6) * 32
    ub = persistent + max(scores, staging, (d_blocks + 2) * slab, k_blocks * frac2)
    chunks = [k_blocks] if target is None else key_chunks(k_blocks, d_blocks, target)
    on_l0 = k_blocks if len(chunks) == 1 else 2 * chunks[0]
    return {"ub": ub,
            "l0a": (d_blocks + on_l0) * q_blocks * frac2,
            "l0b": on_l0 * (2 * d_blocks + 1) * frac2,  # K^T and V with its ones
            "l0c": 2 * (k_blocks + d_blocks + 1) * slab,
            "l1": (d_blocks * q_blocks + k_blocks * (3 * d_blocks + 2) + k_blocks * q_blocks
                   + whole * d_blocks * (q_blocks + k_blocks)) * frac2}


def plan(a: Attention, target: Target, ub_fraction: float, softmax: str = "f32",
         tile: str = "cost") -> Plan | str:
    """The tile (query rows x keys) that fits on chip with the fewest
    modelled cycles (`npu.costmodel.attention.cost`, with the softmax's precision),
    among query tiles of 1 to MAX_Q_BLOCKS blocks and key tiles that split
    the keys evenly; a key tile whose K^T and V do not fit L0B together
    runs on the cube in chunks (`key_chunks`). `tile` = "fewest": the
    planner of before, whole key tiles in L0B, the fewest tiles per head,
    then query tiles that divide the sequence (every query tile alike:
    `npu-lower-attention` pipelines across them), then the largest; among
    equals the taller query tile (fewer K/V reloads). A key tile of all
    keys keeps the scores on chip; a smaller one streams them (online
    softmax).

    Absorbed casts (f32 Q, K, V loaded and cast per tile) pay off only when a
    head has one query tile: with more, K and V would be reloaded in f32 and
    re-cast per query tile, so the casts are left out (once over GM) and the
    tile planned again; the fractalizes stay (the loads lay the f16 rows
    out as fractals on their way to L1). At a seq of partial 16-row blocks
    the casts stay instead when K and V then fit L1 for all of a head's
    query tiles (`resident`: cast once a head; tiles that do not divide the
    sequence `overlapped`); else the fractalizes go too: the kernel
    zeroes the padding rows in UB, which f16 rows copied straight to L1
    never pass through. Measured (12 heads of 64 at seq 200, f32 softmax,
    one core): 238,979 cycles with the casts and fractalizes apart (169,923
    at seq 208, casts apart); staged with K and V reloaded and cast per
    query tile (tiles of 112 and 88 rows), 216,316."""
    chosen = _plan(a, target, ub_fraction, softmax, tile)
    if a.staged and a.seq % 16 and not isinstance(chosen, str) \
            and resident(a, chosen.q_blocks, chosen.k_blocks, target):
        return chosen
    if a.staged and (isinstance(chosen, str) or chosen.q_blocks < a.seq_blocks):
        if a.seq % 16:
            drop_prologues(a)
        else:
            drop_casts(a)
        chosen = _plan(a, target, ub_fraction, softmax, tile)
    if a.sources is not None and isinstance(chosen, str):
        drop_prologues(a)
        chosen = _plan(a, target, ub_fraction, softmax, tile)
    return chosen


def _plan(a: Attention, target: Target, ub_fraction: float, softmax: str,
          tile: str) -> Plan | str:
    s1, d1 = a.seq_blocks, a.d_blocks
    by_cost = tile == "cost"
    best: Plan | None = None
    for qb in range(min(s1, MAX_Q_BLOCKS), 0, -1):
        # Cost: key tiles that split the keys evenly (`key_widths`); fewest:
        # the widest that fits.
        widths = key_widths(s1) if by_cost else range(s1, 0, -1)
        for kb in widths:
            whole = qb >= s1 and kb >= s1
            need = footprint(qb, kb, d1, a.staged, whole, a.nz_out, target if by_cost else None,
                             a.guard, **mask_room(a, softmax))
            budget = {sp: target.capacity(sp) for sp in need}
            budget["ub"] = int(budget["ub"] * ub_fraction)
            if not all(need[sp] <= budget[sp] for sp in need):
                continue
            if not by_cost:
                found = Plan(qb, kb, need["ub"])
                if best is None or _rank(found, s1) < _rank(best, s1):
                    best = found
                break
            found = Plan(qb, kb, need["ub"], modelled(a, qb, kb, target, softmax))
            if best is None or _by_cost(a, found, target) < _by_cost(a, best, target):
                best = found
    if best is not None and by_cost:
        # The tiles are ranked by their busiest pipes, the estimate is the
        # chosen one's with the steps' path (`serial_steps`): ranked by it,
        # BERT seq 208 takes 128 x 112 in two key tiles over 112 x 208,
        # whose chain of row loads on MTE2 the model does not have (130,268
        # -> 153,088 cycles simulated, estimated 86,784).
        best = replace(best, cost=modelled(a, best.q_blocks, best.k_blocks, target, softmax,
                                           path=True))
    if best is None:
        need = footprint(1, 1, d1, a.staged)
        return (f"one tile of 16 queries x 16 keys with head dim {a.head_dim} needs "
                f"{need['ub']} bytes of UB, more than {ub_fraction:g} of "
                f"{target.capacity('ub')}")
    return best


def _by_cost(a: Attention, p: Plan, target: Target) -> tuple:
    """The cost plans' order: the busiest pipe, then `_rank`. With K read as
    its projection's Nz (`k_rows`, passes/attention_nz.py) tiles that keep
    K and V in L1 (or load them once: one query tile) come first: reloaded
    per query tile, they are MTE2 work
    the model overlaps with the vector's, and the simulator does not when
    both are near full (BERT seq 512 on 2 cores, six heads a core in tiles
    of 48 rows: vector 147k, MTE2 142k, the attention's phase 245k against
    173k in resident tiles of 32 rows)."""
    reloads = (a.k_rows is not None and p.q_blocks < a.seq_blocks
               and not resident(a, p.q_blocks, p.k_blocks, target))
    return reloads, p.cost.cycles, _rank(p, a.seq_blocks)


def mask_room(a: Attention, softmax: str) -> dict:
    """`footprint`'s arguments for the attention's masks, so that the plan,
    the projection's plan and the kernel's own check count them alike: the
    key mask's key blocks, and for a mask of the scores the bytes of an
    element as the softmax adds it (0: none), the seq and whether it is
    shared by the heads."""
    realigned = (a.mask_blocks > 0 or a.scores_mask) and a.seq % 8 > 0
    return {"mask_blocks": a.mask_blocks, "mask_realigned": realigned,
            "mask_bytes": (2 if softmax == "f16" else 4) if a.scores_mask else 0,
            "seq_blocks": a.seq_blocks, "mask_shared": not a.bias_per_head}


def key_widths(seq_blocks: int) -> list[int]:
    """Key tiles (in blocks) that split the keys evenly, n tiles of
    ceil(seq_blocks / n), widest first: the widths the cost model weighs."""
    return sorted({-(-seq_blocks // n) for n in range(1, seq_blocks + 1)}, reverse=True)


def tile_shapes(seq_blocks: int) -> list[tuple[int, int]]:
    """(query blocks, key blocks) of every tile the cost model weighs: query
    tiles of 1 to MAX_Q_BLOCKS blocks (tallest first) by `key_widths`."""
    return [(qb, kb) for qb in range(min(seq_blocks, MAX_Q_BLOCKS), 0, -1)
            for kb in key_widths(seq_blocks)]


def run_tile(q_blocks: int, run_blocks: int) -> int:
    """The query tile (in blocks) of a run of `run_blocks` query blocks (one
    core's share of a query cut): the tallest that divides the run, at most
    the group's own tile of `q_blocks`."""
    return max(d for d in range(1, min(q_blocks, run_blocks) + 1) if run_blocks % d == 0)


def overlapped(a: Attention, q_blocks: int) -> bool:
    """Whether the query tiles of q_blocks overlap: with Q, K and V staged
    (absorbed casts) at a seq of partial 16-row blocks, tiles that do not
    divide the sequence are all alike, the last one ending at the last block
    (it recomputes rows of the one before and stores only its own), so
    that `npu-lower-attention` pipelines across them with K and V cast once
    a head and kept in L1 (`resident`). Whole-block seqs keep the casts
    apart with several query tiles (`plan`)."""
    s1 = a.seq_blocks
    return a.staged and a.seq % 16 != 0 and s1 % q_blocks != 0 and s1 > q_blocks


def resident(a: Attention, q_blocks: int, k_blocks: int, target: Target,
             query_blocks: int | None = None) -> bool:
    """Whether `npu-lower-attention` keeps a head's K and V in L1 over its
    query tiles (query tiles that divide the sequence, or the core's run of
    `query_blocks` of it, or `overlapped` ones; several of them, room in L1
    beside the tile's own buffers)."""
    s1, d1 = a.seq_blocks, a.d_blocks
    sq = s1 if query_blocks is None else query_blocks
    if (sq % q_blocks and not (sq == s1 and overlapped(a, q_blocks))) or sq <= q_blocks:
        return False
    need = footprint(q_blocks, min(k_blocks, s1), d1, a.staged, False)["l1"]
    return need + s1 * (2 * d1 + 1) * 16 * 16 * 2 <= target.capacity("l1")


def modelled(a: Attention, q_blocks: int, k_blocks: int, target: Target,
             softmax: str, on_chip: bool = False, heads: int | None = None,
             query_blocks: int | None = None, path: bool = False) -> TileCost:
    """`npu.costmodel.attention.cost.tile_cost` of the tile for this attention
    (`on_chip`: Q, K, V made by the kernel's own projection); `heads` and
    `query_blocks`: one core's share of them (`npu-split-cores`); `path`:
    with the steps' path of a kernel whose steps cannot overlap
    (`npu.costmodel.attention.serial_steps`)."""
    mask = "" if a.key_mask is None else "after" if a.mask_scaled else "before"
    return tile_cost(a.heads if heads is None else heads, a.seq_blocks, a.d_blocks, q_blocks,
                     k_blocks, softmax, resident(a, q_blocks, k_blocks, target, query_blocks),
                     a.sources is not None, a.nz_out, target, on_chip, a.guard, mask,
                     query_blocks, "" if not a.scores_mask
                     else "head" if a.bias_per_head else "shared",
                     query_blocks is None and overlapped(a, q_blocks), path)


def _rank(p: Plan, seq_blocks: int) -> tuple[int, bool, int]:
    """Fewer tiles first (each has a fixed cost and reloads K and V), then
    query tiles that divide the sequence, then the larger tile."""
    tiles = -(-seq_blocks // p.q_blocks) * -(-seq_blocks // p.k_blocks)
    return tiles, seq_blocks % p.q_blocks != 0, -p.q_blocks * p.k_blocks


def gm_bytes(a: Attention, p: Plan, target: Target) -> tuple[int, int]:
    """(unfused, fused) modelled GM bytes: each member reads its inputs and
    writes its output once; the fused kernel reads Q once, K and V once per
    query tile (once per head when they stay in L1: `resident`), and writes
    the context once."""
    nbytes = nir.memref_bytes
    unfused = sum(nbytes(v) for m in a.members for v in m.operands)
    q_tiles = 1 if resident(a, p.q_blocks, p.k_blocks, target) else -(-a.seq_blocks // p.q_blocks)
    q, k, v = a.sources or (a.q, a.k, a.v)
    fused = nbytes(q) + q_tiles * (nbytes(k) + nbytes(v)) + nbytes(a.out)
    return unfused, fused
