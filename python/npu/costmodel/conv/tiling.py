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
L0C tiles) let MTE1, M and the drain overlap. An int8 conv is the f16 conv
of its C1_32 blocks of 32 channels (the same bytes and cube cycles fractal
for fractal) plus its map's staging through UB (`int8_staging`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv.accumulators import FRACTAL_ELEMENTS, accumulators, one_store, single_set
from npu.costmodel.conv import residual
from npu.costmodel.conv.band_layout import band_layout
from npu.costmodel.conv.chunks import tile_cycles as _tile_cycles
from npu.costmodel.conv.epilogue import EpilogueWork, paired_loads
from npu.costmodel.conv.first_band import (ahead_pieces, first_tile_left, piece_cap, tapered_end,
                                          tapered_pieces, weight_pieces)
from npu.costmodel.conv.int8_staging import staging_work
from npu.costmodel.conv.stem_fold import edges_hidden, folded_stem, image_bytes, single_tail
from npu.costmodel.conv.streamed import serial_gaps
from npu.dialects.ascend_conv import NC1HWC0_BD, NC1HWC0_C4, geometry, is_int8, layout
from npu.target import Target


# Cycles one (band, Cout super tile) costs beyond its chunks (flags, the
# exposed edges of its loads and drain): an estimate, fitted to bench/conv.py.
BAND_OVERHEAD = 300
# The same for a conv whose bands hide their edges (`stem_fold.edges_hidden`),
# an estimate: bench/conv.py stem image 7x7/2 3->64 224 runs ~1,206 cycles a
# band against its chunks' 1,192 (est. 59,251 with 300, simulated 47,234);
# at 100 or less the MTE3 term (each store's GM latency in series) decides,
# and the chooser takes a tiling that runs 51,214.
HIDDEN_BAND_OVERHEAD = 200


# Convs of at most this many bands are emitted straight (no scf.for): sync
# insertion waits for events from before a loop at its entry, which would
# stall the loop's first band behind the previous band's drain.
UNROLL_BANDS = 64


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
    small: bool = False  # img2col's small-channel mode: 4 kernel points per K fractal
    # Block-diagonal (layout "nc1hwc0_bd": depthwise, small groups): Cout
    # block j reduces over input block j's kernel points only, one block per tile.
    diagonal: bool = False
    # The int8 form: c1 counts 32-channel blocks (the f16 conv of C/2
    # channels, fractal for fractal), its map staged through UB (int8_staging).
    int8: bool = False
    # Output rows read disjoint runs of input rows with rows between them
    # unread (stride_h > the kernel's extent, no padding rows: a 1x1 stride-2
    # downsample): each band copies only the runs its rows read (a strided
    # copy), packed in L1, and img2col steps over them with stride_h = extent.
    row_skip: bool = False
    # Whether the estimate counts the first band's wait for resident weights
    # (`estimate`). npu-split-cores weighs its grids without it for now: with
    # it, each core's row run pays the whole weights' load, and the grids of
    # small convs moved from row cuts to channel cuts (test/python/multicore
    # test_conv_rows, test_conv_aligned), not yet measured against each other.
    weights_gate: bool = True
    # The small-channel form's last K fractal holds one kernel point (Kh*Kw
    # = 4g + 1: the 7x7 stem's 49th) and the map's slots 4..15 are zeros:
    # img2col reads it in the normal mode (the point's 16 slots, weights
    # zero past its channels) at the full rate (`tail_rate`).
    single_tail: bool = False
    # K fractals read in the normal mode ahead of the small mode's: a
    # folded stem's first Kw (`stem_fold`), and its image's channels
    fold: int = 0
    image_c: int = 0
    # One core's share of a conv cut over cores (`row_part`): npu-prefetch
    # may take its first weight pieces, which stay as `weight_pieces` makes them.
    core_share: bool = False
    # A K fractal of ones after the map's, its weights the bias: the bias in
    # the cube, no vadd on the drain (`passes/lower_conv/cube_bias.py`).
    ones: int = 0
    # A residual Add (+ ReLU) in the cube, no vector work on the drain (`costmodel.conv.residual`)
    residual: bool = False

    @property
    def k1(self) -> int:
        """K fractals: one per (c1, kernel point), or per 4 kernel points (small)."""
        if self.small:
            return -(-self.kh * self.kw // 4)
        if self.diagonal:
            return self.kh * self.kw
        return self.c1 * self.kh * self.kw + self.ones

    @property
    def extent_h(self) -> int:
        """Input rows one output row's windows span (dilation included)."""
        return self.dilation_h * (self.kh - 1) + 1

    def img2col_rate(self, t: Target) -> int:
        return t.img2col_small_bytes_per_cycle if self.small else t.img2col_bytes_per_cycle

    def tail_rate(self, t: Target) -> int:
        """The img2col rate of the last K fractal (`single_tail`)."""
        return t.img2col_bytes_per_cycle if self.single_tail else self.img2col_rate(t)

    @property
    def read_rows(self) -> int:
        """Input rows the conv reads (per image): those between the windows unread."""
        return self.ho * self.extent_h if self.row_skip else self.h

    def band_rows(self, ho0: int, rows: int) -> tuple[int, int]:
        """(first input row, input rows) the output rows [ho0, ho0+rows) read (clipped)."""
        top = ho0 * self.stride_h - self.pad_top
        bottom = (ho0 + rows - 1) * self.stride_h - self.pad_top + self.extent_h
        r0, r1 = max(0, top), min(self.h, bottom)
        return r0, max(r1 - r0, 0)

    def band_key(self, ho0: int, rows: int) -> tuple[int, int, int, int]:
        """What makes two bands alike to the lowering (`band_layout`):
        consecutive bands alike are one run of code."""
        return band_layout(ho0, rows, self.h, self.stride_h, self.pad_top, self.extent_h,
                           self.row_skip)[0]

    def weights_up_front(self, rows: int, mte2_bound: bool = True) -> bool:
        """Whether resident weights all load before the first band's map:
        the lowering issues the pieces behind the first band's chunks unless
        (`kernel.emit_rows`) there are several images, or the first band
        opens a run of bands alike that is a loop (more than UNROLL_BANDS
        bands) or MTE2 bounds the conv (`mte2_bound`: there the pieces'
        flags would each cost a GM latency); then the cube waits for every
        weight byte."""
        bands = self.batch * -(-self.ho // rows)
        return self.batch > 1 or (self.ho > rows and self.band_key(0, rows)
                                  == self.band_key(rows, min(rows, self.ho - rows))
                                  and (bands > UNROLL_BANDS or mte2_bound))

    def deferred_map(self) -> bool:
        """Whether the lowering copies the first bands' maps block by block
        with the weight pieces (`kernel.defer_map`): the f16 form with more
        than one block, staged through nothing."""
        return not (self.small or self.diagonal or self.int8)

    def first_pieces(self, m1: int, n1: int, kc: int, t: Target,
                     taper: bool = False) -> list[tuple[int, int]]:
        """The first band's weight pieces (`weight_pieces`, capped by
        `piece_cap` for its chunks of m1 x kc x n1 fractals), or
        `tapered_pieces` where `taper` (`tapers`)."""
        kc = min(kc, self.k1)
        if taper:
            return tapered_pieces(self.k1, kc)
        chunk = m1 * kc * (1 if self.diagonal else min(n1, self.co1))
        return weight_pieces(self.k1, kc, piece_cap(-(-self.k1 // kc), chunk,
                                                    t.path("gm_to_l1").latency))

    def row_part(self, parts: int) -> "ConvShape":
        """One core's share of the conv cut into `parts` equal runs of output
        rows (npu-split-cores): Ho/parts rows and the input rows that an
        inner run reads (its halo included)."""
        rows = self.ho // parts
        return replace(self, ho=rows, h=min(self.h, (rows - 1) * self.stride_h + self.extent_h),
                       pad_top=0, core_share=True)

    def tapers(self, rows: int, n1: int, resident: bool, mte2_bound: bool) -> bool:
        """Whether resident weights load in `tapered_pieces`: the whole conv
        is one band of one super tile, its f16 map going out with the
        pieces (`deferred_map`), MTE2 paces it and the weights are most of
        its bytes: then the cube can only follow the pieces, and the last
        one's work comes after all of MTE2's. (Where the map is most of
        them, the runs are mostly map blocks and the taper's extra runs
        cost more than its shorter last piece saves: MobileNetV2's 1x1
        projections on 14x14, 384->96 5,297 -> 7,153 cycles tapered.)"""
        return (resident and mte2_bound and not self.core_share and self.deferred_map()
                and n1 >= self.co1 and self.batch * -(-self.ho // rows) == 1
                and self.k1 * self.co1 * FRACTAL_ELEMENTS * 2 >= _l1_band_bytes(self, rows))


@dataclass(frozen=True)
class ConvTiling:
    rows: int    # output rows per band (M tile)
    m1: int      # fractals of the M tile
    n1: int      # Cout blocks of one L0C super tile (every chunk's img2col serves all of them)
    kc: int      # kernel points per reduction chunk
    weights_resident: bool  # all weights loaded into L1 once
    cycles: float  # the estimate
    pipes: tuple[tuple[str, float], ...] = ()
    # Both halves of a super tile drain into one UB slot and leave in one
    # store (`one_store`)
    one_store: bool = False
    # Accumulators a super tile's mads go round: two hide the mad latency
    # of accumulating into one C; a super tile in a single L0C set
    # (`single_set`) has one per ACC_BLOCKS blocks, each drained in turn
    accumulators: int = 2

    @property
    def mad_tiles(self) -> int:
        """Accumulators the super tile's mads alternate between."""
        return min(self.accumulators, self.n1)

    def acc_tiles(self, ns: int) -> list[tuple[int, int]]:
        """(first block, blocks) of the accumulators of a super tile of
        `ns` Cout blocks: `mad_tiles` runs, the first ones the wider."""
        k = max(1, min(self.accumulators, ns))
        width = -(-ns // k)
        return [(t0, min(width, ns - t0)) for t0 in range(0, ns, width)]


def _l1_band_bytes(s: ConvShape, rows: int) -> int:
    in_rows = rows * s.extent_h if s.row_skip else min(s.h, (rows - 1) * s.stride_h + s.extent_h)
    return s.c1 * in_rows * s.w * 32


def estimate(s: ConvShape, rows: int, n1: int, kc: int, resident: bool, t: Target,
             epilogue: EpilogueWork | None = None, merged: bool = False,
             sets: int = 2, accs: int = 2) -> tuple[float, dict]:
    """(cycles, per-pipe work) of one tiling, with `epilogue`'s work on each
    drained tile: its vector passes, its operands' loads (with resident
    weights each super tile's loads pay a GM latency, paired_loads; streamed,
    they join the super tile's weight run, and super tiles that fill the
    epilogue's `sets` run one after another: `streamed.serial_gaps`) and its
    result's stores (one per super tile when `merged`: `one_store`).
    `accs`: each super tile's accumulators, each drained and stored apart."""
    frac = t.fractal_bytes(2)
    bands = -(-s.ho // rows)
    m1 = -(-rows * s.wo // 16)
    last_rows = s.ho - (bands - 1) * rows
    m1_last = -(-last_rows * s.wo // 16)
    n_tiles = [min(n1, s.co1 - c) for c in range(0, s.co1, n1)]
    hidden = edges_hidden(s.fold, epilogue.vector if epilogue is not None else 0.0)
    # block-diagonal: each Cout block of a super tile has its own img2col and mads
    compute = s.batch * sum((n * _tile_cycles(m, 1, kc, s.k1, t, s.img2col_rate(t)) if s.diagonal
                             else _tile_cycles(m, n, kc, s.k1, t, s.img2col_rate(t), s.tail_rate(t),
                                               s.fold, not hidden)) * count
                            for n in n_tiles
                            for m, count in ((m1, bands - 1), (m1_last, 1)) if count)
    res = residual.work(s, ((m1, bands - 1), (m1_last, 1)), n_tiles, kc, t)  # (0, 0): none
    compute += res[0]
    if hidden:  # only the conv's first chunk is exposed (`stem_fold.edges_hidden`)
        compute += _tile_cycles(m1, n1, kc, s.k1, t, s.img2col_rate(t), s.tail_rate(t), s.fold) \
            - _tile_cycles(m1, n1, kc, s.k1, t, s.img2col_rate(t), s.tail_rate(t), s.fold, False)
    m_fracs = (bands - 1) * m1 + m1_last  # per image, per N tile
    in_bytes = sum(_l1_band_bytes(s, min(rows, s.ho - b * rows)) for b in range(bands)) * s.batch
    if s.fold:  # its NCHW image's rows (`stem_fold.image_bytes`)
        in_bytes = s.batch * image_bytes(s.image_c, s.w, [
            s.band_rows(b * rows, min(rows, s.ho - b * rows))[1] for b in range(bands)])
    w_bytes = s.k1 * s.co1 * frac * (1 if resident else s.batch * bands)
    # each band's map, and each super tile's weights when they stream, end
    # in a flag that holds MTE2 until they land
    runs = s.batch * bands * (1 + (0 if resident else len(n_tiles)))
    staged = 0.0  # the int8 map's staging: f16 GM bytes, vector passes, UB -> L1 copies
    mte3_map = 0.0
    if s.int8:
        work = staging_work(in_bytes // (s.c1 * 32), s.c1, t)
        in_bytes, staged = work.gm_bytes, work.vector
        runs += work.runs - s.batch * bands  # its runs of GM reads replace the bands' map copies
        mte3_map = work.l1_bytes / t.path("ub_to_l1").bytes_per_cycle
    mte2 = (in_bytes + w_bytes) / t.path("gm_to_l1").bytes_per_cycle \
        + runs * t.path("gm_to_l1").latency + res[1]
    out_fracs = s.batch * m_fracs * s.co1
    drain = out_fracs * t.fractal_bytes(4) / t.path("l0c_to_ub").bytes_per_cycle \
        + (0 if s.ones else out_fracs * 4) + staged
    drains = s.batch * bands * sum(min(accs, n) for n in n_tiles)
    out_bytes = s.out_bytes
    if epilogue is not None:
        pixels, gm_lat = s.batch * s.ho * s.wo * s.co1 * 16, t.path("gm_to_ub").latency
        drain += out_fracs * FRACTAL_ELEMENTS * epilogue.vector
        mte2 += pixels * epilogue.loaded_bytes / t.path("gm_to_ub").bytes_per_cycle
        if resident:  # a copy per drain, or per super tile (`paired_loads`)
            mte2 += (s.batch * bands * len(n_tiles) if paired_loads(epilogue) else drains) * epilogue.loads * gm_lat
        # per-channel operands, staged once (a run of copies each)
        mte2 += epilogue.patterns * t.path("gm_to_ub").latency \
            + s.co1 * epilogue.pattern_bytes / t.path("gm_to_ub").bytes_per_cycle
        out_bytes = epilogue.out_bytes
    # A drain slot is reused only once its store has completed (latency
    # included) and sync insertion serialises the stores' flags: each store
    # pays the GM latency (one per half super tile and band). A result
    # stored from its super tile's loaded tiles (`paired_loads`, `on_loaded`)
    # frees them with one flag after both halves' stores: one latency a super
    # tile (1x1 64->256 56 with its residual + ReLU: 28 x (2 x 450 + 350)).
    whole = merged or (epilogue is not None and paired_loads(epilogue) and epilogue.on_loaded)
    stores = (s.batch * bands * len(n_tiles) if whole else drains) \
        * (epilogue.stores if epilogue is not None else 1)
    mte3 = (s.batch * s.ho * s.wo * s.co1 * 16 * out_bytes / t.path("ub_to_gm").bytes_per_cycle
            + stores * t.path("ub_to_gm").latency + mte3_map)
    # Each (band, super tile) also pays flag round trips and a drain that is
    # not hidden at its edges: an estimate of BAND_OVERHEAD cycles.
    compute += s.batch * bands * len(n_tiles) * (HIDDEN_BAND_OVERHEAD if hidden else BAND_OVERHEAD)
    # idle, not work: the lowering reads the pipes (`weights.mte2_bound`)
    idle = 0.0 if resident else serial_gaps(epilogue, n_tiles * (s.batch * bands), m1, s.k1,
                                            kc, t, sets)
    pipes = {"cube+MTE1": compute, "MTE2": mte2, "V": drain, "MTE3": mte3}
    gm = t.path("gm_to_l1")
    map0 = _l1_band_bytes(s, rows) / gm.bytes_per_cycle
    tail = (t.mad_latency + 2 * t.path("ub_to_gm").latency
            + m1 * n1 * t.fractal_bytes(4) / t.path("l0c_to_ub").bytes_per_cycle)
    # the last store leaves after the whole conv's compute: one store of a
    # super tile carries its first half's bytes too
    last = m1 * (n1 // 2) * FRACTAL_ELEMENTS * out_bytes if merged else 0
    tail += last / t.path("ub_to_gm").bytes_per_cycle
    steady = max(*pipes.values(), compute + idle) + gm.latency + map0 + tail
    if not resident or not s.weights_gate:
        return steady, pipes
    # Resident weights: the first band's chunks wait for their weights, loaded
    # after its map in pieces (`weight_pieces`) or all before it (`weights_up_front`). Until the last piece lands the cube
    # has done at most the first band's work on the earlier ones; from then on
    # the rest of the conv runs at its busiest pipe. 1x1 1024->256 14 (512 KB
    # of weights, 8.2k cycles at 64 B/cycle): the first mad at 10.3k
    # simulated, 27,348 cycles against 19,252 estimated without this.
    w_time = w_bytes / gm.bytes_per_cycle
    done = 0.0
    if not s.weights_up_front(rows, pipes["MTE2"] >= pipes["cube+MTE1"]):
        band0 = [n * _tile_cycles(m1, 1, kc, s.k1, t, s.img2col_rate(t)) if s.diagonal
                 else _tile_cycles(m1, n, kc, s.k1, t, s.img2col_rate(t), s.tail_rate(t), s.fold)
                 for n in n_tiles]
        # `weights_hold_first_band`: tile by tile when the conv is one band or
        # loading them takes half a band's compute; else K rows over all of
        # Cout (`first_band`: the pieces after the first may go out in one run)
        one_run = not s.deferred_map() or pipes["MTE2"] >= pipes["cube+MTE1"] + map0 + gm.latency
        by_tile = len(n_tiles) > 1 and (bands * s.batch == 1 or 2 * w_time >= compute / (s.batch * bands))
        later = [n * s.k1 * frac / gm.bytes_per_cycle for n in n_tiles[1:]] if by_tile else []
        if s.tapers(rows, n1, resident, pipes["MTE2"] >= pipes["cube+MTE1"]):
            # each piece a run with the map blocks its rows read (`defer_map`)
            end = tapered_end(s.first_pieces(m1, n1, kc, t, True), band0[0] / s.k1,
                              s.co1 * frac / gm.bytes_per_cycle + map0 / s.k1, gm.latency)
            # (no map ahead of the cube: its blocks go out with the pieces)
            return max(max(pipes.values()) + gm.latency + tail, end + tail), pipes
        left = first_tile_left(s.first_pieces(m1, n1, kc, t), later, ahead_pieces(
            m1, min(kc, s.k1), min(n1, s.co1), s.diagonal, t), one_run, band0[0] / s.k1,
            (n_tiles[0] if by_tile else s.co1) * frac / gm.bytes_per_cycle, gm.latency)
        done = (sum(band0[:-1]) if by_tile else band0[0]) - left
        # with the map in blocks beside the pieces the cube starts during the map too
        done = min(w_time + (map0 if s.deferred_map() else 0), done)
    rest = {"cube+MTE1": compute - done, "MTE2": mte2 - map0 - w_time, "V": drain, "MTE3": mte3}
    return max(steady, gm.latency + map0 + w_time + max(rest.values()) + tail), pipes


def choose_tiling(s: ConvShape, t: Target, ub_bytes: int | None = None,
                  epilogue: EpilogueWork | None = None, sets: int = 2,
                  rows_of_band: int | None = None) -> ConvTiling | None:
    """The cheapest tiling that fits the buffers (two halves of L0A, L0B, two
    L0C tiles (one for one band of one super tile: `single_set`), the drain in UB beside `sets` sets of an epilogue's tiles,
    the bias and the epilogue's per-channel patterns, the band and weights
    in L1); None when not even one output row of one Cout block fits.
    `rows_of_band`: only bands of that many output rows (two convs emitted
    band by band together share their bands: `lower_conv.band_steps`)."""
    epilogue_bytes = epilogue.ub_bytes(sets, paired_loads(epilogue)) if epilogue is not None else 0
    frac = t.fractal_bytes(2)
    l0a, l0b = t.capacity("l0a") // 2 // frac, t.capacity("l0b") // 2 // frac
    l0c = t.capacity("l0c") // 2 // t.fractal_bytes(4)
    # the epilogue's per-channel patterns hold UB for the whole conv: off the
    # top (the kernel leaves them out of its drain's budget alike)
    held = s.co1 * epilogue.pattern_bytes if epilogue is not None else 0
    ub = ((ub_bytes or t.capacity("ub")) - held) // 2
    l1 = t.capacity("l1")
    best: ConvTiling | None = None
    w_all = s.k1 * s.co1 * frac
    for rows in range(1, s.ho + 1) if rows_of_band is None else (rows_of_band,):
        m1 = -(-rows * s.wo // 16)
        if m1 > min(l0a, t.max_repeat, l0c):
            break
        # Two maps in turn (a band's copies overlap the previous band's
        # img2col), but one where a single band covers the conv (`kernel`
        # gives a lone band its own buffer): 3x3 256->256 14 then takes
        # super tiles of 6 blocks, not 4 (36,983 -> 35,948 cycles: fewer
        # chunks, each of which pays the mad latency before its flag)
        maps = 1 if s.batch * -(-s.ho // rows) == 1 else 2
        band = maps * _l1_band_bytes(s, rows)
        if s.residual:  # its bands in L1 (`costmodel.conv.residual`)
            band += residual.l1_bytes(s.co1, rows, s.wo, s.ho - (-(-s.ho // rows) - 1) * rows)
        for n1 in range(1, s.co1 + 1):
            # more than half of L0C only for one band of one super tile (`single_set`)
            if m1 * n1 > l0c and not single_set(s, rows, n1, l0c):
                if maps == 1 and m1 * s.co1 <= 2 * l0c:
                    continue
                break
            accs = accumulators(s, rows, n1, l0c)
            drained = -(-n1 // accs)  # one accumulator drains at a time
            # the drain within half of UB; with an epilogue, its sets beside
            # the bias and two drain slots in the whole
            drain_ub = m1 * drained * (t.fractal_bytes(4) + frac) + s.co1 * 256
            epilogue_ub = m1 * drained * FRACTAL_ELEMENTS * (epilogue_bytes + 2 * s.out_bytes)
            if drain_ub > ub or \
                    epilogue_bytes and epilogue_ub + s.co1 * 256 > 2 * ub:
                break
            resident = band + w_all <= l1
            if not resident and band + 2 * s.k1 * n1 * frac > l1:
                continue
            kc_max = min(l0a // m1, l0b // (1 if s.diagonal else n1), s.k1)
            if kc_max < 1:
                continue
            # the largest chunk, and the chunk that splits K evenly in as few
            kcs = sorted({kc_max, -(-s.k1 // -(-s.k1 // kc_max))})
            for kc, merged in ((kc, m) for kc in kcs
                               for m in {False, accs == 2 and one_store(s, m1, n1, ub, epilogue)}):
                cycles, pipes = estimate(s, rows, n1, kc, resident, t, epilogue, merged, sets,
                                         accs)
                if best is None or cycles < best.cycles:
                    best = ConvTiling(rows, m1, n1, kc, resident, cycles,
                                      tuple(sorted(pipes.items())), merged, accs)
    return best


def conv_shape(op: ir.Operation) -> ConvShape:
    """The cube's view of an `ascend.conv2d` in a 5HD layout."""
    g = geometry(op)
    int8 = is_int8(op)
    extent_h = g.dilations[0] * (g.kh - 1) + 1
    row_skip = (g.strides[0] > extent_h and g.pads[0] == g.pads[2] == 0 and not int8
                and layout(op) == "nc1hwc0" and len(nir.memref_shape(op.operands[0])) == 5)
    return ConvShape(c1=-(-g.c // 32) if int8 else g.c // 16, h=g.h, w=g.w, co1=g.cout // 16, kh=g.kh, kw=g.kw,
                     ho=g.out_hw[0], wo=g.out_hw[1], stride_h=g.strides[0],
                     dilation_h=g.dilations[0], pad_top=g.pads[0], batch=g.n,
                     out_bytes=nir.element_bytes(nir.memref_element(op.operands[-1])),
                     small=layout(op) == NC1HWC0_C4, diagonal=layout(op) == NC1HWC0_BD,
                     int8=int8, row_skip=row_skip, single_tail=single_tail(op),
                     fold=g.kw if folded_stem(op) else 0,
                     image_c=nir.memref_shape(op.operands[0])[1] if folded_stem(op) else 0)
