"""The additive mask in the fused attention
(`npu.costmodel.attention.key_mask`). A key mask is loaded once per kernel and laid out so
that one vadd per key slab adds it to every row of the scores. A slab's
row holds its 16 keys; f32: one repeat covers four rows, so each key block
gets its 16 values four times over (one repeat, read with repeat stride 0);
f16: a row is one block, read by every block of a repeat (block stride 0).
In f16 the mask is clamped to the finite f16 range first: a key masked by a
value below -65504 is still removed (its exp underflows to 0), but a row
whose every key is masked then gets the softmax of its raw scores where
f32 would give every key the same weight (the f16 softmax's own limit, as
for scores past 65504). A mask whose row ends inside a 32-byte block (a seq
not a multiple of 8) has its last values realigned in UB (`load_mask_tail`).

A mask of the scores ([S, S]): `npu.passes.lower_attention.scores_mask`."""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.vector.recipes import Compute, cast_compute
from npu.costmodel.vector.tiling import split_repeats
from npu.kernels.cce_build import Index, View, copy, lin, sub
from npu.kernels.vector_compute import emit, emit_flat_run
from npu.passes.lower_attention.softmax_f16 import F16_MAX
from npu.passes.transpose_general import compact_blocks, expand_to_blocks

ROWS_PER_F32_REPEAT = 4  # 64 lanes of a repeat / 16 keys a row


class KeyMask:
    """Mixed into the kernel (`a`, `p`, `t`, `elem`, `granule`, `fill`)."""

    def prepare_key_mask(self) -> None:
        """The mask GM -> UB (padded keys: 0; their own bias masks them) and
        its per-key-block layout for `add_key_mask`; a mask of the scores
        (`ScoresMask`) made ready."""
        a = self.a
        self.mask_layout: ir.Value | None = None
        self.prepare_scores_mask()
        if a.key_mask is None:
            return
        n = a.seq_blocks * 16
        raw = nir.alloc([n], "f32", "ub")
        if a.seq < n:
            self.fill(raw, n, "f32", 0.0)
        flat, per_block = nir.flatten_memref(a.key_mask), self.granule // 4
        whole, tail = divmod(a.seq, per_block)
        if whole:
            copy("cce.copy_gm_to_ub", sub(flat, 0, whole * per_block),
                 sub(raw, 0, whole * per_block), 1, whole)
        if tail:
            self.load_mask_tail(flat, raw, whole * per_block, tail)
        if self.elem == "f16":
            for vop, bound in (("cce.vmaxs", -F16_MAX), ("cce.vmins", F16_MAX)):
                emit_flat_run(Compute("scalar", vop=vop, scalar=bound), self.t, n,
                              (raw, "f32"), [(raw, "f32")])
            half = nir.alloc([n], "f16", "ub")
            emit_flat_run(cast_compute("f32", "f16", "rint"), self.t, n, (half, "f16"),
                          [(raw, "f32")])
            self.mask_layout = half
            return
        rows = nir.alloc([a.seq_blocks * 16 * ROWS_PER_F32_REPEAT], "f32", "ub")
        row_blocks = 16 * 4 // self.granule
        for r in range(ROWS_PER_F32_REPEAT):  # row r of every key block's four
            dst = sub(rows, r * 16, (a.seq_blocks - 1) * 16 * ROWS_PER_F32_REPEAT + 16)
            copy("cce.copy_ub_to_ub", raw, dst, a.seq_blocks, row_blocks, 0,
                 (ROWS_PER_F32_REPEAT - 1) * row_blocks)
        self.mask_layout = rows

    def load_mask_tail(self, flat: ir.Value, raw: ir.Value, at: int, tail: int) -> None:
        """raw[at:at + tail] = the key mask's last `tail` values, the rest of
        that block 0 (a seq that is not whole 32-byte blocks): `load_tail`."""
        self.load_tail(flat, self.a.seq, tail, raw, at)

    def load_tail(self, src: ir.Value, end: Index, tail: int, dst: ir.Value, at: Index) -> None:
        """dst[at:at + tail] = src[end - tail:end] (f32, GM), the rest of that
        UB block 0, `at` on a block. A burst's UB side starts on a block, so
        the values are realigned as `gather_unaligned` does: one block read
        from a burst that ends at `end` (a source under one block: from its
        start, into its GM granule's padding), each value expanded to a
        block of its own (vnchwconv), the `tail` wanted blocks moved to the
        front of a zeroed run of 16, compacted back (vnchwconv) and its first
        block copied into place."""
        b = self.granule // 4  # f32 values a block
        if isinstance(end, int):
            begin: Index = max(end - b, 0)
            shift = end - tail - begin  # of the wanted values in the staged block
        else:  # (a row past the source's first block)
            begin, shift = lin((end, 1), (1, -b)), b - tail
        staged = nir.alloc([b], "f32", "ub")
        copy("cce.copy_gm_to_ub", sub(src, begin, b), staged, 1, 1)
        expanded = nir.alloc([b * b], "f32", "ub")
        expand_to_blocks(self.p, staged, expanded, b, 4)
        rows = self.t.fractal  # blocks one compacting vnchwconv repeat reads
        assembled = nir.alloc([rows * b], "f32", "ub")
        self.fill(assembled, rows * b, "f32", 0.0)
        copy("cce.copy_ub_to_ub", sub(expanded, shift * b, tail * b),
             sub(assembled, 0, tail * b), 1, tail)
        out_blocks = rows // b
        compacted = nir.alloc([(2 * out_blocks + 2) * b], "f32", "ub")
        compact_blocks(self.p, assembled, compacted, 1, 4)
        copy("cce.copy_ub_to_ub", sub(compacted, 0, b), sub(dst, at, b), 1, 1)

    def add_key_mask(self, scores: ir.Value, kbk: int, rows: int, key0: Index,
                     scaled: bool) -> None:
        """scores += the masks on key slabs key0.. (kbk of them) that are
        added at this point: after the scale (`scaled`) or before it (a mask
        of the scores: the step's tile, `ScoresMask`)."""
        a = self.a
        if a.scores_bias is not None and a.bias_scaled == scaled:
            self.add_mask_tile(scores, kbk, rows)
        if a.key_mask is None or a.mask_scaled != scaled:
            return
        es = 2 if self.elem == "f16" else 4
        lanes, slab = self.t.lanes(es), rows * 16
        per_block = 16 if es == 2 else 16 * ROWS_PER_F32_REPEAT
        for j in range(kbk):
            at = lin((key0, per_block), (1, j * per_block))
            block = (View(sub(self.mask_layout, at, 16), 0, 0) if es == 2
                     else View(sub(self.mask_layout, at, per_block), 1, 0))
            for piece in split_repeats(slab, lanes, self.t.max_repeat):
                touched = (piece.repeat - 1) * lanes + piece.mask
                data = View(sub(scores, j * slab + piece.offset, touched), 1,
                            lanes * es // self.granule)
                emit(Compute("binary", vop="cce.vadd"), data, [data, block], piece.repeat,
                     piece.mask)
