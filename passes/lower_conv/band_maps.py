"""A conv's band maps in L1 (`ConvKernel`): where a band's input rows start,
their buffer, and their copies GM -> L1, per C1 block (whole, in the weight
pieces' runs while the weights load: `defer_map`, or a band ahead:
`issue_map`)."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from npu import ir as nir
from npu.kernels.cce_build import copy, lin

Index = int | ir.Value


@dataclass(frozen=True)
class Band:
    """What a band's feature-map register and copies depend on."""

    rows: int       # output rows
    in_rows: int    # input rows copied to L1
    pad_top: int
    pad_bottom: int


class BandMaps:
    """Mixin of `ConvKernel` (its `g`, `s`, `x5`, `frac`, `in_type`, `ext_h`,
    `image`, `deferred` and `map_in_blocks_pays`)."""

    def first_row(self, ho0: Index, band: Band) -> Index:
        """The first input row the band from output row `ho0` reads."""
        g = self.g
        return lin((ho0, g.strides[0]), (-g.pads[0] + band.pad_top, 1))

    def map_buffer(self, band: Band) -> ir.Value:
        return nir.alloc([self.s.c1, band.in_rows, self.g.w, self.frac // 16], self.in_type, "l1")

    def defer_map(self, band: Band) -> bool:
        """Whether this band's map blocks go out with the weight pieces whose
        K rows read them (`ahead`, `need`): the conv's first DEFER_BANDS
        bands while its weights load in pieces (resident, or streamed), so
        the first chunk waits for one piece and the blocks it reads, not the
        whole map (1x1 1024->256 14: 258 KB of map before the first piece,
        the first mad at 5.2k cycles), and the second band for its first
        blocks, not its whole map behind the first band's last pieces (3x3/2
        128->128 56: the cube idle 2.6k cycles). Only there, and the views
        (`load3d`) only until the band's last chunk: a later band's copies
        into those bytes wait for each block's last reader, and with views in
        every chunk of more bands the flags ran out of event ids (pipe
        barriers in 3x3/2 128->128 56: 40,202 cycles). And only where the
        estimate says the blocks' runs pay (`map_in_blocks_pays`: not on a
        core's share of 32, where npu-prefetch takes the first pieces)."""
        s = self.s
        if self.deferred <= 0 or self.image is not None or s.diagonal or s.small:
            return False
        rows = band.rows * self.ext_h if s.row_skip else band.in_rows
        return self.map_in_blocks_pays(rows * self.g.w * 32, -(-band.rows * s.wo // 16))

    def map_runs(self) -> list[int]:
        """K1 rows at which a deferred band's runs of map blocks end
        (`ConvWeights.ahead`): as the weight pieces go, except for a 1x1
        conv's band with no weight pieces left to go (all resident). There
        each block is one K row read by one chunk only, and two runs do: the
        first half of the band's chunks' blocks, then the rest. Each run's
        flag holds MTE2 for a GM latency, and the second still lands before
        the band's second half needs it (1x1/2 256->512 56, the second
        band's 16 blocks: in runs of 4, 4 and 8 its third chunk waited 660
        cycles for the last run; in runs of 8 and 8, none: 32,805 -> 32,671
        cycles). Not where a block feeds Kh*Kw K rows: 3x3/2 128->128 56
        (8 blocks of 9 rows) took 35,470 cycles in halves, 35,065 in the
        pieces' runs."""
        ends = [k0 + rows for k0, rows in self.pieces_of_rows()]
        s = self.s
        if s.kh * s.kw > 1 or any(load.end is not None for load in self.loads):
            return ends
        kc = min(self.t.kc, s.k1)
        chunks = -(-s.k1 // kc)
        half = max(ends[0], (chunks + 1) // 2 * kc)
        return [half, s.k1] if half < s.k1 else [s.k1]

    def issue_map(self, n: int, band: Band, ho0: Index, fm: ir.Value) -> None:
        """The band's whole map, during the band before it (`StraightBands.flush`)."""
        r0 = self.first_row(ho0, band)
        for c1 in range(self.s.c1):
            self.copy_map_block(fm, n, band, r0, c1)

    def copy_map_block(self, fm, n: int, band: Band, r0: Index, c1: int) -> None:
        """Block c1 of the band's input rows -> its L1 map (per C1 block:
        img2col of block 0 waits for block 0 only)."""
        g, s = self.g, self.s
        dst = nir.subview(fm, [c1, 0, 0, 0], [1, band.in_rows, g.w, 16])
        if s.row_skip:  # a burst per output row: the rows between are never read
            span = (band.rows - 1) * g.strides[0] + self.ext_h
            src = nir.subview(self.x5, [n, c1, r0, 0, 0], [1, 1, span, g.w, 16])
            copy("cce.copy_gm_to_l1", src, dst, band.rows, self.ext_h * g.w,
                 src_gap=(g.strides[0] - self.ext_h) * g.w)
            return
        src = nir.subview(self.x5, [n, c1, r0, 0, 0], [1, 1, band.in_rows, g.w, 16])
        copy("cce.copy_gm_to_l1", src, dst, 1, band.in_rows * g.w)
