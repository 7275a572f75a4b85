"""How a conv's super tile holds its accumulators in L0C (`tiling`,
`passes/lower_conv/kernel.py`): two sets alternating super tile by super
tile, or one set for a conv of one band and one super tile; and whether a
super tile's two accumulators leave UB in one store (`one_store`)."""

from __future__ import annotations

from typing import Protocol

from npu.costmodel.conv.epilogue import EpilogueWork
from npu.target import Target


class ConvShape(Protocol):
    """What these rules read of `tiling.ConvShape` (which imports them)."""

    batch: int
    ho: int
    wo: int
    co1: int
    int8: bool
    out_bytes: int

FRACTAL_ELEMENTS = 256  # of one 16x16 fractal

# Cout blocks of one accumulator of a super tile in a single L0C set
# (`single_set`): each drains as soon as its last mad is done, so the
# drain of the others overlaps the last chunk's mads (1x1 1024->256 14:
# 20,618 cycles with accumulators of 4 blocks, 20,498 with 2).
ACC_BLOCKS = 2


def single_set(s: ConvShape, rows: int, n1: int, l0c_half: int) -> bool:
    """Whether a tiling's super tile takes more than half of L0C (in
    fractals, `l0c_half`): allowed where the conv is one band of one super
    tile, whose accumulators never alternate with another's (1x1 1024->256
    14: all 14 rows x 16 blocks, 208 of 256 fractals, one band in which
    the cube follows the weights as they land; in two bands of 9 and 5
    rows the second's mads waited for the first's: 23,524 cycles)."""
    m1 = -(-rows * s.wo // 16)
    return (s.batch * -(-s.ho // rows) == 1 and n1 >= s.co1
            and m1 * s.co1 > l0c_half)


def accumulators(s: ConvShape, rows: int, n1: int, l0c_half: int) -> int:
    """Accumulators of a super tile (`ConvTiling.accumulators`)."""
    if single_set(s, rows, n1, l0c_half):
        return -(-min(n1, s.co1) // ACC_BLOCKS)
    return 2


def l0c_sets(s: ConvShape, rows: int, n1: int, t: Target) -> int:
    """The L0C sets the lowering allocates for a tiling: one where its
    super tile takes more than half of L0C (`single_set`), else two."""
    half = t.capacity("l0c") // 2 // t.fractal_bytes(4)
    return 1 if single_set(s, rows, n1, half) else 2


def one_store(s: ConvShape, m1: int, n1: int, ub_half: int,
              epilogue: EpilogueWork | None) -> bool:
    """Whether a super tile's two accumulators may drain into one UB slot
    and leave in one store (the estimate picks it where it is cheaper: its
    last store is whole at the end): without an epilogue, where two such
    slots fit half of UB beside the bias. Each store's flag holds MTE3 for the GM latency
    before the next store may start (its slot is free only once it has
    landed), so half the stores pay half the latencies: 1x1 64->256 56,
    56 stores of 28 KB, was MTE3-bound at 46,634 cycles (V 32,928). Not
    for the int8 form yet: its fused dequantising epilogue stores per half,
    and test_int8_conv_dequantising_epilogue_cycles holds its bare conv
    within 1.1x of it."""
    return (epilogue is None and not s.int8 and min(n1, s.co1) >= 2
            and 2 * m1 * min(n1, s.co1) * FRACTAL_ELEMENTS * s.out_bytes + s.co1 * 256 <= ub_half)
