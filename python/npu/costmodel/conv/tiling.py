"""Tiling of a convolution's implicit matmul, chosen by a per-pipe cost model.

The implicit matmul of one image: M = Ho*Wo windows, N = Cout, K =
C1*Kh*Kw*C0. The kernel is output-stationary: a band of `rows` output rows
(its input rows, halo included, all C1 blocks, copied GM -> L1 once) is one
M tile of `m1 = ceil(rows*Wo/16)` fractals; for each tile of `n1` Cout
blocks the reduction runs in chunks of `kc` kernel points (C0 channels of
one (c1, kh, kw)), each chunk img2col'd into one half of L0A (one img2col
per kernel point, repeating along M) and its weights loaded into one half
of L0B, then one mad accumulating into L0C; the tile drains L0C -> UB -> GM.

The estimate is the busiest pipe's work over the whole conv plus the
start-up of the first band (the GM latency and one chunk), the matmul cost
model's reading of a pipelined kernel: the halves of L0A/L0B (and the two
L0C tiles) let MTE1, M and the drain overlap.
"""

from __future__ import annotations

from dataclasses import dataclass

from npu.target import Target


@dataclass(frozen=True)
class ConvShape:
    """One image's conv in the units the cube sees (C1, Cout1 in C0 blocks)."""

    c1: int
    h: int
    w: int
    co1: int
    kh: int
    kw: int
    ho: int
    wo: int
    stride_h: int
    dilation_h: int
    pad_top: int
    batch: int = 1
    out_bytes: int = 4  # of the result in GM
    weight_resident: bool = False  # filled by the plan

    @property
    def k1(self) -> int:
        return self.c1 * self.kh * self.kw

    def band_rows(self, ho0: int, rows: int) -> tuple[int, int]:
        """(first input row, input rows) the output rows [ho0, ho0+rows) read (clipped)."""
        ext = self.dilation_h * (self.kh - 1) + 1
        top = ho0 * self.stride_h - self.pad_top
        bottom = (ho0 + rows - 1) * self.stride_h - self.pad_top + ext
        r0, r1 = max(0, top), min(self.h, bottom)
        return r0, max(r1 - r0, 0)


@dataclass(frozen=True)
class ConvTiling:
    rows: int    # output rows per band (M tile)
    m1: int      # fractals of the M tile
    n1: int      # Cout blocks per N tile
    kc: int      # kernel points per reduction chunk
    weights_resident: bool  # all weights loaded into L1 once
    cycles: float  # the estimate
    pipes: tuple[tuple[str, float], ...] = ()


def _l1_band_bytes(s: ConvShape, rows: int) -> int:
    ext = s.dilation_h * (s.kh - 1) + 1
    in_rows = min(s.h, (rows - 1) * s.stride_h + ext)
    return s.c1 * in_rows * s.w * 32


def estimate(s: ConvShape, rows: int, n1: int, kc: int, resident: bool, t: Target) -> tuple[float, dict]:
    """(cycles, per-pipe work) of one tiling."""
    frac = t.fractal_bytes(2)
    bands = -(-s.ho // rows)
    m1 = -(-rows * s.wo // 16)
    last_rows = s.ho - (bands - 1) * rows
    m1_last = -(-last_rows * s.wo // 16)
    m_fracs = (bands - 1) * m1 + m1_last  # per image, per N tile
    n_tiles = -(-s.co1 // n1)
    chunks = -(-s.k1 // kc)
    cube = s.batch * m_fracs * s.co1 * s.k1 * t.cube_cycles(1)
    img2col = s.batch * n_tiles * m_fracs * s.k1 * frac / t.img2col_bytes_per_cycle
    weights_l0b = s.batch * bands * s.co1 * s.k1 * frac / t.path("l1_to_l0b").bytes_per_cycle
    in_bytes = sum(_l1_band_bytes(s, min(rows, s.ho - b * rows)) for b in range(bands)) * s.batch
    w_bytes = s.k1 * s.co1 * frac * (1 if resident else s.batch * bands)
    mte2 = (in_bytes + w_bytes) / t.path("gm_to_l1").bytes_per_cycle
    out_fracs = s.batch * m_fracs * s.co1
    drain = out_fracs * t.fractal_bytes(4) / t.path("l0c_to_ub").bytes_per_cycle + out_fracs * 4
    mte3 = s.batch * s.ho * s.wo * s.co1 * 16 * s.out_bytes / t.path("ub_to_gm").bytes_per_cycle
    issue = s.batch * bands * n_tiles * (chunks * (kc + 2) + 8) * t.scalar_issue_cycles
    pipes = {"M": cube, "MTE1": img2col + weights_l0b, "MTE2": mte2, "V": drain, "MTE3": mte3,
             "S": issue}
    first = (t.path("gm_to_l1").latency + _l1_band_bytes(s, rows) / t.path("gm_to_l1").bytes_per_cycle
             + t.img2col_latency + m1 * kc * frac / t.img2col_bytes_per_cycle + t.mad_latency
             + 2 * t.path("ub_to_gm").latency)
    # bands in series: each band's input load is exposed unless the next is prefetched
    exposed = s.batch * bands * t.path("gm_to_l1").latency * 0.5
    return max(pipes.values()) + first + exposed, pipes


def choose_tiling(s: ConvShape, t: Target, ub_bytes: int | None = None) -> ConvTiling | None:
    """The cheapest tiling that fits the buffers (two halves of L0A, L0B, two
    L0C tiles, the drain in UB, the band and weights in L1); None when not
    even one output row of one Cout block fits."""
    frac = t.fractal_bytes(2)
    l0a, l0b = t.capacity("l0a") // 2 // frac, t.capacity("l0b") // 2 // frac
    l0c = t.capacity("l0c") // 2 // t.fractal_bytes(4)
    ub = (ub_bytes or t.capacity("ub")) // 2
    l1 = t.capacity("l1")
    best: ConvTiling | None = None
    w_all = s.k1 * s.co1 * frac
    for rows in range(1, s.ho + 1):
        m1 = -(-rows * s.wo // 16)
        if m1 > min(l0a, t.max_repeat, l0c):
            break
        band = _l1_band_bytes(s, rows)
        for n1 in range(1, s.co1 + 1):
            if m1 * n1 > l0c or m1 * n1 * (t.fractal_bytes(4) + frac) + s.co1 * 256 > ub:
                break
            resident = 2 * band + w_all <= l1
            if not resident and 2 * band + 2 * s.k1 * n1 * frac > l1:
                continue
            kc_max = min(l0a // m1, l0b // n1, s.k1)
            if kc_max < 1:
                continue
            for kc in sorted({kc_max, max(1, kc_max // 2)}):
                cycles, pipes = estimate(s, rows, n1, kc, resident, t)
                if best is None or cycles < best.cycles:
                    best = ConvTiling(rows, m1, n1, kc, resident, cycles,
                                      tuple(sorted(pipes.items())))
    return best
