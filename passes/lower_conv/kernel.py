"""The cce code of one conv (see the package docstring for the schedule).

Bands of output rows with the same feature-map register (the same pads at
their edges, the same number of input rows) form one `scf.for` (the first
and last bands, which see the top and bottom pads, are usually their own);
everything inside a band is static: the img2col fields are attributes.
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv.band_layout import band_layout
from npu.costmodel.conv.first_band import DEFER_BANDS
from npu.costmodel.conv.tiling import UNROLL_BANDS, ConvShape, ConvTiling
from npu.dialects.ascend_conv import ConvGeometry
from npu.kernels.cce_build import by_run, lin
from npu.passes.lower_conv.band_maps import Band, BandMaps
from npu.passes.lower_conv.channel_pattern import Later
from npu.passes.lower_conv.cube_bias import ones_map
from npu.passes.lower_conv.cube_residual import CubeResidual
from npu.passes.lower_conv.drain import ConvDrain
from npu.passes.lower_conv.drain_pool import DrainPool
from npu.passes.lower_conv.epilogue import ConvEpilogue
from npu.passes.lower_conv.footprint import setup_plan
from npu.passes.lower_conv.final_drain import FinalDrain, HeldChunk
from npu.passes.lower_conv.image_map import ImageMap, image_maps, reads_image
from npu.passes.lower_conv.img2col_emit import Img2colEmit
from npu.passes.lower_conv.int8_map import Int8Map
from npu.passes.lower_conv.stem_fold import StemFold
from npu.passes.lower_conv.tail_pairs import Deferred, StraightBands, TailPairs
from npu.passes.lower_conv.weights import FRAC, FRAC_INT8, ConvWeights, Load
from npu.target import Target

Index = int | ir.Value


class ConvKernel(DrainPool, BandMaps, ConvWeights, ConvDrain, TailPairs, FinalDrain, Img2colEmit,
                 CubeResidual):
    def __init__(self, target: Target, g: ConvGeometry, s: ConvShape, t: ConvTiling,
                 x5: ir.Value, wz: ir.Value, bias: ir.Value | None, out5: ir.Value,
                 epilogue: ConvEpilogue | None = None, ub_bytes: int | None = None,
                 pad_value: int = 0, fold: StemFold = StemFold(False, False)):
        self.target, self.g, self.s, self.t = target, g, s, t
        self.x5, self.wz, self.bias, self.out5 = x5, wz, bias, out5
        # The int8 form: i8 maps and weights (fractals of 16 x 32), i32 in L0C.
        self.in_type, self.frac, self.acc_type = ("i8", FRAC_INT8, "i32") if s.int8 else ("f16", FRAC, "f32")
        self.pad_value = pad_value
        self.fold = fold  # a folded stem's map and weights (`stem_fold`)
        # f16 where the drain rounds (drain_cast.py)
        self.out_type = "f16" if epilogue is not None and epilogue.cast is not None else nir.memref_element(out5)
        # With an epilogue the drain stores its last member's result instead.
        # One of no members (the drain's own cast / ReLU) may drain as none (`drains_as_none`).
        self.epilogue = None if epilogue is not None and epilogue.as_none else epilogue
        # a residual Add in the cube (`cube_residual`)
        self.residual = epilogue.residual if epilogue is not None else None
        self.drain_relu = epilogue.relu if epilogue is not None else None
        self.pool = epilogue.pool if epilogue is not None else None  # on the drain (`drain_pool`)
        self.dest = epilogue.result if epilogue is not None else out5
        self.ext_h = g.dilations[0] * (g.kh - 1) + 1
        self.ub_bytes = ub_bytes or target.capacity("ub")  # the tiling's budget
        # a deferred band's img2cols read views of their map blocks (`defer_map`)
        self.split_map = self.last_chunk = False
        self.run_bands = 1  # this core's bands (`emit_rows`)
        self.later_fills: Later = []  # the patterns' vector work (`fill_patterns`)
        self.next_map = None  # the next band's map copies (`StraightBands.flush`)

    # -- the plan ------------------------------------------------------------
    def band(self, ho0: int, rows: int) -> tuple[Band, int]:
        """(the band of output rows [ho0, ho0+rows), its first input row)."""
        g = self.g
        key, r0 = band_layout(ho0, rows, g.h, g.strides[0], g.pads[0], self.ext_h, self.s.row_skip)
        return Band(*key), r0

    def band_groups(self, h0: int, h1: int) -> list[tuple[Band, int, int]]:
        """(band, its first output row, count) of the consecutive bands alike
        that cover output rows [h0, h1)."""
        rows = self.t.rows
        groups: list[tuple[Band, int, int]] = []
        for ho0 in range(h0, h1, rows):
            b, _ = self.band(ho0, min(rows, h1 - ho0))
            if groups and groups[-1][0] == b:
                groups[-1] = (b, groups[-1][1], groups[-1][2] + 1)
            else:
                groups.append((b, ho0, 1))
        return groups

    def row_variants(self, parts: int) -> list[tuple[list[tuple[Band, int, int]], int]]:
        """The band plans of a conv whose cores share its rows in `parts`
        runs: (plan of the first run, of an inner one, of the last), each
        with first rows relative to its run's start, and the rows per run.
        Raises ValueError when the inner runs do not share one plan (they
        read padding rows)."""
        ho = self.s.ho
        run = ho // parts

        def plan(r: int) -> list[tuple[Band, int, int]]:
            return [(b, h - r * run, n) for b, h, n in self.band_groups(r * run, (r + 1) * run)]

        inner = [plan(r) for r in range(1, parts - 1)]
        if any(p != inner[0] for p in inner):
            raise ValueError(f"the inner runs of {run} output rows read padding rows")
        return [plan(0), *inner[:1], plan(parts - 1)], run

    # -- emission ------------------------------------------------------------
    def emit(self, row_parts: tuple[int, ir.Value] | None = None) -> None:
        """The whole conv, or with `row_parts` = (parts, this core's part) only the core's run of
        output rows: static plans for the first run, the inner runs (at a run-time offset), the last."""
        s, t = self.s, self.t
        self.setup(row_parts, whole=row_parts is None)
        if row_parts is None:
            self.emit_rows(self.band_groups(0, s.ho), 0, s.batch * -(-s.ho // t.rows))
            self.flush_store()
            return
        self.fill_patterns()
        parts, part = row_parts
        (first, *inner, last), run = self.row_variants(parts)
        if self.image is not None:
            self.image.run = run
        loads, bands = list(self.loads), -(-run // t.rows)

        def run_plan(groups: list[tuple[Band, int, int]], base: Index) -> None:
            self.loads = list(loads)
            self.emit_rows(groups, base, bands)

        by_run(parts, part, lambda: run_plan(first, 0), lambda: run_plan(last, (parts - 1) * run),
               (lambda: run_plan(inner[0], lin((part, run)))) if inner else None)

    def setup(self, row_parts: tuple[int, ir.Value] | None = None,
              cube: tuple[list, list, list] | None = None, whole: bool = False) -> None:
        """The buffers live for the whole conv (their sizes: `footprint.setup_plan`, which a
        caller emitting the bands itself asks before emission: `band_steps`). `cube`: another
        kernel's L0A halves, L0B halves and L0C sets, at least this one's, to take in turn
        with it (two kernels' bands interleaved: each alone takes half of L0A/L0B/L0C).
        `whole`: `emit` emits the whole conv straight (its stores may pair)."""
        s = self.s
        p = setup_plan(self, whole)
        self.pairs_stores = p.pairs_stores
        if cube is not None:
            sizes = [nir.memref_shape(bufs[0])[0] for bufs in cube]
            assert all(have >= need for have, need in zip(sizes, (p.l0a, p.l0b, p.l0c))), \
                f"the shared L0A/L0B/L0C {sizes} are smaller than {p.l0a, p.l0b, p.l0c}"
            assert all(nir.memref_element(bufs[0]) == e
                       for bufs, e in zip(cube, (self.in_type, self.in_type, self.acc_type)))
        self.pattern = self.bias_pattern() if self.bias is not None else None
        self.plan_weights(share=row_parts is not None)
        self.l0c = [nir.alloc([p.l0c], self.acc_type, "l0c")
                    for _ in range(p.l0c_sets)] * (3 - p.l0c_sets) if cube is None else \
            [nir.subview(c, [0], [p.l0c]) for c in cube[2]]
        if self.epilogue is not None:  # its per-channel operands' patterns, staged once
            self.epilogue.stage_patterns(s.co1, self.later_fills)
        if self.pool is not None:
            self.setup_pool()
        self.ub = [nir.alloc([p.slot_blocks * p.m1 * FRAC], self.out_type, "ub")
                   for _ in range(p.slots)]
        if self.epilogue is not None:
            self.epilogue.allocate(p.half * p.m1 * FRAC, self.paired_loads(), p.epilogue_sets)
        # the bias in the cube: the A side of its K fractal (`cube_bias`)
        self.ones_fm = ones_map(self.target, p.band_pixels // self.g.w, self.g.w) if s.ones else None
        staged = Int8Map if s.int8 else ImageMap if reads_image(self.x5) else None
        self.image = image_maps(self, p.band_pixels, p.spare) if staged is ImageMap else \
            staged(self.target, self.x5, p.band_pixels) if staged is not None else None
        if cube is not None:
            self.l0a, self.l0b = ([nir.subview(b, [0], [size]) for b in bufs]
                                  for bufs, size in zip(cube[:2], (p.l0a, p.l0b)))
            return
        self.l0a = [nir.alloc([p.l0a], self.in_type, "l0a") for _ in range(2)]
        self.l0b = [nir.alloc([p.l0b], self.in_type, "l0b") for _ in range(2)]
        if self.residual is not None:
            self.setup_residual({min(self.t.rows, s.ho - h0) for h0 in range(0, s.ho, self.t.rows)})

    def begin_rows(self, groups: list[tuple[Band, int, int]], bands: int) -> None:
        """The per-run state before the first of `bands` bands a run (plan `groups`): the turns
        of the L0C sets, drain slots and L0A/L0B halves, the weights still to load, the first
        bands' maps in blocks (`defer_map`). Also the start of a caller's bands (`band_steps`)."""
        s, t = self.s, self.t
        self.parity, self.drains, self.chunk, self.supers = 0, 0, 0, 0
        self.run_bands = s.batch * bands  # (`map_in_blocks_pays`)
        # Streamed weights: the first super tile in pieces (each run plan's own
        # code), unless MTE2 bounds the conv: there each piece's flag only adds
        # a GM latency to the busiest pipe (3x3 512->512 7: 86,315 -> 86,665)
        self.streamed_pieces = self.streamed_first = not t.weights_resident and not self.mte2_bound()
        if self.loads and ((groups[0][2] > 1 and (bands > UNROLL_BANDS or self.mte2_bound()))
                           or s.batch > 1):
            self.flush_weights()
        # the first two bands' maps go out block by block (`defer_map`)
        self.deferred = DEFER_BANDS if (self.loads and t.weights_resident) or self.streamed_pieces else 0

    def emit_rows(self, groups: list[tuple[Band, int, int]], base: Index, bands: int) -> None:
        """The bands of `groups` (first rows relative to `base`) of every image: a band alone has its
        own L1 map; a run of bands alike is a loop of two bands per iteration, or straight code."""
        s, t = self.s, self.t
        self.begin_rows(groups, bands)
        # The maps of bands outside loops get their own L1 buffers, live for
        # the whole run: their loads never wait for another band's img2col.
        maps = {(n, h0): self.map_buffer(band) for n in range(s.batch)
                for band, h0, count in groups if count == 1}
        unrolled = bands <= UNROLL_BANDS or self.pool is not None  # (static rows: `drain_pool`)
        # straight code's bands, emitted in order (`tail_pairs.StraightBands`)
        straight = StraightBands(self, base)
        for n in range(s.batch):
            for band, h0, count in groups:
                if count == 1:
                    straight.add(n, band, h0, maps[(n, h0)])
                    continue
                if unrolled:  # a wait before a loop would stall its first band
                    pair: list = []
                    for k in range(count):
                        straight.add(n, band, h0 + k * t.rows, pair=pair, k=k)
                    continue
                pairs, rest = divmod(count, 2)
                if pairs == 1:
                    straight.add(n, band, h0)
                    straight.add(n, band, h0 + t.rows)
                elif pairs:
                    straight.flush()
                    self.fill_patterns()
                    loop = nir.for_loop(0, pairs)
                    with ir.InsertionPoint(loop.body):
                        first = lin((loop.induction_variable, 2 * t.rows), (base, 1), (h0, 1))
                        self.emit_band(n, band, first, defer=straight.pairs)
                        self.emit_band(n, band, lin((first, 1), (t.rows, 1)))
                        nir.yield_()
                if rest:
                    straight.add(n, band, h0 + 2 * pairs * t.rows)
        straight.flush()

    def emit_band(self, n: int, band: Band, ho0: Index, fm: ir.Value | None = None,
                  defer: bool = False, map_ready: bool = False) -> None:
        """The band of output rows from `ho0` of image `n`; `defer`: its last
        K fractal and drains go with the next band's first (`tail_pairs`)."""
        g, s, t = self.g, self.s, self.t
        r0 = self.first_row(ho0, band)
        if self.image is not None:  # staged: a small-channel conv's NCHW image, an int8 map
            fm = self.image.band_map(self, n, band, ho0, fm)
        fm = fm if fm is not None else self.map_buffer(band)
        blocks = [Load((0, 0 if s.small else c1 * g.kh * g.kw), None,
                       lambda c1=c1: self.copy_map_block(fm, n, band, r0, c1))
                  for c1 in range(s.c1 if self.image is None and not map_ready else 0)]
        # the deferred blocks' img2cols read their own blocks only (views of
        # the map), so each waits for its blocks' copies, not the whole map's
        self.split_map = self.defer_map(band) and not map_ready
        self.deferred -= 1
        if self.split_map:
            self.map_ends = self.map_runs()
        for block in blocks:
            self.queue(block) if self.split_map else block.copy()
        if self.residual is not None:  # in the map's run (`cube_residual`)
            self.load_residual(n, ho0, band.rows)
        self.first_piece()
        m1 = -(-band.rows * s.wo // 16)
        kc = min(t.kc, s.k1)
        l0a, l0b = self.l0a, self.l0b
        # weight pieces far enough ahead of their chunks to hide the GM latency
        # and their own transfer
        ahead = self.ahead_pieces(m1)
        # L0A/L0B halves alternate across bands too: restarting at half 0 made
        # a band with an odd number of chunks start on the half its last chunk
        # was still being read from (MTE1 then waited for that chunk's mads:
        # the stem's 28 bands of 7 chunks, 60,129 -> see bench/conv.py)
        chunk = first = self.chunk
        for s0 in range(0, s.co1, t.n1):
            with_map = s0 == t.n1 and self.next_map is not None
            if with_map:
                self.next_map()
                self.next_map = None
            ns = min(t.n1, s.co1 - s0)
            w_l1, pitch, col = self.tile_weights(s0, ns)
            tiles = t.acc_tiles(ns)
            # Streamed weights: the drains' operands join the run of the super
            # tile's weight loads (one GM latency for the run). With resident
            # weights each drain loads its own: at the super tile's start the
            # load would wait for the previous drain to free its set, holding
            # up the next band's map behind it on MTE2. But the super tile
            # whose start copies the next band's map (`StraightBands`) loads
            # its operands right after it, paired: one run, one flag (1x1
            # 64->256 56 with ResNet's Add + ReLU: 14 bands, MTE2 busy 46,885
            # -> 42,335; the three sets of `epilogue_sets` keep the set free).
            prefetch = self.epilogue is not None and (
                self.w_l1 is None or (with_map and self.epilogue.paired))
            if prefetch and self.epilogue.paired:
                self.epilogue.load_super(n, s0, ns, ho0, band.rows, m1, s.ho, s.wo, self.supers)
            elif prefetch:
                for k, (t0, n1) in enumerate(tiles):
                    self.epilogue.prefetch(n, s0 + t0, n1, ho0, band.rows, m1, s.ho, s.wo,
                                           self.drains + k)
            l0c = [nir.subview(self.l0c[self.parity], [t0 * m1 * FRAC], [n1 * m1 * FRAC])
                   for t0, n1 in tiles]
            if s.diagonal:
                chunk = self.diagonal_tiles(fm, band, tiles, l0c, w_l1, pitch, col, s0, m1, kc,
                                            chunk)
            # with a deferred band before it, this band's K order starts at
            # the last fractal (`tail_pairs`); deferring, it stops before it
            shared = self.held is not None
            defer = defer and not shared  # bands pair up: one defers, the next shares
            if shared:
                chunk = self.shared_tail(fm, band, tiles, l0c, w_l1, pitch, col, m1, chunk)
            k_end = s.k1 - 1 if shared or defer else s.k1
            # the conv's last super tile may go accumulator by accumulator (`final_groups`)
            groups = self.final_groups(n, ho0, band, s0, tiles, l0c, m1, defer or shared)
            for g, (tiles, l0c) in enumerate(groups):
                if g:  # the group before drains behind this one's mads
                    for (t0, n1), c in zip(*groups[g - 1]):
                        self.drain_tile(c, n, s0, t0, n1, ns, ho0, band.rows, m1, prefetch)
                early = False
                if self.residual is not None:  # the super tile's first mads (`cube_residual`)
                    chunk = self.residual_mads(band, tiles, l0c, s0, m1, chunk)
                    first = chunk if s0 == 0 and tiles is groups[0][0] else first
                for kp0 in range(0 if not s.diagonal else s.k1, k_end, kc):
                    kcj = min(kc, k_end - kp0)
                    self.need(s0 // t.n1, kp0 + kcj)
                    # the band's last chunk reads the whole map: a later band's copies
                    # into these bytes then wait for one img2col, not one per block
                    self.last_chunk = s0 + t.n1 >= s.co1 and kp0 + kcj >= s.k1
                    a, b = l0a[chunk % 2], l0b[chunk % 2]
                    chunk += 1
                    if m1 < kcj and not s.small and not s.ones:  # fewer instructions: one per M fractal
                        for mm in range(m1):
                            self.img2col_row(fm, a, band, kp0, mm, kcj)
                    else:
                        for tt in range(kcj):
                            self.img2col(fm, a, band, kp0 + tt, tt, kcj, m1)
                    # The last chunk's halves drain right after their own mads
                    # (between them in program order: one flag after both held
                    # the first half's drain for the second's mads); with an
                    # epilogue too where it loads nothing (ResNet-50 layer3
                    # conv1 + ReLU: 20,885 -> 20,157 cycles in the model)
                    early = (kp0 + kcj >= k_end and not defer and len(tiles) > 1 and self.image is None
                             and (self.epilogue is None or not self.epilogue.loaded) and not self.loads)
                    if self.final_pieces(n, ho0, band, s0, kp0, kcj, k_end, kc, tiles, defer):
                        # the conv's last two chunks piece by piece (`final_drain`)
                        self.final_loads(b, w_l1, pitch, col, tiles, kp0, kcj,
                                         None if kp0 + kcj < k_end else
                                         lambda: self.held_step(tiles, l0c, m1))
                        self.fill_patterns()
                        chunk_ops = HeldChunk(a, b, kp0, kcj, kp0 > 0 or shared or self.residual is not None)
                        if kp0 + kcj < k_end:
                            self.final_held = chunk_ops
                        else:
                            self.final_chunk(chunk_ops, tiles, l0c, m1, n, s0, ho0, band.rows)
                            early = True  # drained piece by piece
                        continue
                    for t0, n1 in tiles:
                        self.load_weights(w_l1, b, pitch, col + t0, kp0, kcj, n1, kcj * t0)
                    self.fill_patterns()
                    for (t0, n1), c in zip(tiles, l0c):
                        f = self.frac
                        nir.create_op("cce.mad", [nir.subview(a, [0], [m1 * kcj * f]),
                                                  nir.subview(b, [kcj * t0 * f], [kcj * n1 * f]), c],
                                      m=m1 * 16, n=kcj * f // 16, k=n1 * 16,
                                      accumulate=kp0 > 0 or shared or self.residual is not None)
                        if early:
                            self.drain_tile(c, n, s0, t0, n1, ns, ho0, band.rows, m1, prefetch)
                    # the next pieces of weight rows, after this chunk's loads in program
                    # order (sync insertion flags a consumer after every copy before it)
                    for _ in range(ahead if chunk == first + 1 and not self.split_map else 1):
                        if self.loads:
                            self.ahead()
            if s0 == 0 and self.image is not None and not self.image.next_with_band:
                self.image.fill_next(self, n, band, ho0)  # behind this band's mads, before its drains
            if defer:
                self.held = Deferred(n, band, ho0, fm, m1, tuple(tiles), tuple(l0c), s0, ns)
            for (t0, n1), c in zip(tiles, l0c) if not (early or defer) else ():
                self.drain_tile(c, n, s0, t0, n1, ns, ho0, band.rows, m1, prefetch)
            # the next super tile accumulates into the other L0C set, so its
            # mads need not wait for this one's drain
            self.parity ^= 1
            self.supers += 1
        self.flush_weights()
        assert self.final_held is None, "a held last-but-one chunk without its last chunk"
        self.chunk = chunk
        self.split_map = self.last_chunk = False
        self.res_turn += 1  # (`cube_residual`)

    def diagonal_tiles(self, fm, band: Band, tiles, l0c, w_l1, pitch: int, col: int, s0: int,
                       m1: int, kc: int, chunk: int) -> int:
        """Block-diagonal form: each Cout block of the super tile reduces over
        its own input block (img2col at c1 = the block) into its own L0C
        fractals; chunks alternate the L0A/L0B halves. Returns the chunk count."""
        s = self.s
        for (t0, n1), c in zip(tiles, l0c):
            for j in range(n1):
                cj = nir.subview(c, [j * m1 * FRAC], [m1 * FRAC])
                for kp0 in range(0, s.k1, kc):
                    kcj = min(kc, s.k1 - kp0)
                    self.need(s0 // self.t.n1, kp0 + kcj)
                    a, b = self.l0a[chunk % 2], self.l0b[chunk % 2]
                    chunk += 1
                    for tt in range(kcj):
                        self.img2col(fm, a, band, kp0 + tt, tt, kcj, m1, s0 + t0 + j)
                    self.load_weights(w_l1, b, pitch, col + t0 + j, kp0, kcj, 1, 0)
                    self.fill_patterns()
                    nir.create_op("cce.mad", [nir.subview(a, [0], [m1 * kcj * FRAC]),
                                              nir.subview(b, [0], [kcj * FRAC]), cj],
                                  m=m1 * 16, n=kcj * 16, k=16, accumulate=kp0 > 0)
                    if self.loads:
                        self.ahead()
        return chunk
