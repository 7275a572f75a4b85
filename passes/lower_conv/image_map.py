"""The L1 map of a small-channel conv read straight from its NCHW image.

A first layer (an RGB stem, C <= 4) would otherwise have its image
converted to NC1HWC0 on the device first: 16 channel slots a pixel, ~5x
the image's bytes written to GM and read back by the conv. Here each band's
input rows, which are one contiguous run of pixels in every channel plane,
go GM -> UB as C channel rows, one `vnchwconv` per chunk turns 16 pixels x
16 slots into 16 pixel blocks (slots C..3 from zero rows set once; slots
4..15, which img2col's small-channel mode does not read, from the first
zero row, or repeating rows 0..3 for a 4-channel image), and MTE3 moves the
pixel blocks UB -> L1. With slots 4..15 zero, a 7x7 kernel's last K
fractal (one kernel point) is read in img2col's normal mode
(`ConvShape.single_tail`). The GM traffic is the
image once (plus the bands' halo rows), and the UB staging alternates two
buffer pairs so MTE2, V and MTE3 overlap across chunks.

A band's run whose length is not whole 16-pixel blocks ends with one block
read back from its last pixel (it overlaps the block before it), so no read
leaves the band; hence a band needs 16 pixels (the frontend keeps W >= 16).
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv.stem_fold import FOLD
from npu.kernels.cce_build import copy, lin, sub
from npu.kernels.vector_compute import vdup_fill
from npu.passes.lower_conv.stem_fold import StemFold
from npu.target import Target

Index = int | ir.Value
SLOTS = 16  # channel slots of a pixel in the L1 map (one 32-byte block)
REAL = 4    # slots the small-channel mode reads
# Pixels per staged chunk: 4 channel rows (8 B a pixel) and the transposed
# pixel blocks (32 B a pixel), two sets: 80 KiB of UB at most (the tiling's
# budget leaves this out, `staging_bytes`). Each chunk's flag holds MTE2 for
# a GM latency and the staging runs back to back there, so a conv whose
# drain slots leave UB spare takes longer chunks (`longest_chunk`): bench/
# conv.py stem image 7x7/2 3->64 224 (6 rows of 224 pixels a band): chunks
# of 1024 51,292 cycles, 1344 49,576, 1488 (the UB its slots leave) 49,579;
# reserving 1536 in the budget instead: 51,555 (5 drain slots, not 6).
MAX_CHUNK = 1024
# Bands sharing one L1 map of an NCHW image (`SegmentedImageMap`), measured
# on the stem image 7x7/2 3->64 224 (bench/conv.py): a map per band 68,106
# cycles; segments of 2 bands 56,936, 3: 58,190, 4: 58,604, 7: 59,846
# (longer segments: longer pieces per band, ahead of fewer rows' use).
SEGMENT_BANDS = 2
# The same for a folded stem (`stem_fold`): 2: 52,389 cycles, 3: 51,441,
# 4: 51,547 (its staging reads 3 rows above each chunk: longer segments pay)
FOLD_SEGMENT_BANDS = 3


def reads_image(x: ir.Value) -> bool:
    """Whether a small-channel conv's input is its NCHW image (4-D) rather
    than an NC1HWC0 map (5-D)."""
    return len(nir.memref_shape(x)) == 4


def prior_pixels(w: int, fold: bool) -> int:
    """Pixels a folded image's channel rows hold before their chunk (`ImageMap.prior`)."""
    return (FOLD - 1) * w if fold else 0


def staging_bytes(target: Target, prior: int = 0, chunk: int = MAX_CHUNK) -> int:
    """UB the staging takes at most (chunks of `chunk` pixels, each
    channel row `prior` pixels before its chunk too): the conv's tiling
    leaves it (at MAX_CHUNK) out of its budget."""
    blocks = chunk // SLOTS + 1
    lanes = target.lanes(2)
    row = -(-(prior + blocks * SLOTS) // lanes) * lanes
    return 2 * 2 * (REAL * row + blocks * SLOTS * SLOTS)


def longest_chunk(target: Target, prior: int, spare: int) -> int:
    """The longest chunk (whole 16-pixel blocks) whose staging fits the
    tiling's reserve plus `spare` bytes of UB the conv leaves unused."""
    room = staging_bytes(target, prior) + spare
    chunk = MAX_CHUNK
    while staging_bytes(target, prior, chunk + SLOTS) <= room:
        chunk += SLOTS
    return chunk


class StagedMaps:
    """Band maps filled through UB (the NCHW image here, the int8 map in
    `int8_map`): each band's map is filled, and with a static first row the
    next band's of the same run too, ahead of this band's drains. A
    subclass says how (`load`) and sets `ahead = {}` and `run = 0`."""

    ahead: dict
    run: int  # output rows per core's run (npu-split-cores), 0: all
    # The next band's fill right after this band's (else the kernel calls
    # `fill_next` after the band's first mads: a long fill issued first
    # would hold up the band's own first mads behind it).
    next_with_band = True

    def load(self, n: int, r0: Index, rows: int, fm: ir.Value) -> None:
        raise NotImplementedError

    def band_map(self, kernel, n: int, band, ho0: Index, fm: ir.Value | None) -> ir.Value:
        """The band's L1 map, filled; with a static first row, the next band
        of the same run is filled too, ahead of this band's drains in program
        order (MTE3 runs both in order: a fill behind a drain would leave the
        cube waiting for the drain's mads and the fill)."""
        fm = self.ahead.pop((n, ho0), None) if isinstance(ho0, int) else None
        if fm is None:
            fm = kernel.map_buffer(band)
            self.load(n, kernel.first_row(ho0, band), band.in_rows, fm)
        if self.next_with_band:
            self.fill_next(kernel, n, band, ho0)
        return fm

    def fill_next(self, kernel, n: int, band, ho0: Index) -> None:
        """With a static first row, the next band's map of the same run."""
        run = self.run or kernel.s.ho
        if isinstance(ho0, int) and ho0 + band.rows < (ho0 // run + 1) * run:
            nxt = ho0 + band.rows
            nb, _ = kernel.band(nxt, min(kernel.t.rows, (ho0 // run + 1) * run - nxt))
            self.ahead[(n, nxt)] = kernel.map_buffer(nb)
            self.load(n, kernel.first_row(nxt, nb), nb.in_rows, self.ahead[(n, nxt)])


class ImageMap(StagedMaps):
    """Fills a band's L1 map [1, rows, W, 16] from the NCHW f16 image."""

    def __init__(self, target: Target, image: ir.Value, band_pixels: int,
                 fold: StemFold = StemFold(False, False), chunk: int = MAX_CHUNK):
        self.target = target
        self.image = nir.flatten_memref(image)
        self.n, self.c, self.h, self.w = nir.memref_shape(image)
        if self.w < SLOTS:
            raise ValueError(f"an NCHW image {self.w} pixels wide: bands need 16 pixels")
        self.chunk = min(chunk, -(-band_pixels // SLOTS) * SLOTS)
        # folded rows (`stem_fold`): slot 4j + c of a pixel is channel c of the
        # pixel j rows up, so each channel row in UB starts `prior` pixels
        # (FOLD - 1 image rows) before its chunk
        self.prior = prior_pixels(self.w, fold.rows)
        blocks = self.chunk // SLOTS + 1  # + the tail block
        lanes = target.lanes(2)
        # one channel row in UB: whole repeats
        self.row = -(-(self.prior + blocks * SLOTS) // lanes) * lanes
        self.src = [nir.alloc([REAL * self.row], "f16", "ub") for _ in range(2)]
        self.dst = [nir.alloc([blocks * SLOTS * SLOTS], "f16", "ub") for _ in range(2)]
        self.turn = 0
        self.between = None  # called once after the next chunk (`SegmentedImageMap.band_map`)
        self.run = 0  # output rows per core's run (npu-split-cores), 0: all
        self.ahead: dict = {}
        # the absent channels' rows, never overwritten: zeros, and with the
        # bias in the weights, channel 3's ones (`stem_fold.bias_point`)
        for c in range(self.c, REAL):
            for buf in self.src:
                vdup_fill(target, sub(buf, c * self.row, self.row), self.row, "f16",
                          1.0 if fold.bias and c == REAL - 1 else 0.0)

    def load(self, n: int, r0: Index, rows: int, fm: ir.Value) -> None:
        """Input rows [r0, r0 + rows) of image `n` -> the L1 map `fm`."""
        total = rows * self.w
        flat = nir.flatten_memref(fm)
        for p0 in range(0, total, self.chunk):
            count = min(self.chunk, total - p0)
            self.chunk_to_l1(n, lin((r0, self.w), (p0, 1)), count, total - p0 - count == 0 and
                             count % SLOTS != 0, lin((r0, self.w), (total - SLOTS, 1)),
                             sub(flat, p0 * SLOTS, count * SLOTS))
            if self.between is not None:
                self.between()
                self.between = None

    def chunk_to_l1(self, n: int, start: Index, count: int, tail: bool, tail_start: Index,
                    dst_l1: ir.Value) -> None:
        """`count` pixels from pixel `start` of every channel plane -> `dst_l1`
        (count * 16 slots); `tail`: the last count % 16 pixels come from the
        block that ends them (from `tail_start`)."""
        src, dst = self.src[self.turn], self.dst[self.turn]
        self.turn ^= 1
        body = count // SLOTS if tail else -(-count // SLOTS)
        plane = self.h * self.w
        # folded: the rows above the chunk too, zeros above the image (a
        # run-time first row is an inner core's run: rows above it exist)
        before = self.prior
        zeros = max(0, before - start) if before and isinstance(start, int) else 0
        for c in range(self.c):
            base = lin((n * self.c + c, plane))
            if zeros:
                vdup_fill(self.target, sub(src, c * self.row, zeros), zeros, "f16", 0.0)
            if body:
                run = body * SLOTS + before - zeros
                copy("cce.copy_gm_to_ub", sub(self.image, lin((base, 1), (start, 1),
                                                              (zeros - before, 1)), run),
                     sub(src, c * self.row + zeros, run), 1, run // SLOTS)
            if tail:
                copy("cce.copy_gm_to_ub", sub(self.image, lin((base, 1), (tail_start, 1)), SLOTS),
                     sub(src, c * self.row + body * SLOTS, SLOTS), 1, 1)
        blocks = body + (1 if tail else 0)
        row_blocks = self.row // SLOTS
        if self.prior:  # slot 4j + c: channel c (or its zero / ones row) j rows up
            offsets = [k % REAL * row_blocks + (self.prior - k // REAL * self.w) // SLOTS
                       for k in range(SLOTS)]
        else:
            offsets = [(k if k < REAL or self.c == REAL else self.c) * row_blocks
                       for k in range(SLOTS)]
        nir.create_op("cce.vnchwconv", [sub(dst, 0, blocks * SLOTS * SLOTS),
                                         sub(src, 0, (REAL - 1) * self.row + self.prior
                                             + blocks * SLOTS)],
                      repeat=blocks, src_offsets=offsets,
                      dst_offsets=list(range(SLOTS)), src_rep_stride=1, dst_rep_stride=SLOTS)
        if body:
            done = min(count, body * SLOTS)
            copy("cce.copy_ub_to_l1", sub(dst, 0, done * SLOTS), sub(dst_l1, 0, done * SLOTS), 1, done)
        if tail:
            rest = count % SLOTS
            at = (body * SLOTS + SLOTS - rest) * SLOTS
            copy("cce.copy_ub_to_l1", sub(dst, at, rest * SLOTS),
                 sub(dst_l1, body * SLOTS * SLOTS, rest * SLOTS), 1, rest)


class SegmentedImageMap(ImageMap):
    """An `ImageMap` whose bands share L1 maps: `segment` consecutive bands
    read row windows of one map of their input rows, so the rows two bands
    both read (7x7/2: 5 of a 4-row band's 13) are staged once per segment,
    not once per band. A segment's map is loaded in pieces, a piece per
    band (the rows that band reads first): the next segment's piece j
    during band j of this one. In a run's first segment the first band waits
    for its own rows only, and loads the segment's other pieces during its
    mads; with 3 bands or more, the next segment's piece j then goes
    during band j + 1 (the last band loads the rest): on MTE3, the first
    band's stores then go before it, not behind its staging.
    Each band's pieces are issued ahead of its drains; two segment maps
    alternate in L1. Bands with a run-time first row fall back to a map
    each (`ImageMap`)."""

    def __init__(self, target: Target, image: ir.Value, band_pixels: int, segment: int,
                 fold: StemFold = StemFold(False, False), chunk: int = MAX_CHUNK):
        super().__init__(target, image, band_pixels, fold, chunk)
        self.segment = segment
        self.next_with_band = False  # `fill_next` after the band's first mads
        # (n, first output row) -> [map, its first input row, pieces, pieces loaded]
        self.maps: dict = {}

    def bounds(self, kernel, ho0: int) -> tuple[int, int, int]:
        """(first output row, end, end of the run) of the segment holding
        output row `ho0` (segments restart at every core's run)."""
        run = self.run or kernel.s.ho
        r0 = ho0 // run * run
        span = self.segment * kernel.t.rows
        s0 = r0 + (ho0 - r0) // span * span
        return s0, min(s0 + span, r0 + run), r0 + run

    def open(self, kernel, n: int, s0: int, end: int) -> None:
        """The map of the segment of output rows [s0, end) and its pieces:
        (first row in the map, rows) of the rows each band reads first."""
        band, _ = kernel.band(s0, end - s0)
        first = kernel.first_row(s0, band)
        pieces, done = [], 0
        for ho0 in range(s0, end, kernel.t.rows):
            b, _ = kernel.band(ho0, min(kernel.t.rows, end - ho0))
            last = band.in_rows if ho0 + kernel.t.rows >= end else \
                kernel.first_row(ho0, b) - first + b.in_rows
            pieces.append((done, last - done))
            done = last
        self.maps[(n, s0)] = [kernel.map_buffer(band), first, pieces, 0]

    def step(self, n: int, s0: int, upto: int) -> None:
        """Load the segment's pieces up to index `upto` not loaded yet."""
        entry = self.maps[(n, s0)]
        fm, first, pieces, loaded = entry
        shape = nir.memref_shape(fm)
        for a, rows in pieces[loaded:upto + 1]:
            if rows:
                self.load(n, first + a, rows, nir.subview(fm, [0, a, 0, 0], [1, rows, *shape[2:]]))
        entry[3] = max(loaded, min(upto + 1, len(pieces)))

    def fill_next(self, kernel, n: int, band, ho0: Index) -> None:
        """The pieces loaded during band `ho0` (after its first mads in
        program order: issued before them, they held up the weights' first
        piece and the band's own map on MTE2)."""
        if not isinstance(ho0, int):
            return super().fill_next(kernel, n, band, ho0)
        s0, end, run_end = self.bounds(kernel, ho0)
        j = (ho0 - s0) // kernel.t.rows
        run = self.run or kernel.s.ho
        first = s0 == ho0 // run * run  # the run's first segment
        self.step(n, s0, self.segment if first else j + 1)
        if end < run_end:
            if (n, end) not in self.maps:
                self.open(kernel, n, end, min(end + self.segment * kernel.t.rows, run_end))
            last = ho0 + band.rows >= end
            # a run's first segment of 3 bands or more: one band later
            late = first and end - s0 > 2 * kernel.t.rows
            self.step(n, end, len(self.maps[(n, end)][2]) if last else j - late)

    def band_map(self, kernel, n: int, band, ho0: Index, fm: ir.Value | None) -> ir.Value:
        if not isinstance(ho0, int):
            return super().band_map(kernel, n, band, ho0, fm)
        s0, end, run_end = self.bounds(kernel, ho0)
        j = (ho0 - s0) // kernel.t.rows
        early = False
        if (n, s0) not in self.maps:  # a run's first segment
            self.open(kernel, n, s0, end)
            # Of 3 bands or more (short bands, whose next rows are needed
            # soon): the weights the first two K chunks read go in one run
            # with the first band's second chunk, the other weights with the
            # next band's rows, loaded now: one GM latency each (the first
            # band's rows, then the weights in two runs of their own, held
            # MTE2 for three before the next band's rows). Stem image 7x7/2
            # 3->64 224: 49,579 -> 48,925 cycles (no M gap after the first
            # mad; all the weights ahead of the first chunk instead: 49,253);
            # not with 2-band segments (112x112: the weights only delay its
            # first rows, 15,853 -> 16,059).
            early = bool(kernel.loads) and len(self.maps[(n, s0)][2]) > 2
            if early:
                kc = min(kernel.t.kc, kernel.s.k1)
                self.between = lambda: kernel.need(0, 2 * kc)
        self.step(n, s0, j)  # this band's rows
        if early:
            if self.between is not None:  # rows of one chunk
                self.between()
                self.between = None
            kernel.flush_weights()
            self.step(n, s0, j + 1)
        seg, first = self.maps[(n, s0)][:2]
        shape = nir.memref_shape(seg)
        return nir.subview(seg, [0, kernel.first_row(ho0, band) - first, 0, 0],
                           [1, band.in_rows, *shape[2:]])


def segment_bands(kernel, most: int = 0) -> int:
    """Bands per shared L1 map of a conv's NCHW image (`SegmentedImageMap`):
    the most, up to `most` (default SEGMENT_BANDS), whose two maps fit L1
    beside the weights; 1 (a map per band) when not even two bands' do."""
    s, t = kernel.s, kernel.t
    weights = s.k1 * (s.co1 if t.weights_resident else 2 * min(t.n1, s.co1)) * kernel.frac * 2
    for bands in range(most or SEGMENT_BANDS, 1, -1):
        band, _ = kernel.band(0, min(s.ho, bands * t.rows))
        if 2 * s.c1 * band.in_rows * kernel.g.w * 32 + weights <= kernel.target.capacity("l1"):
            return bands
    return 1


def image_maps(kernel, band_pixels: int, spare: int = 0) -> ImageMap:
    """The L1 maps of a conv reading its NCHW image: shared by segments of
    bands where two segments' maps fit L1 (`segment_bands`), else a map per
    band; staged in chunks as long as `spare` bytes of UB more allow."""
    segment = segment_bands(kernel, FOLD_SEGMENT_BANDS if kernel.fold.rows else 0)
    chunk = longest_chunk(kernel.target, prior_pixels(kernel.g.w, kernel.fold.rows), spare)
    if segment > 1:
        return SegmentedImageMap(kernel.target, kernel.x5, band_pixels, segment, kernel.fold,
                                 chunk)
    return ImageMap(kernel.target, kernel.x5, band_pixels, kernel.fold, chunk)
