"""A residual Add in the cube (`passes/lower_conv/cube_residual.py`): the
cost of its identity mads per (band, Cout super tile), and the L1 its
residual tiles hold.

ResNet's bottleneck conv3 (1x1) drains into relu(conv + bias + residual).
On the vector unit that is the L0C -> UB move and two f16 passes (vadd,
vmaxs) per output; in the cube it is one more mad per Cout block (the
residual block's m1 fractals against a 16x16 identity, accumulated into
the block's L0C fractals), and the move's own ReLU (`f32_to_f16_relu`) is
all the drain does. The residual goes GM -> L1 (not UB), img2col'd like a
1x1 map (its block is the map's C1 block) into L0A.
"""

from __future__ import annotations

from npu.costmodel.conv.first_band import DEFER_BANDS
from npu.target import Target

# L1 buffers of a band's residual, taken by bands in turn (as the maps): a
# band's copy waits only for the img2cols of the band SETS before it. (Three
# let MTE2 run further ahead, but gained nothing alone, ResNet's block end at
# 56 147,514 cycles either way, and in ResNet-50 their L1 met the 3x3
# conv2's before them: one core 1,766,585 with three, 1,760,753 with two.)
SETS = 2


def mads_cycles(m1: int, blocks: int, kc: int, t: Target) -> float:
    """One super tile's residual mads (`blocks` Cout blocks of m1 fractals),
    in chunks of up to `kc` blocks through the L0A/L0B halves: each the
    longer of its mads (plus the mad latency) and its MTE1 work (one
    img2col of m1 fractals per block, the identity fractal to L0B)."""
    frac = t.fractal_bytes(2)
    total = 0.0
    for b0 in range(0, blocks, kc):
        k = min(kc, blocks - b0)
        mad = t.cube_cycles(m1 * k) + t.mad_latency
        mte1 = k * m1 * frac / t.img2col_bytes_per_cycle + frac / t.path("l1_to_l0b").bytes_per_cycle
        total += max(mad, mte1)
    return total


def work(s, bands: tuple[tuple[int, int], ...], n_tiles: list[int], kc: int,
         t: Target) -> tuple[float, float]:
    """(cube + MTE1 cycles, MTE2 cycles) the residual adds to conv `s` (a
    `tiling.ConvShape`; (0, 0) without one) of `bands` (M fractals, count)
    and super tiles of `n_tiles` Cout blocks: its mads, and its bytes
    GM -> L1 in each band's map run (the first bands' in runs of their own,
    each holding MTE2 for a GM latency)."""
    if not s.residual:
        return 0.0, 0.0
    compute = s.batch * sum(mads_cycles(m, n, min(kc, s.k1), t) * count
                            for n in n_tiles for m, count in bands if count)
    gm = t.path("gm_to_l1")
    runs = min(s.batch * sum(count for _, count in bands), DEFER_BANDS)
    return compute, s.batch * s.ho * s.wo * s.co1 * 32 / gm.bytes_per_cycle + runs * gm.latency


def l1_bytes(co1: int, rows: int, wo: int, last_rows: int) -> int:
    """L1 of the residual buffers: SETS per distinct band height (each a
    contiguous map of a band's rows, every Cout block: img2col reads it as
    one), and the identity."""
    return SETS * sum(co1 * r * wo * 16 * 2 for r in {rows, last_rows}) + 512
