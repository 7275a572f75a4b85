"""Row reductions in two levels of cross-lane reductions, for rows whose
pitch in the accumulation type exceeds the vector repeat stride but whose
`lanes`-wide segments are whole and few (`npu-lower-reduce`).

Per chunk of whole rows, loaded by one copy (one burst, where the pieces
path of `LowerReduce.pieces_chunk` moves a burst per row and piece):
  1. one vcadd / vcmax per `lanes` segment, repeating along the flat chunk
     (repeat stride one segment, whatever the row pitch): a row's partials
     land contiguous, on whole blocks;
  2. one vcadd / vcmax per row over its partials (repeat stride: the
     partials of a row, a few blocks).
f16 sums widen to f32 a few rows at a time into two scratch buffers taken
by turns, so a chunk holds its rows once in f16 (where widening the whole
chunk needed 6 bytes per element and left chunks of a single row: 6.4x the
GM bound for 1024x2048 f16, now within 1.6x).
"""

from __future__ import annotations

from dataclasses import dataclass

from npu import ir as nir
from npu.costmodel.vector.tiling import plan_chunks, round_down, split_repeats
from npu.kernels.cce_build import copy, for_pieces, lin, sub

# Elements a widening step converts at least (whole rows): instructions of
# 64 repeats or more, so the scratch turns cost few pipe barriers.
WIDEN_STEP = 4096


@dataclass
class SegmentPlan:
    rows: int     # rows per chunk (whole output blocks)
    partials: int  # segments per row
    group: int    # rows widened per step (f16 sums), else 0


def segment_plan(lower, budget: int) -> SegmentPlan | None:
    """The two-level layout of `lower`'s rows within `budget` bytes, or None
    when it does not apply: rows of whole segments, a row's partials whole
    blocks within one repeat, and at least one block of output rows fits."""
    n, lanes, g = lower.n, lower.geo.lanes, lower.granule
    if lower.r or n % lanes:
        return None
    partials = n // lanes
    if partials > lanes or partials * lower.aes % g:
        return None
    group = 0
    scratch = 0
    if lower.acc != lower.elem:
        group = max(1, min(WIDEN_STEP // n or 1, lower.geo.max_repeat * lanes // n))
        scratch = 2 * group * n * lower.aes
    out_block = lower.geo.block
    per_row = n * lower.es + partials * lower.aes + lower.aes + lower.es
    rows = round_down(max(0, budget - scratch) // per_row, out_block)
    if lower.max_chunk:
        rows = min(rows, round_down(lower.max_chunk // n, out_block))
    if rows < out_block:
        return None
    return SegmentPlan(rows, partials, group)


def emit_segments(lower, plan: SegmentPlan) -> None:
    """Chunks of `plan.rows` rows (the last one moved back over the rows
    before it when the rows do not divide)."""
    n, es, aes, g = lower.n, lower.es, lower.aes, lower.granule
    lanes, partials = lower.geo.lanes, plan.partials
    scratch = ([nir.alloc([plan.group * n], lower.acc, "ub") for _ in range(2)]
               if plan.group else [])

    def level_one(work, src, r0: int, rows: int) -> None:
        """Partials of rows r0 .. r0+rows of `src` (flat, in the accumulation type)."""
        # Each instruction's results start on a block.
        most = round_down(lower.geo.max_repeat, g // aes)
        for piece in split_repeats(rows * n, lanes, most):
            nir.create_op(lower.reduce_op,
                          [sub(work, r0 * partials + piece.offset // lanes, piece.repeat),
                           sub(src, piece.offset, piece.repeat * lanes)],
                          repeat=piece.repeat, mask=lanes, src_blk_stride=1,
                          src_rep_stride=lanes * aes // g, dst_rep_stride=1)

    def chunk(row0, rows: int) -> None:
        valid = min(rows, lower.m)
        buf = nir.alloc([valid * n], lower.elem, "ub")
        copy("cce.copy_gm_to_ub", sub(lower.src, lin((row0, n)), valid * n), buf, 1,
             valid * n * es // g)
        work = nir.alloc([valid * partials], lower.acc, "ub")
        if not plan.group:
            level_one(work, buf, 0, valid)
        else:
            for k, r0 in enumerate(range(0, valid, plan.group)):
                rr = min(plan.group, valid - r0)
                wide = sub(scratch[k % 2], 0, rr * n)
                lower.convert(wide, lower.acc, sub(buf, r0 * n, rr * n), lower.elem, rr * n,
                              "none")
                level_one(work, wide, r0, rr)
        out = nir.alloc([rows], lower.acc, "ub")
        stride = partials * aes // g
        lower.over_rows(valid, lambda q0, rep: nir.create_op(
            lower.reduce_op, [sub(out, q0, rep),
                              sub(work, q0 * partials, (rep - 1) * partials + partials)],
            repeat=rep, mask=partials, src_blk_stride=1, src_rep_stride=stride,
            dst_rep_stride=1))
        lower.store(out, row0, rows, valid)

    for_pieces(plan_chunks(lower.m, plan.rows, lower.geo.block), chunk)
