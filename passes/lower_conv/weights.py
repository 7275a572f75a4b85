"""The weights of a conv's kernel (`kernel.py`): fractal-Z in GM -> L1,
resident for the whole conv (in pieces that arrive ahead of the chunks
needing them) or streamed per super tile of Cout blocks (two L1 buffers in
turn), and L1 -> L0B per reduction chunk."""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.kernels.cce_build import copy, copy_bursts

FRAC = 256  # elements of one f16 (or f32, i32) fractal
FRAC_INT8 = 512  # elements of one int8 fractal (16 x 32: 512 bytes, like an f16 one)
# On the resident weights' L1 alloc: npu-prefetch finds the conv's pieces by it
# (the copies into it, grouped by their offset there, in order).
RESIDENT_ATTR = "npu.resident_weights"


class ConvWeights:
    """Mixin of `ConvKernel` (its `s`, `t`, `wz`, `target`, and `in_type` /
    `frac`: the cube's input type and its fractals' elements)."""

    def plan_weights(self) -> None:
        """The weights' L1 buffers, and the resident copy's pieces (the first
        goes out with the first band's map: `first_piece`)."""
        s, t = self.s, self.t
        self.w_l1, self.pending = None, []
        # Streamed weights: two L1 buffers, super tiles alternating between
        # them, so a super tile's weights load while the previous one's feed
        # the cube (per-tile buffers could share one address once planned).
        self.w_tiles = [] if t.weights_resident else [
            nir.alloc([s.k1 * min(t.n1, s.co1) * self.frac], self.in_type, "l1") for _ in range(2)]
        self.w_turn = 0
        if t.weights_resident:
            # In pieces of one chunk's rows: the first chunk waits for its own
            # rows only; when the first band is not in a loop, the rest follow
            # its input on MTE2 (`flush_weights`).
            self.w_l1 = nir.alloc([s.k1 * s.co1 * self.frac], self.in_type, "l1")
            # npu-prefetch may load its first pieces during the previous op
            self.w_l1.owner.attributes[RESIDENT_ATTR] = ir.UnitAttr.get()
            # Pieces of 1, 1, 2, 4, ... chunks: each copy is followed by its flag,
            # which waits for the copy's GM latency, so a piece must cover
            # more compute than the previous one took to arrive.
            step, pieces, k0, size = min(t.kc, s.k1), [], 0, 1
            while k0 < s.k1:
                rows = min(size * step, s.k1 - k0)
                pieces.append((k0, rows))
                k0 += rows
                size = size if len(pieces) == 1 else 2 * size
            self.pending = [lambda k0=k0, rows=rows: self.copy_weight_rows(k0, rows)
                            for k0, rows in pieces]
        self.pieces = len(self.pending)

    def first_piece(self) -> None:
        """The resident copy's first piece, right after the first band's map
        copies: one run of loads and one GM latency for both. (Before them,
        its flag held MTE2 for the latency before the map could start, on
        every core after a chip barrier.)"""
        if self.pending and len(self.pending) == self.pieces:
            self.pending.pop(0)()

    def tile_weights(self, s0: int, ns: int) -> tuple[ir.Value, int, int]:
        """(L1 buffer, its row pitch in blocks of 16, first column) of the
        weights of the super tile of `ns` Cout blocks at s0: the resident
        copy, or the streamed buffer of its turn, loaded now."""
        if self.w_l1 is not None:
            return self.w_l1, self.s.co1, s0
        w_l1 = self.w_tiles[self.w_turn]
        self.w_turn ^= 1
        self.copy_tile_weights(w_l1, s0)
        return w_l1, ns, 0

    def row_pitch(self) -> int:
        """32-byte blocks from one K1 row of the fractal-Z weights to the
        next: Cout1 * 16, or more in one core's slice of a conv split over
        its output channels (npu-split-cores)."""
        strides, _ = nir.memref_layout(self.wz)
        return strides[0] * nir.element_bytes(self.in_type) // 32

    def copy_weight_rows(self, k0: int, rows: int) -> None:
        """K1 rows [k0, k0 + rows) of the weights -> the resident L1 copy:
        one burst when the rows are contiguous, else one per row."""
        s = self.s
        frac = self.frac
        dst = nir.subview(self.w_l1, [k0 * s.co1 * frac], [rows * s.co1 * frac])
        gap = self.row_pitch() - s.co1 * 16
        if gap == 0:
            src = nir.subview(nir.flatten_memref(self.wz), [k0 * s.co1 * frac], [rows * s.co1 * frac])
            copy("cce.copy_gm_to_l1", src, dst, 1, rows * s.co1 * 16)
        else:
            src = nir.subview(self.wz, [k0, 0, 0, 0], [rows, s.co1, 16, frac // 16])
            copy_bursts("cce.copy_gm_to_l1", src, dst, rows, s.co1 * 16, src_gap=gap)

    def copy_tile_weights(self, w_l1, s0: int) -> None:
        """The fractal-Z columns of the super tile at Cout block s0 -> L1."""
        s = self.s
        ns = min(self.t.n1, s.co1 - s0)
        wsrc = nir.subview(self.wz, [0, s0, 0, 0], [s.k1, ns, 16, self.frac // 16])
        copy_bursts("cce.copy_gm_to_l1", wsrc, nir.subview(w_l1, [0], [s.k1 * ns * self.frac]), s.k1,
                    ns * 16, src_gap=self.row_pitch() - ns * 16)

    def flush_weights(self) -> None:
        for piece in self.pending:
            piece()
        self.pending = []

    def load_weights(self, w_l1, l0b, pitch: int, col: int, kp0: int, kcj: int, n1: int,
                     at: int) -> None:
        """Fractal-Z rows kp0..kp0+kcj, Cout blocks col..col+n1 -> L0B (Zn [kcj, n1])
        from fractal `at`: whole runs when the rows are contiguous, else one
        load per row or per column (whichever is fewer instructions)."""
        mr = self.target.max_repeat
        if n1 == pitch:
            total = kcj * n1
            for f0 in range(0, total, mr):
                rep = min(mr, total - f0)
                self.load(w_l1, l0b, kp0 * pitch + f0, at + f0, rep, 1, 1)
        elif kcj <= n1:
            for r in range(kcj):
                self.load(w_l1, l0b, (kp0 + r) * pitch + col, at + r * n1, n1, 1, 1)
        else:
            for c in range(n1):
                self.load(w_l1, l0b, kp0 * pitch + col + c, at + c, kcj, pitch, n1)

    def load(self, src, dst, src_frac: int, dst_frac: int, repeat: int, src_stride: int,
             dst_stride: int) -> None:
        frac = self.frac
        src_len = ((repeat - 1) * src_stride + 1) * frac
        dst_len = ((repeat - 1) * dst_stride + 1) * frac
        nir.create_op("cce.load_l1_to_l0b", [nir.subview(src, [src_frac * frac], [src_len]),
                                             nir.subview(dst, [dst_frac * frac], [dst_len])],
                      repeat=repeat, src_stride=src_stride, dst_stride=dst_stride, transpose=False)
