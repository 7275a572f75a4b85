"""The geometry and tiling of one `ascend.pool2d` (see the package docstring).

A tile is a group of 16 planes (n, c) and a band of `ob` output rows. Every
band has the same `ob`; the last one is moved back to end at Ho (its rows
overlap the previous band's and are computed and stored twice, identically),
so per-plane runs are never shorter than a block. A pixel-major (NC1HWC0)
map has every pixel a block already: its last band keeps its place and
takes only the rows left (ResNet's stem pool: 6 output rows, not 10 of which
4 again); an f32 one's pixel is two blocks, one per image (`pixel_blocks`). Bands whose input rows all lie inside the map (no top/bottom
padding) are "interior"; those with `ob` rows run as one loop, the others
are emitted one by one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from npu.dialects.ascend_pool import Pool2d

GROUP = 16       # planes transposed together by one vnchwconv
BLOCKS_PER_REPEAT = 8


@dataclass(frozen=True)
class Band:
    o0: int          # first output row (static bands) or of the first interior band
    in_start: int    # first input row loaded
    rows: int        # input rows loaded
    row_dst: int     # padded-image row the first loaded row goes to
    interior: bool
    out_rows: int    # output rows (`ob`, but for a pixel-major map's last band)


@dataclass(frozen=True)
class PoolGeometry:
    pool: Pool2d
    planes: int
    h: int
    w: int
    ho: int
    wo: int
    es: int          # element bytes
    block: int       # elements per 32-byte block (= lanes of one block)
    pixel_major: bool = False  # NC1HWC0 in GM: a group's band is loaded as it lies
    direct: bool = False  # every kernel point straight from the input image (`choose_form`)

    @property
    def regions(self) -> int:
        """Pixel-major images of one group: 16 planes / planes per block."""
        return GROUP // self.block

    @property
    def pixel_blocks(self) -> int:
        """Blocks between a pixel and the next in an image: an f32 NC1HWC0
        map's pixel is two blocks (channels 0-7, 8-15), its two images
        interleaved as they lie in GM; else 1 (each image on its own)."""
        return self.regions if self.pixel_major else 1

    def band_rows(self, ob: int) -> int:
        """Padded-image rows the windows of `ob` output rows read."""
        return (ob - 1) * self.pool.strides[0] + self.pool.span(0)

    def bands(self, ob: int, h0: int = 0, h1: int | None = None) -> list[Band]:
        """The bands of output rows [h0, h1) (all of them by default)."""
        h1 = self.ho if h1 is None else h1
        out = []
        starts = list(range(h0, h1, ob))
        if not self.pixel_major:
            starts[-1] = h1 - ob
        for o0 in starts:
            rows = min(ob, h1 - o0)
            lo = o0 * self.pool.strides[0] - self.pool.pads[0]
            hi = lo + self.band_rows(rows)
            first, last = max(lo, 0), min(hi, self.h)
            out.append(Band(o0, first, last - first, first - lo,
                            lo >= 0 and hi <= self.h, rows))
        return out

    def ub_bytes(self, ob: int, slots: int = 2) -> int:
        """UB `slots` ping-ponged tiles use: the buffers a mover touches (input
        staging and its tails, output staging and its tails) once per slot;
        the pixel-major images only the vector unit touches (input, rows
        pooled across, output) once, as npu-plan-memory lets the slots share
        them (V runs in order)."""
        rows = min(self.band_rows(ob), self.h)
        pixels_out = ob * self.wo
        if self.pixel_major:  # the movers fill and drain the images themselves
            across = 0 if self.direct else rows * self.wo
            return self.es * GROUP * (slots * (rows * self.w + pixels_out) + across)
        moved = rows * self.w + pixels_out + 2 * self.block
        vector = rows * self.w + rows * self.wo + pixels_out
        return self.es * GROUP * (slots * moved + vector)

    def fits(self, ob: int) -> bool:
        """Every band's per-plane runs (input and output) are at least a block
        (pixel-major: every pixel is a block)."""
        if self.pixel_major:
            return True
        if ob * self.wo < self.block and ob < self.ho:
            return False
        return all(b.rows * self.w >= self.block for b in self.bands(ob))

    def choose_band(self, budget: int, cap: int = 0, slots: int = 2) -> int | None:
        """The most output rows a tile can take within `budget` bytes (at most
        `cap` when given); None when not even the fewest fit."""
        best = None
        for ob in range(1, self.ho + 1):
            if cap and ob > cap and best is not None:
                break
            if not self.fits(ob):
                continue
            if self.ub_bytes(ob, slots) > budget:
                break
            best = ob
        if best is not None:  # prefer whole-block output runs (one store per tile)
            for ob in range(best, (best + 1) // 2 - 1, -1):
                if ob * self.wo % self.block == 0 and self.fits(ob):
                    return ob
        return best

    def choose_form(self, budget: int, load_rate: int, cap: int = 0
                    ) -> tuple["PoolGeometry", int | None]:
        """(geometry, `ob`): a pixel-major map pools each kernel point straight
        from the loaded image (kh * kw ops over the output, no image of rows
        pooled across) where the UB that image took buys fewer bands and the
        window's vector work stays under the band's load: MTE2 bounds such a
        pool, and each band's load holds MTE2 for a GM latency (ResNet's stem
        pool 3x3/2 64 112: bands of 14 output rows, not 10; 37,257 -> 35,229
        cycles, bench/pool.py). Else the separable form."""
        ob = self.choose_band(budget, cap)
        if not self.pixel_major or ob is None:
            return self, ob
        direct = replace(self, direct=True)
        ob_d = direct.choose_band(budget, cap)
        if ob_d is None or len(direct.bands(ob_d)) >= len(self.bands(ob)):
            return self, ob
        kh, kw = self.pool.kernel
        # one repeat covers 8 output pixels; the load moves `load_rate` B a cycle (gm_to_ub)
        window = kh * kw * ob_d * -(-self.wo // BLOCKS_PER_REPEAT) * self.regions
        load = min(self.band_rows(ob_d), self.h) * self.w * self.es * GROUP // load_rate
        return (direct, ob_d) if window < load else (self, ob)

    # -- the bounds bench/pool.py prints ---------------------------------------
    def gm_bytes(self) -> tuple[int, int]:
        """(read, written): the input once, the output once."""
        return self.planes * self.h * self.w * self.es, self.planes * self.ho * self.wo * self.es

    def vector_repeats(self) -> int:
        """The pooling arithmetic alone, done separably: kw - 1 combining ops
        over the rows the windows read, kh - 1 over the output (+1 scaling
        for avg), 256 bytes a repeat."""
        kh, kw = self.pool.kernel
        rows = min(self.h, (self.ho - 1) * self.pool.strides[0] + self.pool.span(0))
        elements = (kw - 1) * rows * self.wo + (kh - 1 + (self.pool.kind == "avg")) * self.ho * self.wo
        return -(-max(elements, self.ho * self.wo) * self.planes * self.es // 256)
