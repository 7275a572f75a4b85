"""The drain of a conv's kernel (`kernel.py`): L0C -> UB (rounded to f16
on the way for an f16 result), the bias added in UB, the conv's epilogue
group (`epilogue.py`), -> GM; a super tile's two halves in one slot and one
store where the tiling says so (`one_store`); an NCHW image's band both
halves' drains first and then their stores where their slots are taken
again (`stores_paired`)."""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv.epilogue import paired_loads
from npu.costmodel.conv.tiling import UNROLL_BANDS
from npu.kernels.cce_build import copy_bursts
from npu.passes.lower_conv.channel_pattern import channel_pattern, rows_of
from npu.passes.lower_conv.drain_cast import f16_pattern
from npu.passes.lower_conv.image_map import reads_image
from npu.passes.lower_conv.weights import FRAC

Index = int | ir.Value


class ConvDrain:
    """Mixin of `ConvKernel` (its `s`, `t`, `target`, `bias`, `pattern`,
    `epilogue`, `dest`, `out_type`, `ub` slots, `drains` and `supers` counts,
    `image`, `x5` and `pairs_tails`)."""

    def bias_pattern(self) -> ir.Value:
        """The bias of every Cout block repeated to one 256-byte repeat (4 rows
        of 16 f32, or 8 of 16 f16), [Co1, rows, 16] in UB in the output's
        type (converted from the bias's own, `drain_cast`): vadd reads it
        with repeat stride 0. Its vector work waits in `later_fills`
        (`fill_patterns`)."""
        pattern = channel_pattern(self.bias, self.s.co1, rows_of(self.out_type), self.later_fills)
        if nir.memref_element(self.bias) != self.out_type:  # an f32 bias, a drain rounding to f16
            return f16_pattern(self.target, pattern, self.later_fills)
        return pattern

    def fill_patterns(self) -> None:
        """The patterns' vector work (`channel_pattern`), here: after the
        first chunk's loads and before its mads, or before the first loop or
        run variant (each must see the patterns filled)."""
        for fill in self.later_fills:
            fill()
        self.later_fills.clear()

    def paired_loads(self) -> bool:
        """Whether the epilogue loads each super tile's operands in one copy
        (`ConvEpilogue.load_super`): not where bands share their last chunk
        (`tail_pairs`: a deferred band drains after the next one's first
        super tile)."""
        return paired_loads(self.epilogue.work) and not self.pairs_tails()

    held_stores: list | None = None  # a band's stores waiting for its last drain
    # The L1 map [Co1, rows, Wo, 16] the band's result is also copied to
    # (`band_steps`: the next 1x1 conv's input, kept on chip); None: GM only
    map_out: ir.Value | None = None
    gm_out = True  # with map_out: the result also stored to GM
    pool = None  # a max pool on the drain (`drain_pool`)

    def drains_after(self, n: int, ho0: Index, rows: int) -> tuple[int, int] | None:
        """(drains after this band's, drains a band) in a conv reading its
        NCHW image with no epilogue members (their result buffers rotate
        apart from the slots), for a static band; else None."""
        s, t, e = self.s, self.t, self.epilogue
        if not (isinstance(ho0, int) and self.image is not None and reads_image(self.x5)
                and (e is None or not (e.members or e.loaded))):
            return None
        run = self.image.run or s.ho
        end = min(s.ho, (ho0 // run + 1) * run)
        later = -(-(end - ho0 - rows) // t.rows)
        if not self.image.run:
            later += (s.batch - 1 - n) * -(-s.ho // t.rows)
        per_band = len(t.acc_tiles(min(t.n1, s.co1))) * -(-s.co1 // t.n1)
        return later * per_band, per_band

    def stores_paired(self, n: int, ho0: Index, rows: int) -> bool:
        """Whether a band's halves drain first and store next to each other:
        in a conv reading its NCHW image (`drains_after`), the last two
        bands whose drain slots later drains take again. There the set_flag
        freeing a slot directly follows its store (no staging behind it on
        MTE3) and holds MTE3 for the GM latency while the last bands' stores
        queue there; stores side by side share one (npu-insert-sync sinks a
        set through a run of stores). Not in the bands after them (no
        flags: the first store need not wait for the second drain), nor
        before (their stores share MTE3 with the staging: the first store
        waiting for the second drain held it up). Stem image 7x7/2 3->64
        224 (38 bands, 6 slots): 48,925 -> 48,389 cycles (pairing the last
        band alone 48,575; the last three too 48,707; every band whose
        slots return 48,389, but the same conv with an f32 result and its
        bias added in UB then took 55,962 cycles, not 53,678)."""
        after = self.drains_after(n, ho0, rows)
        return after is not None and len(self.ub) <= after[0] < len(self.ub) + 2 * after[1]

    def by_block(self, n: int, ho0: Index, rows: int) -> bool:
        """Whether the band drains and stores block by block: an NCHW
        image's last two bands (`drains_after`), whose drains (V) and
        stores (MTE3) are all that is left behind the last mads: MTE3
        starts a block's drain after the band's last mad, not a half's.
        Stem image 7x7/2 3->64 224: 48,389 -> 48,260 cycles (the last band
        alone: 48,389)."""
        after = self.drains_after(n, ho0, rows)
        return after is not None and after[0] < 2 * after[1]

    def drain_blocks(self, l0c, n: int, co0: int, n1: int, ho0: int, rows: int,
                     m1: int) -> None:
        """`drain` block by block into one slot, each block stored after its drain."""
        slot = self.ub[self.drains % len(self.ub)]
        self.drains += 1
        ob = nir.element_bytes(self.out_type if self.epilogue is None else
                               nir.memref_element(self.dest))
        for j in range(n1):
            ub = nir.subview(slot, [j * m1 * FRAC], [m1 * FRAC])
            self.drain_to_ub(nir.subview(l0c, [j * m1 * FRAC], [m1 * FRAC]), ub, co0 + j, 1, m1)
            self.store(ub, n, co0 + j, 1, ho0, rows, m1, ob)

    def drain_tile(self, l0c, n: int, s0: int, t0: int, n1: int, ns: int, ho0: Index,
                   rows: int, m1: int, prefetched: bool) -> None:
        """The drain of the super tile's half at t0 (of ns blocks from s0):
        with `one_store`, into its place in the super tile's slot, stored
        with the last half; else into a slot and stored on its own."""
        if not (self.t.one_store and ns > n1):
            if self.by_block(n, ho0, rows):
                self.drain_blocks(l0c, n, s0 + t0, n1, ho0, rows, m1)
                return
            if t0 == 0 and ns > n1 and self.stores_paired(n, ho0, rows):
                self.held_stores = []
            at = None
            if self.epilogue is not None and self.epilogue.paired:
                if t0 == 0 and not prefetched:
                    self.epilogue.load_super(n, s0, ns, ho0, rows, m1, self.s.ho, self.s.wo,
                                             self.supers)
                at, prefetched = (self.supers, t0 * m1 * FRAC), True
            self.drain(l0c, n, s0 + t0, n1, ho0, rows, m1, self.drains % len(self.ub), prefetched, at)
            self.drains += 1
            if self.held_stores is not None and t0 + n1 == ns:
                stores, self.held_stores = self.held_stores, None
                for args in stores:
                    self.store(*args)
            return
        slot = self.ub[self.drains % len(self.ub)]
        self.drain_to_ub(l0c, nir.subview(slot, [t0 * m1 * FRAC], [n1 * m1 * FRAC]), s0 + t0,
                         n1, m1)
        if t0 + n1 == ns:
            args = (nir.subview(slot, [0], [ns * m1 * FRAC]), n, s0, ns, ho0, rows, m1,
                    nir.element_bytes(self.out_type))
            self.drains += 1
            if not self.pairs_stores:
                self.store(*args)
            elif self.pending_store is None:
                self.pending_store = args
            else:
                self.flush_store()
                self.store(*args)

    pairs_stores = False  # one_store slots stored two at a time (`stores_pair`)
    pending_store: tuple | None = None

    def stores_pair(self, whole: bool) -> bool:
        """Whether each super tile's store (`one_store`) waits for the next
        one's, so the two leave side by side and share one set_flag
        (npu-insert-sync sinks a set through a run of stores): each flag
        freeing a slot holds MTE3 for a GM latency, which then comes once
        per two stores. Only a conv whose slots are all it has in UB (no
        epilogue, pool, NCHW image or int8 staging), emitted straight for
        the `whole` conv (a held store never crosses a loop or a core's run
        variant); the slots then take all of UB, and it pairs only with at
        least four of them (`kernel.emit`: two stored while two drain). 1x1
        64->256 56 (ResNet-50 layer1's downsample): MTE3 25.5k busy + 26
        latencies paced it; in the model 36,138 -> 31,606 cycles."""
        s, t = self.s, self.t
        return (whole and t.one_store and self.epilogue is None and self.pool is None
                and not s.int8 and not reads_image(self.x5)
                and s.batch * -(-s.ho // t.rows) <= UNROLL_BANDS)

    def flush_store(self) -> None:
        """The super tile's store held for the next one's (`pairs_stores`)."""
        if self.pending_store is not None:
            args, self.pending_store = self.pending_store, None
            self.store(*args)

    def drain(self, l0c, n: int, co0: int, n1: int, ho0: Index, rows: int, m1: int,
              slot: int, prefetched: bool = False, at: tuple[int, int] | None = None) -> None:
        """L0C -> UB (rounded to f16 on the way for an f16 result), + bias in the
        result's type, -> GM: rows*Wo windows of each of the n1 blocks."""
        s = self.s
        ub = nir.subview(self.ub[slot], [0], [n1 * m1 * FRAC])
        self.drain_to_ub(l0c, ub, co0, n1, m1)
        ob = nir.element_bytes(self.out_type)
        if self.epilogue is not None:
            if not prefetched:
                self.epilogue.prefetch(n, co0, n1, ho0, rows, m1, s.ho, s.wo, self.drains)
            ub = self.epilogue.apply(ub, co0, n1, rows, m1, s.wo, self.drains, at)
            ob = nir.element_bytes(nir.memref_element(self.dest))
        self.store(ub, n, co0, n1, ho0, rows, m1, ob)
        also = self.epilogue.also if self.epilogue is not None else None
        if also is not None:  # the f32 value the f16 result copies (`also_stored`)
            self.store(self.epilogue.also_tile, n, co0, n1, ho0, rows, m1,
                       nir.element_bytes(nir.memref_element(also)), also)

    def drain_to_ub(self, l0c, ub, co0: int, n1: int, m1: int) -> None:
        """L0C -> `ub` (rounded to f16 on the way for an f16 result), + bias:
        the n1 blocks of m1 fractals from Cout block co0."""
        ob = nir.element_bytes(self.out_type)
        convert = {"convert": "f32_to_f16"} if self.out_type == "f16" else {}
        if self.drain_relu is not None:  # the move's ReLU
            convert = {"convert": "f32_to_f16_relu"}
        nir.create_op("cce.copy_l0c_to_ub", [l0c, ub], n_burst=1, burst_len=n1 * m1 * 32,
                      src_gap=0, dst_gap=0, **convert)
        if self.pattern is not None:
            per_block = 256 // ob  # elements of one repeat
            for j in range(n1):
                block = nir.subview(ub, [j * m1 * FRAC], [m1 * FRAC])
                bias = nir.subview(self.pattern, [(co0 + j) * per_block], [per_block])
                self.vector("cce.vadd", block, block, bias, m1 * ob, bias_rep=0)

    def store(self, ub, n: int, co0: int, n1: int, ho0: Index, rows: int, m1: int,
              ob: int, dest: ir.Value | None = None) -> None:
        """UB -> GM: rows*Wo windows of each of the n1 blocks from Cout block co0
        (held while the band's stores are paired, `stores_paired`); into
        `dest` if given (the epilogue's `also`), else the conv's result."""
        if self.held_stores is not None:
            self.held_stores.append((ub, n, co0, n1, ho0, rows, m1, ob, dest))
            return
        if self.pool is not None:  # only the pooled rows leave (`drain_pool`)
            self.pool_store(ub, n, co0, n1, ho0, rows, m1)
            return
        s, t = self.s, self.target
        valid = rows * s.wo
        if self.map_out is not None and dest is None:
            self.store_to_map(ub, co0, n1, rows, m1, ob)
            if not self.gm_out:  # nothing else reads the result (`conv_chain`)
                return
        dst = nir.subview(self.dest if dest is None else dest, [n, co0, ho0, 0, 0],
                          [1, n1, rows, s.wo, 16])
        copy_bursts("cce.copy_ub_to_gm", ub, dst, n1,
                    t.blocks(valid * 16 * ob), src_gap=t.blocks((m1 * 16 - valid) * 16 * ob),
                    dst_gap=t.blocks((s.ho - rows) * s.wo * 16 * ob))

    def store_to_map(self, ub, co0: int, n1: int, rows: int, m1: int, ob: int) -> None:
        """UB -> L1: the tile's rows*Wo windows of each of its n1 blocks into
        `map_out` (the band's rows from its row 0), before its store to GM:
        the consumer's band waits for this copy, nothing waits for the store."""
        _, map_rows, w, c0 = nir.memref_shape(self.map_out)
        assert ob == 2 and c0 == 16 and w == self.s.wo and rows <= map_rows, \
            "an f16 map of the band's rows x Wo"
        t = self.target
        dst = nir.subview(self.map_out, [co0, 0, 0, 0], [n1, rows, w, 16])
        copy_bursts("cce.copy_ub_to_l1", ub, dst, n1, t.blocks(rows * w * 16 * ob),
                    src_gap=t.blocks((m1 * 16 - rows * w) * 16 * ob),
                    dst_gap=t.blocks((map_rows - rows) * w * 16 * ob))

    def vector(self, name: str, dst, src0, src1, repeats: int, bias_rep: int = 8) -> None:
        """`dst = src0 op src1` in the output's type over `repeats` 256-byte
        repeats (src1 with repeat stride `bias_rep`, 0: the same repeat every time)."""
        mr = self.target.max_repeat
        lanes = self.target.lanes(nir.element_bytes(nir.memref_element(dst)))
        for r0 in range(0, repeats, mr):
            rep = min(mr, repeats - r0)
            d = nir.subview(dst, [r0 * lanes], [rep * lanes])
            a = nir.subview(src0, [r0 * lanes], [rep * lanes])
            b = src1 if bias_rep == 0 else nir.subview(src1, [r0 * lanes], [rep * lanes])
            nir.create_op(name, [d, a, b], repeat=rep, mask=lanes, dst_blk_stride=1,
                          src0_blk_stride=1, src1_blk_stride=1, dst_rep_stride=8,
                          src0_rep_stride=8, src1_rep_stride=bias_rep)
