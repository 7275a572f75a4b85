"""One (band, Cout super tile) of a conv on the cube: its reduction chunks
back to back (`tiling.estimate` sums these over the conv's bands)."""

from __future__ import annotations

from npu.costmodel.conv.stem_fold import k_order
from npu.target import Target


def tile_cycles(m1: int, n1: int, kc: int, k1: int, t: Target, rate: int,
                tail_rate: int | None = None, head: int = 0, edge: bool = True) -> float:
    """One (band, Cout super tile): its chunks back to back. A chunk takes the
    longer of its mads plus the mad latency (the set_flag that frees its
    L0A/L0B half for MTE1 waits for its last mad to complete, and with one
    accumulator its mads wait for each other: 3x3 256->256 14's 144 chunks
    paid 20 cycles each in the simulation) and its MTE1 work (img2col of kc kernel points, kc x n1 weight fractals), the two
    overlapping through the L0A/L0B halves; the first chunk's loads and
    latencies are exposed. `tail_rate`: the last K fractal's img2col rate
    (`ConvShape.single_tail`), else `rate`; `head` fractals at the full
    rate (`ConvShape.fold`), spread in the order `stem_fold.k_order` gives;
    `edge`: the first chunk's loads are exposed."""
    frac = t.fractal_bytes(2)
    chunks, last = divmod(k1, kc)
    full = [kc] * chunks + ([last] if last else [])
    # the fold's fractals in the kernel's K order (`stem_fold.k_order`)
    folded = [f < head for f in k_order(head, k1, tail_rate is not None)] if head else [False] * k1
    total = 0.0
    for j, k in enumerate(full):
        mad = t.cube_cycles(m1 * k * n1) + t.mad_latency
        tail = j == len(full) - 1 and tail_rate is not None
        fast = sum(folded[j * kc:j * kc + k])
        mte1 = ((k - tail - fast) * m1 * frac / rate + (m1 * frac / tail_rate if tail else 0)
                + fast * m1 * frac / t.img2col_bytes_per_cycle
                + k * n1 * frac / t.path("l1_to_l0b").bytes_per_cycle)
        total += max(mad, mte1)
    first, fast = full[0], sum(folded[:full[0]])  # the fold's fractals at the full rate
    return total + edge * ((first - fast) * m1 * frac / rate + t.img2col_latency
                           + fast * m1 * frac / t.img2col_bytes_per_cycle)
