"""A mask of the scores ([1, .., 1, S, S] shared by the heads, or
[1, .., H, S, S] one per head: `npu.costmodel.attention.key_mask`) in the
fused attention.

A shared mask stays whole in UB when it takes no more room than two tiles
of it (and always with one tile a head: `mask_resident`), made ready once for
every head and step: clamped to the finite range of the scores' type (f16:
cast, then clamped in f16, half the repeats). Otherwise each step's tile
(its query rows, its keys) is read in the step's load stage, a step ahead
of its softmax, into one of two slots (one copy, a burst per row,
row-major in UB), and its softmax makes it ready. Either is added to the
scores' Nz slabs key block by key block, read with strides: f16, eight
rows a repeat (block stride one row of the mask) while eight rows are
within a repeat stride; f32 (two blocks a row), a row a repeat.

Clamped, a -inf in the mask acts as the most negative finite value: a tile
whose row is all masked keeps a finite running max, and the online
softmax's later tiles replace it.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.costmodel.vector.recipes import Compute, cast_compute
from npu.costmodel.vector.tiling import split_repeats
from npu.kernels.cce_build import Index, View, copy, lin, sub
from npu.costmodel.attention.cost import mask_resident, mask_rows_per_repeat
from npu.kernels.vector_compute import emit
from npu.passes.lower_attention.softmax_f16 import F16_MAX, HALF, NARROW

F32_MAX = float(np.finfo(np.float32).max)


class ScoresMask:
    """Mixed into the kernel with `KeyMask` (`a`, `t`, `qb`, `kb`, `elem`,
    `granule`, `apply`, `fill`, `load_tail`)."""

    def prepare_scores_mask(self) -> None:
        """The whole mask made ready in UB when it stays there
        (`mask_resident`; f16: through an f32 staging buffer of 16 rows at
        a time), else nothing: the steps read their tiles. Rows have the
        pitch of whole key blocks; with a seq of partial blocks the padding
        (rows and keys past the seq) is 0."""
        a, es = self.a, 4 if self.elem == "f32" else 2
        s1, n = a.seq_blocks, a.seq
        pitch = s1 * 16
        self.mask_at: dict[int, tuple[Index, Index]] = {}  # slot -> (query0, key0)
        self.resident_mask: ir.Value | None = None
        if a.scores_bias is None:
            return
        self.bias_flat = nir.flatten_memref(a.scores_bias)
        if not mask_resident(s1, self.qb, self.kb, es, not a.bias_per_head):
            return
        if es == 4:
            tile = nir.alloc([pitch * pitch], "f32", "ub")
            if n < pitch:
                self.fill(tile, pitch * pitch, "f32", 0.0)
            self.copy_rows(0, tile, n, n, pitch)
            self.resident_mask = self.ready_mask(tile, pitch * pitch)
            return
        half = nir.alloc([pitch * pitch], "f16", "ub")
        staging = nir.alloc([16 * pitch], "f32", "ub")
        if n < pitch:
            self.fill(staging, 16 * pitch, "f32", 0.0)
        for i in range(s1):
            self.copy_rows(i * 16 * n, staging, min(16, n - 16 * i), n, pitch)
            self.apply(cast_compute("f32", "f16", "rint"), half, [staging], 16 * pitch,
                       offsets=(i * 16 * pitch, 0), sizes=NARROW)
        self.resident_mask = self.ready_half(half, pitch * pitch)

    def copy_rows(self, at: Index, dst: ir.Value, rows: int, width: int, pitch: int) -> None:
        """`rows` rows of `width` f32 mask values from element `at` of the
        mask, `seq` apart in GM, into rows `pitch` apart in UB (one copy, a
        burst per row; one burst when both sides are dense). A seq that is
        not whole 32-byte blocks: a copy per row (a row starts anywhere in
        a GM block), each read to the end of its last block (the values past
        `width` are padded keys' lanes); the last row reads its whole blocks
        and has its last values realigned (`load_tail`), as its burst could
        run past the mask."""
        g, seq, flat = self.granule, self.a.seq, self.bias_flat
        b = g // 4
        if seq % b == 0:
            src = sub(flat, at, (rows - 1) * seq + width)
            if width == seq == pitch:
                copy("cce.copy_gm_to_ub", src, dst, 1, rows * width * 4 // g)
                return
            copy("cce.copy_gm_to_ub", src, dst, rows, width * 4 // g, (seq - width) * 4 // g,
                 (pitch - width) * 4 // g)
            return
        blocks, tail = -(-width // b), width % b
        for r in range(rows - 1 if tail else rows):
            copy("cce.copy_gm_to_ub", sub(flat, lin((at, 1), (1, r * seq)), blocks * b),
                 sub(dst, r * pitch, blocks * b), 1, blocks)
        if tail:
            row = lin((at, 1), (1, (rows - 1) * seq))
            whole = width // b
            if whole:
                copy("cce.copy_gm_to_ub", sub(flat, row, whole * b),
                     sub(dst, (rows - 1) * pitch, whole * b), 1, whole)
            self.load_tail(flat, lin((row, 1), (1, width)), tail, dst,
                           (rows - 1) * pitch + whole * b)

    def mask_slots(self, mq: int, kbk: int) -> list[ir.Value]:
        """The two slots of the steps' tiles (none when the whole mask is
        resident); with a seq of partial blocks, zeroed once: the last
        tiles fill only their valid rows and keys."""
        if self.a.scores_bias is None or self.resident_mask is not None:
            return []
        slots = [nir.alloc([kbk * mq * 256], "f32", "ub") for _ in range(2)]
        if self.a.seq % 16:
            for slot in slots:
                self.fill(slot, kbk * mq * 256, "f32", 0.0)
        return slots

    def load_mask_tile(self, buf: dict, slot: int, query0: Index, key0: Index, mq: int,
                       kbk: int, head: Index = 0) -> None:
        """The step's tile (query blocks from `query0`, key blocks from
        `key0`; of `head`'s mask when there is one per head): GM -> the
        slot's UB buffer ([mq * 16, kbk * 16], row-major), unless the whole
        mask is resident. A static tile at the end of the seq reads only its
        valid rows and keys (the schedules keep the last query and key tiles
        static)."""
        a = self.a
        if a.scores_bias is None:
            return
        self.mask_at[slot] = (query0, key0)
        if self.resident_mask is not None:
            return
        seq, rows, width = a.seq, mq * 16, kbk * 16
        if isinstance(query0, int):
            rows = min(rows, seq - 16 * query0)
        if isinstance(key0, int):
            width = min(width, seq - 16 * key0)
        at = lin((head, seq * seq if a.bias_per_head else 0), (query0, 16 * seq), (key0, 16))
        self.copy_rows(at, buf["mask"][slot], rows, width, kbk * 16)

    def ready_mask(self, tile: ir.Value, count: int) -> ir.Value:
        """The f32 tile clamped to the finite range of the scores' type: in
        place (f32), or cast to f16 first and clamped there."""
        if self.elem == "f32":
            self.apply(Compute("scalar", vop="cce.vmaxs", scalar=-F32_MAX), tile, [tile], count)
            return tile
        half = nir.alloc([count], "f16", "ub")
        self.apply(cast_compute("f32", "f16", "rint"), half, [tile], count, sizes=NARROW)
        return self.ready_half(half, count)

    def ready_half(self, half: ir.Value, count: int) -> ir.Value:
        for vop, bound in (("cce.vmaxs", -F16_MAX), ("cce.vmins", F16_MAX)):
            self.apply(Compute("scalar", vop=vop, scalar=bound), half, [half], count, sizes=HALF)
        return half

    def add_mask_tile(self, scores: ir.Value, kbk: int, rows: int) -> None:
        """scores (kbk Nz slabs of `rows` rows) += the step's tile: read from
        the resident mask at the step's place (one tile a head: the whole
        mask, at 0), or the slot's tile (`mask_tile`) made ready."""
        es = 4 if self.elem == "f32" else 2
        if self.resident_mask is not None:
            query0, key0 = self.mask_at.get(self.mask_slot, (0, 0))
            ready, row_len = self.resident_mask, self.a.seq_blocks * 16
            base = lin((query0, 16 * row_len), (key0, 16))
        else:
            ready, row_len, base = self.ready_mask(self.mask_tile, kbk * rows * 16), kbk * 16, 0
        row_blocks = row_len * es // self.granule
        per = mask_rows_per_repeat(es, row_blocks, self.t)
        lanes = per * 16
        for j in range(kbk):
            for piece in split_repeats(rows * 16, lanes, self.t.max_repeat):
                touched = (piece.repeat - 1) * lanes + piece.mask
                data = View(sub(scores, j * rows * 16 + piece.offset, touched), 1,
                            lanes * es // self.granule)
                last_row = (piece.repeat - 1) * per + (piece.mask - 1) // 16
                at = lin((base, 1), (1, piece.offset // 16 * row_len + j * 16))
                mask = View(sub(ready, at, last_row * row_len + 16),
                            row_blocks if per > 1 else 1, per * row_blocks)
                emit(Compute("binary", vop="cce.vadd"), data, [data, mask], piece.repeat,
                     piece.mask)
