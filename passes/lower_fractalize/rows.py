"""Moving a strip's rows between GM and UB, including rows of partial
blocks and the end-of-tensor window, and the small UB emitters (views,
zero fill, vnchwconv plans, bursts) the strip code shares."""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.kernels.cce_build import copy, index_add
from npu.dialects.hivm import config_field

from .plan import VNCHW_ROWS, Geometry, Vnchw, split_repeats


class RowMoves:
    """Mixed into the pass: needs `self.target`."""

    def view(self, flat: ir.Value, offset: int | ir.Value, length: int | None = None) -> ir.Value:
        """From element `offset` to the end of the flat buffer (or `length`)."""
        size = nir.memref_shape(flat)[0]
        if length is None:
            if not isinstance(offset, int):
                raise AssertionError("dynamic offsets need an explicit length")
            length = size - offset
        return nir.subview(flat, [offset], [length])

    def zero(self, buf: ir.Value, first_byte: int, nbytes: int, e: int) -> None:
        """vdup 0 over [first_byte, first_byte + nbytes) of a UB buffer (whole blocks)."""
        t = self.target
        rep_bytes = t.vector_bytes
        full, rest = divmod(nbytes, rep_bytes)
        pos = first_byte
        for first in range(0, full, t.max_repeat):
            rep = min(t.max_repeat, full - first)
            nir.create_op("cce.vdup", [self.view(buf, pos // e)], repeat=rep, mask=rep_bytes // e,
                          dst_blk_stride=1, dst_rep_stride=rep_bytes // t.vector_block_bytes,
                          scalar=0.0)
            pos += rep * rep_bytes
        if rest:
            nir.create_op("cce.vdup", [self.view(buf, pos // e)], repeat=1, mask=rest // e,
                          dst_blk_stride=1, dst_rep_stride=rep_bytes // t.vector_block_bytes,
                          scalar=0.0)

    def vnchw(self, p: Vnchw, bufs: dict[str, ir.Value], e: int) -> None:
        unit = self.target.vector_block_bytes // e  # elements per 32-byte block
        max_stride = min(config_field("vector", f).max
                         for f in ("src0_rep_stride", "dst_rep_stride"))
        for q in split_repeats(p, self.target.max_repeat, max_stride):
            nir.create_op("cce.vnchwconv",
                          [self.view(bufs[q.dst_buf], q.dst_block * unit),
                           self.view(bufs[q.src_buf], q.src_block * unit)],
                          repeat=q.repeat, src_offsets=list(q.src_offsets),
                          dst_offsets=list(q.dst_offsets), src_rep_stride=q.src_rep,
                          dst_rep_stride=q.dst_rep)

    def copy_contiguous(self, name: str, src: ir.Value, src_off, dst: ir.Value, dst_off,
                        nbytes: int, e: int) -> None:
        """One or more single-burst copies of `nbytes` (whole blocks)."""
        max_len = config_field("copy", "burst_len").max
        total = self.target.blocks(nbytes)
        unit = self.target.vector_block_bytes // e
        done = 0
        while done < total:
            n = min(max_len, total - done)
            s = self.view(src, index_add(src_off, done * unit) if not isinstance(src_off, int)
                          else src_off + done * unit, n * unit)
            d = self.view(dst, index_add(dst_off, done * unit) if not isinstance(dst_off, int)
                          else dst_off + done * unit, n * unit)
            copy(name, s, d, 1, n)
            done += n

    # ------------------------------------------------------------------ rows


    def load_rows(self, g: Geometry, nd: ir.Value, row0: ir.Value, strip: ir.Value, hv: int,
                  final: bool, rb_static: int | None) -> None:
        e, unit = g.e, self.target.vector_block_bytes
        if g.row_bytes % unit == 0:
            if g.C == g.Cp:
                self.copy_contiguous("cce.copy_gm_to_ub", nd, row0, strip, 0, hv * g.row_bytes, e)
            else:
                src = nir.subview(nd, [row0], [hv * g.C])
                copy("cce.copy_gm_to_ub", src, self.view(strip, 0), hv,
                          self.target.blocks(g.row_bytes), 0, self.target.blocks((g.Cp - g.C) * e))
            return
        L = -(-g.row_bytes // unit)
        per_block = unit // e
        first_end = self.first_end_row(g) if final else g.R
        base_row = rb_static * VNCHW_ROWS if final else 0
        for i in range(hv):
            if final and base_row + i >= first_end:
                continue  # near the end: load_end_rows
            src = nir.subview(nd, [index_add(row0, i * g.C)], [L * per_block])
            copy("cce.copy_gm_to_ub", src, self.view(strip, i * g.Cp, L * per_block), 1, L)
        if final:
            self.load_end_rows(g, nd, strip, base_row, hv, first_end)

    def load_end_rows(self, g: Geometry, nd: ir.Value, strip: ir.Value, base_row: int, hv: int,
                      first_end: int) -> None:
        """Rows from `first_end` on: whole blocks that stay inside the tensor,
        then each row's remainder shifted out of the tensor's last 32 bytes."""
        e, unit = g.e, self.target.vector_block_bytes
        W = unit // e
        nd_len = nir.memref_shape(nd)[0]
        et = g.element
        window = nir.alloc([W], et, "ub")
        if nd_len >= W:
            copy("cce.copy_gm_to_ub", nir.subview(nd, [nd_len - W], [W]), window, 1, 1)
        else:
            # A tensor under one block: the read runs into its last granule's
            # padding (in bounds, uninitialised); a masked x1.0 keeps only the
            # tensor's own lanes (exact, -0.0 and NaN included) over zeros.
            raw = nir.alloc([W], et, "ub")
            copy("cce.copy_gm_to_ub", nd, raw, 1, 1)
            self.zero(window, 0, unit, e)
            rep_blocks = self.target.vector_bytes // unit
            nir.create_op("cce.vmuls", [window, raw], repeat=1, mask=nd_len, dst_blk_stride=1,
                          dst_rep_stride=rep_blocks, src_blk_stride=1, src_rep_stride=rep_blocks,
                          scalar=1.0)
        window_first = max(nd_len - W, 0)  # element index of the window in the flat tensor
        last_p = (g.batch - 1) * g.R * g.C
        for r in range(first_end, base_row + hv):
            i = r - base_row
            row_start = last_p + r * g.C
            inside = (nd_len - row_start) // W  # whole blocks of this row inside the tensor
            whole = min(inside, -(-g.C // W))
            if whole:
                copy("cce.copy_gm_to_ub", nir.subview(nd, [row_start], [whole * W]),
                          self.view(strip, i * g.Cp), 1, whole)
            if whole * W >= g.C:
                continue
            first_elem = row_start + whole * W
            count = min(W, row_start + g.C - first_elem)
            sources = [(window, first_elem - window_first + j) for j in range(count)]
            self.gather_piece(sources, W, et, self.view(strip, i * g.Cp + whole * W, W))

    def gather_piece(self, sources: list[tuple[ir.Value, int]], W: int, et: str,
                     dst: ir.Value) -> None:
        """dst[j] = sources[j] (buffer, element index) for j < len(sources):
        vnchwconv with all 16 row pointers on one piece broadcasts each of its
        elements to a piece of its own; a second vnchwconv picks one
        broadcast piece per lane; one block copy puts the result in place."""
        e = nir.element_bytes(et)
        frac = self.target.fractal
        per_piece_bcast = 1 if e == 2 else 2  # f32 broadcasts element u to pieces 2u, 2u+1
        pieces: dict[tuple[int, int], int] = {}
        order: list[tuple[ir.Value, int]] = []
        for buf, idx in sources:
            key = (id(buf), idx // W)
            if key not in pieces:
                pieces[key] = len(order)
                order.append((buf, idx // W))
        bcast = nir.alloc([len(order) * frac * W], et, "ub")
        for n, (buf, piece) in enumerate(order):
            nir.create_op("cce.vnchwconv", [self.view(bcast, n * frac * W), self.view(buf, piece * W, W)],
                          repeat=1, src_offsets=[0] * frac, dst_offsets=list(range(frac)),
                          src_rep_stride=0, dst_rep_stride=0)
        ptrs = []
        for j in range(frac):
            buf, idx = sources[j] if j < len(sources) else sources[0]
            n = pieces[(id(buf), idx // W)]
            ptrs.append(n * frac + (idx % W) * per_piece_bcast)
        picked = nir.alloc([frac * W], et, "ub")
        nir.create_op("cce.vnchwconv", [picked, self.view(bcast, 0)], repeat=1,
                      src_offsets=ptrs, dst_offsets=list(range(frac)), src_rep_stride=0,
                      dst_rep_stride=0)
        copy("cce.copy_ub_to_ub", self.view(picked, 0, W), dst, 1, 1)

    def zero_pad_columns(self, g: Geometry, tmp: ir.Value, t: int) -> None:
        """After pass 1 the columns C.. of the last column block are rows of
        tmp[b][C1-1]: overwrite them with zeros (they may hold the next row)."""
        rem = g.C % VNCHW_ROWS
        if rem == 0:
            return
        row_bytes = VNCHW_ROWS * g.e  # one tmp row: the 16 lanes a
        unit_bytes = VNCHW_ROWS * row_bytes  # one (b, c) unit
        for b in range(t):
            first = (b * g.C1 + g.C1 - 1) * unit_bytes + rem * row_bytes
            self.zero(tmp, first, (VNCHW_ROWS - rem) * row_bytes, g.e)

    def store_rows(self, g: Geometry, nd: ir.Value, row0: ir.Value, strip: ir.Value, hv: int,
                   final: bool, rb_static: int | None) -> None:
        e, unit = g.e, self.target.vector_block_bytes
        if g.row_bytes % unit == 0:
            if g.C == g.Cp:
                self.copy_contiguous("cce.copy_ub_to_gm", strip, 0, nd, row0, hv * g.row_bytes, e)
            else:
                dst = nir.subview(nd, [row0], [hv * g.C])
                copy("cce.copy_ub_to_gm", self.view(strip, 0), dst, hv,
                          self.target.blocks(g.row_bytes), self.target.blocks((g.Cp - g.C) * e), 0)
            return
        L = -(-g.row_bytes // unit)
        W = unit // e
        first_end = self.first_end_row(g) if final else g.R
        base_row = rb_static * VNCHW_ROWS if final else 0
        nd_len = nir.memref_shape(nd)[0]
        last_p = (g.batch - 1) * g.R * g.C
        for i in range(hv):
            r = base_row + i
            if final and r >= first_end:
                # Whole blocks that stay inside the tensor; the rest goes with the window.
                row_start = last_p + r * g.C
                whole = min((nd_len - row_start) // W, L)
                if whole:
                    copy("cce.copy_ub_to_gm", self.view(strip, i * g.Cp, whole * W),
                              nir.subview(nd, [row_start], [whole * W]), 1, whole)
                continue
            dst = nir.subview(nd, [index_add(row0, i * g.C)], [L * W])
            copy("cce.copy_ub_to_gm", self.view(strip, i * g.Cp, L * W), dst, 1, L)
        if final and first_end < g.R:
            et = g.element
            sources = []
            first = max(nd_len - W, 0)
            for f in range(first, min(first + W, nd_len)):
                r, col = divmod(f - last_p, g.C)
                sources.append((strip, (r - base_row) * g.Cp + col))
            window = nir.alloc([W], et, "ub")
            self.gather_piece(sources, W, et, window)
            # A tensor under one block is written whole, into its last
            # granule's padding (in bounds; padding is not part of the value).
            dst = nir.subview(nd, [first], [W]) if nd_len >= W else nd
            copy("cce.copy_ub_to_gm", window, dst, 1, 1)
