"""Depthwise conv (multiplier 1) on the vector unit: its plan and estimate.

The block-diagonal cube form (`tiling.py`, `diagonal`) feeds the cube 16x16
weight fractals of which one channel in 16 is real, and img2col moves every
input byte once per kernel point: MTE1 bounds it, and on small maps (14x14,
7x7) the chunks are short and it runs at 2-2.5x that bound. On the vector
unit the same conv is, per C1 block of NC1HWC0 data and kernel point, one
multiply-add (`vmla`) over a rectangle of output pixels (one 32-byte block
each, 8 a repeat): the source is the input rows shifted by the kernel point
(block stride = the conv's column stride, repeat stride = its row stride),
the per-channel weights one block read with strides 0. Padding costs
nothing: each kernel point covers only the outputs whose tap lies inside
the map. f32 accumulation (an f32 result) holds a pixel in two blocks, so
twice the repeats and a conversion of the input.

A tile is `blocks` C1 blocks x a band of `rows` output rows: one run of GM
loads (their input rows, halo included, and their weights), one store. The
weights are the compact per-channel operand [C1, Kh*Kw, 16] npu-lower-conv
makes on the host from constant diagonal fractals (`compact`: Kh*Kw*32 bytes
a block), else the diagonal fractals themselves (Kh*Kw*512 bytes a block,
3x the input map at 960@7), from which the vector unit sums each block's
weights out exactly (the fractals are zero off the diagonal). Each run of loads and each
store pays the GM latency on its mover (the flag after it holds the mover:
see `tiling.estimate`), so tiles are made as large as UB allows two of.
The estimate is the busiest of V, MTE2 and MTE3 over the conv plus the
first tile's load, vector work and the last store, exposed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv.epilogue import EpilogueWork
from npu.dialects.ascend_conv import geometry
from npu.target import Target

FRACTAL_BYTES = 512   # one 16x16 f16 weight fractal
COMPACT_BYTES = 32    # one kernel point's 16 f16 weights of a block in the compact operand
BLOCKS_PER_REPEAT = 8
MAX_STRIDE = 255      # 8-bit block / repeat stride fields of a vector instruction


@dataclass(frozen=True)
class DwBand:
    """Output rows [o0, o0 + rows) and the input rows they read."""

    o0: int
    rows: int
    in_start: int   # first input row loaded
    in_rows: int    # input rows loaded
    row_dst: int    # padded-band row the first loaded row is (top padding rows above it)
    interior: bool  # reads no padding row


@dataclass(frozen=True)
class DwShape:
    """One depthwise conv in NC1HWC0 (channels in C1 blocks of 16)."""

    n: int
    c1: int
    h: int
    w: int
    ho: int
    wo: int
    kh: int
    kw: int
    strides: tuple[int, int]
    pads: tuple[int, int, int, int]
    dilations: tuple[int, int]
    acc_bytes: int = 2  # 2: f16 accumulation, 4: f32 (input converted in UB)
    bias: bool = False
    compact: bool = False  # weights as the per-channel [C1, Kh*Kw, 16] operand, not fractals

    @property
    def bias_bytes(self) -> int:
        """GM bytes of one C1 block's bias, loaded with each tile (f32 at most)."""
        return 64 if self.bias else 0

    @property
    def weight_bytes(self) -> int:
        """GM bytes of one C1 block's weights (all its kernel points)."""
        return self.points * (COMPACT_BYTES if self.compact else FRACTAL_BYTES)

    @property
    def halves(self) -> int:
        """32-byte blocks of one pixel's 16 channels in the accumulation type."""
        return self.acc_bytes // 2

    @property
    def points(self) -> int:
        return self.kh * self.kw

    def extent_h(self) -> int:
        return self.dilations[0] * (self.kh - 1) + 1

    def bands(self, rows: int, h0: int = 0, h1: int | None = None) -> list[DwBand]:
        """Bands of `rows` output rows over [h0, h1) (the last may be shorter)."""
        h1 = self.ho if h1 is None else h1
        out = []
        for o0 in range(h0, h1, rows):
            r = min(rows, h1 - o0)
            lo = o0 * self.strides[0] - self.pads[0]
            hi = lo + (r - 1) * self.strides[0] + self.extent_h()
            first, last = max(lo, 0), min(hi, self.h)
            out.append(DwBand(o0, r, first, max(last - first, 0), first - lo, lo >= 0 and hi <= self.h))
        return out

    def row_part(self, parts: int) -> "DwShape":
        """One core's share of the conv cut into `parts` runs of output rows
        (npu-split-cores): Ho/parts rows and the input rows an inner run reads."""
        rows = self.ho // parts
        h = min(self.h, (rows - 1) * self.strides[0] + self.extent_h())
        return replace(self, ho=rows, h=h, pads=(0, self.pads[1], 0, self.pads[3]))

    def columns(self, c: int) -> tuple[int, int]:
        """[j0, j1): the output columns whose tap of kernel column `c` is inside the map."""
        return valid(self.wo, self.strides[1], c * self.dilations[1] - self.pads[1], self.w)

    def strides_fit(self) -> bool:
        """A rectangle's operands fit the vector stride fields walking down the
        rows (repeat stride = a row) or along them (8 blocks a repeat)."""
        sh, sw = self.strides
        p = self.halves
        by_rows = max(self.w * sh, self.wo) * p <= MAX_STRIDE and sw * p <= MAX_STRIDE
        return by_rows or sw * p * BLOCKS_PER_REPEAT <= MAX_STRIDE


def valid(count: int, stride: int, shift: int, size: int) -> tuple[int, int]:
    """[i0, i1): the outputs i < count whose tap i*stride + shift is in [0, size)."""
    i0 = max(0, -(shift // stride)) if shift < 0 else 0
    i1 = min(count, (size - 1 - shift) // stride + 1) if size - 1 - shift >= 0 else 0
    return i0, max(i0, i1)


def dw_shape(op: ir.Operation, acc: str, bias: bool, compact: bool = False) -> DwShape:
    """The shape of an `ascend.conv2d` in layout "nc1hwc0_bd", accumulating
    in `acc` (`compact`: its weights loaded as the per-channel operand)."""
    g = geometry(op)
    ho, wo = g.out_hw
    return DwShape(g.n, g.c // 16, g.h, g.w, ho, wo, g.kh, g.kw, g.strides, g.pads, g.dilations,
                   nir.element_bytes(acc), bias, compact)


@dataclass(frozen=True)
class DwPlan:
    rows: int     # output rows of a band
    blocks: int   # C1 blocks of a tile
    cycles: float
    pipes: tuple[tuple[str, float], ...] = ()


def tile_ub(s: DwShape, rows: int, blocks: int) -> tuple[int, int]:
    """(bytes a mover touches, bytes only V touches) of one tile in UB: the
    input band and weights loaded, the result stored; the weights summed out
    of fractals (and with f32 accumulation the converted input and weights)."""
    in_rows = min(s.h, (rows - 1) * s.strides[0] + s.extent_h())
    pixels = -(-rows * s.wo // 16) * 16
    moved = blocks * (in_rows * s.w * 32 + s.weight_bytes + s.bias_bytes
                      + pixels * 16 * s.acc_bytes)
    vector = (0 if s.compact else blocks * s.points * 256) + (blocks * 32 if s.bias else 0)
    if s.acc_bytes == 4:
        vector += blocks * (in_rows * s.w * 64 + s.points * 256)
    return moved, vector


def vector_repeats(s: DwShape) -> float:
    """Vector repeats of one C1 block of one image over the whole map (the
    banding does not change them): each kernel point's rectangle of valid
    outputs, 8 pixels a repeat along a row, times the blocks of a pixel;
    the initial value (bias, or zeros when no kernel point covers every
    output) one more pass."""
    total, full = 0, False
    for a in range(s.kh):
        i0, i1 = valid(s.ho, s.strides[0], a * s.dilations[0] - s.pads[0], s.h)
        for c in range(s.kw):
            j0, j1 = s.columns(c)
            total += (i1 - i0) * -(-(j1 - j0) // BLOCKS_PER_REPEAT)
            full = full or (i1 - i0, j1 - j0) == (s.ho, s.wo)
    if s.bias or not full:
        total += s.ho * -(-s.wo // BLOCKS_PER_REPEAT)
    return total * s.halves


def estimate(s: DwShape, rows: int, blocks: int, t: Target,
             epilogue: EpilogueWork | None = None) -> tuple[float, dict]:
    """(cycles, per-pipe work) of tiles of `blocks` C1 blocks x `rows` output rows."""
    gm_in, gm_out = t.path("gm_to_ub"), t.path("ub_to_gm")
    bands = s.bands(rows)
    groups = -(-s.c1 // blocks)
    tiles = s.n * groups * len(bands)
    ma = t.vector_cycles("multiply_add")
    # per tile: the weights summed out of their fractals (15 adds of 8
    # fractals a repeat; none for the compact operand), with f32
    # accumulation their conversion; f32: the input band converted
    extract = (0 if s.compact else 15 * -(-s.points * blocks // 8)) \
        + (s.points * blocks if s.acc_bytes == 4 else 0)
    in_pixels = sum(b.in_rows for b in bands) * s.w
    convert = in_pixels * 16 / t.lanes(4) if s.acc_bytes == 4 else 0.0
    pixels = s.ho * s.wo * 16
    # Each kernel point's pieces of one block overlap in extent, which sync
    # insertion orders with a pipe_barrier(V) (the vector latency drained):
    # once per kernel point and pixel half along the rows, once per column
    # of 8 down them (`vector_rect.along_rows`). Measured: 576@14 (4 blocks x
    # 14 rows) 14,485 cycles against 12,532 estimated without them.
    chunks = 1 if s.wo % BLOCKS_PER_REPEAT == 0 or s.wo >= 32 else -(-s.wo // BLOCKS_PER_REPEAT)
    barriers = tiles * s.points * s.halves * chunks
    vector = s.n * s.c1 * (vector_repeats(s) * ma + convert * t.vector_cycles("convert")) \
        + tiles * extract + barriers * t.vector_latency
    out_bytes = s.acc_bytes
    loaded = 0.0
    if epilogue is not None:
        vector += s.n * s.c1 * pixels * epilogue.vector
        loaded = s.n * s.c1 * pixels * epilogue.loaded_bytes
        out_bytes = epilogue.out_bytes
    mte2 = (s.n * s.c1 * (in_pixels * 32 + len(bands) * (s.weight_bytes + s.bias_bytes)) + loaded) \
        / gm_in.bytes_per_cycle + tiles * gm_in.latency
    mte3 = s.n * s.c1 * pixels * out_bytes / gm_out.bytes_per_cycle + tiles * gm_out.latency
    pipes = {"V": vector, "MTE2": mte2, "MTE3": mte3}
    first_band = bands[0]
    first_load = blocks * (first_band.in_rows * s.w * 32 + s.weight_bytes + s.bias_bytes)
    first = (gm_in.latency + first_load / gm_in.bytes_per_cycle + vector / tiles
             + gm_out.latency + blocks * first_band.rows * s.wo * 16 * out_bytes / gm_out.bytes_per_cycle)
    return max(pipes.values()) + first, pipes


def plan(s: DwShape, t: Target, ub_bytes: int, epilogue: EpilogueWork | None = None,
         sets: int = 2) -> DwPlan | None:
    """The cheapest (rows, blocks) whose two tiles fit `ub_bytes` beside the
    bias pattern and the epilogue's sets; None when the vector path does not
    apply (strides past the vector fields) or not even one row of one block fits."""
    if not s.strides_fit():
        return None
    held = 0
    if epilogue is not None:
        held += s.c1 * epilogue.pattern_bytes
    best: DwPlan | None = None
    for rows in range(1, s.ho + 1):
        m = -(-rows * s.wo // 16) * 16  # pixels of a tile's result (whole fractals, as the epilogue's)
        for blocks in range(1, s.c1 + 1):
            moved, vector = tile_ub(s, rows, blocks)
            sets_bytes = sets * epilogue.set_bytes * blocks * m if epilogue is not None else 0
            if 2 * moved + vector + sets_bytes + held > ub_bytes:
                break
            cycles, pipes = estimate(s, rows, blocks, t, epilogue)
            if best is None or cycles < best.cycles:
                best = DwPlan(rows, blocks, cycles, tuple(sorted(pipes.items())))
    return best
