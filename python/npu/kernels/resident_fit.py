"""Whether and how a fused row group's rows stay resident in UB, one row a
chunk (`npu.kernels.resident_rows` emits them): two slots taken by turns,
two that share a piece of the row, or one.

Rows too long for a chunk of whole rows (`fused_chunk.whole_rows_fit`) that
fit UB twice keep each row in UB: one GM read and one exp per element,
where the two-pass kernel reads every element twice and computes the
reductions' inputs twice. When two whole rows do not fit (a 32768-column
f32 softmax: 128 KB rows in 256 KB of UB), the slots share the bytes of the
row's last stored piece, which each row stores first and the next row
loads last: 126,822 -> 83,494 cycles for that softmax over 16 rows on one
core (1.94x -> 1.27x its GM bound; 16x33536: 134,947 -> 87,046).
"""

from __future__ import annotations

from dataclasses import dataclass

from npu.costmodel.fusion.rows import FUSED_UB_FRACTION, GroupModel, tail_block
from npu.kernels.fused_chunk import (RESIDENT_SHARE, ChunkBytes, chunk_bytes, long_rows,
                                     resident_plan)
from npu.kernels.online_rows import online_row_block
from npu.target import Target

# A resident row is stored in about PIECES pieces of whole f16 and f32
# repeats (PIECE_STEP elements); its two slots share at most the last one.
PIECES = 8
PIECE_STEP = 128


def resident_pieces(n: int, pieces: int = PIECES) -> list[tuple[int, int]]:
    """(first column, width) of each of about `pieces` pieces of a resident
    row of `n` elements: whole repeats but the last."""
    width = max(PIECE_STEP, -(-n // (pieces * PIECE_STEP)) * PIECE_STEP)
    return [(j0, min(width, n - j0)) for j0 in range(0, n, width)]


@dataclass(frozen=True)
class ResidentFit:
    """How a resident row's slots fit UB: two, or one (a row of more than
    half of UB); with two, `overlap` elements at the end of the first
    slot's row are the start of the second's (0: disjoint)."""

    slots: int = 2
    overlap: int = 0

    def describe(self) -> str:
        if self.slots == 1:
            return "in one slot (each row loaded as the previous one is stored)"
        shared = f" sharing {self.overlap} columns" if self.overlap else ""
        return f"in two slots{shared}"


def shared_columns(cb: ChunkBytes, budget: int, n: int) -> int:
    """Elements two sets of the one streamed buffer of a one-row chunk (`n`
    elements a row) must share to fit `budget`, in whole `PIECE_STEP`s and
    at most the row's last stored piece; 0 when they cannot."""
    if len(cb.streamed) != 1:
        return 0
    (row_bytes,) = cb.streamed.values()
    short = 2 * row_bytes + cb.vector + cb.fixed - budget
    step = row_bytes // n * PIECE_STEP
    overlap = max(1, -(-short // step)) * PIECE_STEP
    return overlap if overlap <= resident_pieces(n)[-1][1] else 0


def resident_fit(g: GroupModel, target: Target, budget: int) -> ResidentFit | None:
    """How the group's rows stay resident (`resident_plan`: results stored
    from their loaded buffers), or None. `budget` is the one-set budget
    (`FUSED_UB_FRACTION` of UB at the default share). Long rows that are not
    whole blocks (`fused_chunk.long_rows`) take this kernel however short:
    its UB row is the whole blocks and a tail block. So does a single short
    row that is not whole blocks (a classifier's 1000 logits: its cast and
    bias add one kernel instead of two, ResNet-50's fc 77,420 -> 76,390
    cycles) but holds one at least (the tail block starts in the row);
    several short ones are left to the unfused kernels, which take many
    rows a chunk. Rows that fit only once
    and are not whole blocks (GPT-2's 50257 f32 columns, which the two-pass
    kernel cannot take) use one slot, each row's loads following the
    previous row's stores piece by piece."""
    tail = tail_block(g, target)
    n = (g.n or 1) - (g.n or 1) % tail + tail if tail else None
    if tail and not long_rows(g, target) and (g.rows > 1 or (g.n or 1) < tail):
        return None  # short rows that are not whole blocks: the unfused kernels take them
    cb = chunk_bytes(g, resident_plan(g, target), target, online_row_block(g, target), n)
    if cb.row_block != 1:
        return None
    allowed = int(min(budget / FUSED_UB_FRACTION, target.capacity("ub")) * RESIDENT_SHARE)
    if cb.rows(allowed, lambda key: 2) >= 1:
        return ResidentFit()
    overlap = shared_columns(cb, allowed, n or g.n or 1)
    if overlap:
        return ResidentFit(2, overlap)
    # One slot only where the two-pass kernel cannot run: on whole-block
    # rows it was not reliably faster (one core, f32 softmax, one slot
    # against two-pass: 16x34000 132,383 against 128,132, 8x40960 77,991
    # against 76,683, 4x49152 46,727 against 49,711).
    return ResidentFit(1) if tail and cb.rows(allowed, lambda key: 1) >= 1 else None


def resident_fits(g: GroupModel, target: Target, budget: int) -> bool:
    """Whether the resident kernel takes the group (`resident_fit`)."""
    return resident_fit(g, target, budget) is not None
