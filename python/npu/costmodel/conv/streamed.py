"""Streamed weights' super tiles under an epilogue that loads operands (a
residual): what the tiling model (`tiling.estimate`) adds where they cannot
overlap.

With streamed weights the kernel loads a super tile's drain operands at the
super tile's start, ahead of its weights in MTE2's queue (one run with
them: `kernel.emit_band`), into the epilogue's sets, which drains take in
turn (`sets`, two). A super tile of two or more Cout blocks drains in two
halves, so its successor's operand loads wait for its drains, which wait
for its last mads, and MTE2 (in order) holds the successor's weights
behind them: the next super tile's first mad comes only after this one's
first half drains (`V`), the successor's operands load, and its first
weight piece (of `STREAMED_PARTS`) arrives. ResNet-18's layer3 3x3 256->256
14 with its residual (four super tiles of 4 blocks): 3.2k cycles from one
super tile's last mad to the next one's first, 46,092 simulated against
36,682 for the same conv without the residual (layer3.1.conv1). The gaps
are the cube's idle time, a floor beside the pipes' work, not part of it.
"""

from __future__ import annotations

from npu.costmodel.conv.epilogue import EpilogueWork
from npu.target import Target

# A streamed super tile after the first loads in this many pieces (the first
# in `pieces_of_rows`): 3x3 256->256 14 (four tiles of 295 KB) 40,151 cycles
# whole, 37,775 in halves, 36,983 in thirds; resident later tiles stay whole
# (1x1/2 256->512 56: 35,129 whole, 35,790 in thirds).
STREAMED_PARTS = 3


def first_part_rows(k1: int, kc: int) -> int:
    """K1 rows of a later streamed super tile's first piece (whole chunks,
    `STREAMED_PARTS` pieces: `weights.ConvWeights.thirds`)."""
    kc = min(kc, k1)
    chunks = -(-k1 // kc)
    return min(k1, -(-chunks // min(STREAMED_PARTS, chunks)) * kc)


def serial_gaps(work: EpilogueWork | None, tiles: list[int], m1: int, k1: int, kc: int,
                t: Target, sets: int = 2) -> float:
    """Cycles the cube idles between the streamed super tiles of `tiles`
    Cout blocks each, in the order they run (module docstring): after each
    super tile that drains in at least `sets` halves, its first half's
    drain (L0C -> UB, the epilogue's vector work), the next tile's operands
    (their bytes: their GM latency runs under the weights' transfer) and
    its first weight piece, latency included."""
    if work is None or not work.loads:
        return 0.0
    frac = t.fractal_bytes(2)
    per_frac = (t.fractal_bytes(4) / t.path("l0c_to_ub").bytes_per_cycle + 4
                + 256 * work.vector)
    gm, ub = t.path("gm_to_l1"), t.path("gm_to_ub")
    total = 0.0
    for prev, nxt in zip(tiles, tiles[1:]):
        if (2 if prev >= 2 else 1) < sets:
            continue
        drain = m1 * -(-prev // 2) * per_frac
        loads = m1 * nxt * 256 * work.loaded_bytes / ub.bytes_per_cycle
        piece = first_part_rows(k1, kc) * nxt * frac / gm.bytes_per_cycle + gm.latency
        total += t.mad_latency + drain + loads + piece
    return total
