"""npu-lower-reduce: ascend.reduce_sum / reduce_max / reduce_min along any
axis -> cce vector code.

The input is viewed as [outer, reduced, inner] around the reduced axis. With
inner = 1 (the last axis, or only size-1 dims after it) this is the row
reduction below on [outer, reduced]; otherwise rows of `inner` elements are
accumulated elementwise (`npu.passes.reduce_columns`). Rows shorter than
one 32-byte block (either kind) go through `npu.passes.reduce_small`. The
output may drop the axis or keep it as size 1: the same elements either way.

The input is viewed as [M, N] and cut into chunks of R whole rows (N must be
a whole number of 32-byte blocks so rows sit on block boundaries in UB):
  1. fold each row onto its first `lanes` elements with vadd / vmax, one
     instruction per further segment of `lanes` columns, repeating over the
     R rows (repeat stride = one row); the last segment uses a partial mask;
  2. one vcadd / vcmax over the R rows reduces each row's first segment to
     one element, written to element r of the result buffer;
  3. the R results are stored; R is a multiple of one 32-byte block of the
     output so stores are whole granules, and a remainder of rows is handled
     by moving the last chunk back (overlap: some rows are reduced twice).
A row longer than the vector repeat stride (255 blocks: 2048 f32) is cut
into a few pieces of whole blocks, each moved for all rows of the chunk by
one copy into an area of its own, so every area has a row stride within
the limit; the areas are folded like short rows and combined onto the first
(`pieces_chunk`), or, when its `lanes` segments are whole and few, reduced
in two levels of cross-lane reductions (`npu.passes.reduce_segments`:
f16 sums need not widen a whole chunk). A row longer than UB allows is cut into column chunks
folded into a one-repeat accumulator (partial results combined with vadd /
vmax across chunks) before the final vcadd / vcmax.

Numerics: f16 sums are accumulated in f32 as the ascend semantics says
(`reduce_sum` accumulates in fp32, dialects/README.md): each chunk is
converted to f32 with vconv (a buffer of 4 bytes per element beside the f16
one), folded and reduced in f32, and the results are rounded once back to
f16. Max is exact in any type and runs in the element type.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.kernels.cce_build import copy, for_pieces, for_range, lin, sub
from npu.dialects.ascend import reduce_axis, reduced_shape
from npu.passes.base import Option, Pass, PassError, ub_fraction_option
from npu.passes.applies import OnOps
from npu.passes.reduce_columns import IDENTITY, ColumnReduce
from npu.passes.reduce_segments import emit_segments, segment_plan
from npu.passes.reduce_small import SmallReduce
from npu.costmodel.vector.tiling import (VectorGeometry, max_chunk_elements, plan_chunks, round_down,
                               split_repeats)

OPS = {"ascend.reduce_sum": ("cce.vadd", "cce.vcadd"),
       "ascend.reduce_max": ("cce.vmax", "cce.vcmax"),
       "ascend.reduce_min": ("cce.vmin", "cce.vcmin")}



class LowerReduce(Pass):
    name = "npu-lower-reduce"
    summary = ("Lower ascend.reduce_sum/max/min: the last axis with vcadd/vcmax/vcmin after "
               "vadd/vmax/vmin folds, an outer axis by accumulating rows")
    handles = tuple(OPS)
    acts_on = OnOps("reduction", handles)  # every option: the program has one
    options = (
        ub_fraction_option(0.5, "fraction of UB one ping-pong slot's buffers may use (0.5 "
                           "leaves room for double buffering); a global pool's outer batches "
                           "count the widened copy and the result, which the two slots share, "
                           "at half weight: over 0.5 their chunk stays single-buffered and may "
                           "use more than the share, up to all of UB"),
        Option("max-chunk", int, 0,
               "cap on the elements of one chunk (0: as many as UB allows); for tests", low=0),
    )

    def run(self, module: ir.Operation) -> None:
        self.lower_each(module, erase=True)

    def lower(self, op: ir.Operation) -> None:
        src, dst = op.operands
        in_shape, out_shape = nir.memref_shape(src), nir.memref_shape(dst)
        elem = nir.memref_element(src)
        if nir.memref_element(dst) != elem:
            raise PassError("input and output element types differ", op)
        if elem not in ("f16", "f32"):
            raise PassError(f"reductions need f16 or f32 operands, got {elem}", op)
        for v in (src, dst):
            if not nir.is_contiguous(v):
                raise PassError(f"operand of type {v.type} is not contiguous (row-major, dense)",
                                op)
        if not in_shape:
            raise PassError("cannot reduce a rank-0 tensor", op)
        axis = reduce_axis(op)
        if out_shape not in (reduced_shape(in_shape, axis), reduced_shape(in_shape, axis, True)):
            raise PassError(f"output shape {out_shape} should be the input shape without axis "
                            f"{axis} ({reduced_shape(in_shape, axis)}) or with it kept as 1", op)
        # Viewed as [outer, reduced, inner]: inner > 1 accumulates rows.
        outer = int(np.prod(in_shape[:axis]))
        inner = int(np.prod(in_shape[axis + 1:]))
        fold_op = OPS[op.name][0]
        acc_bytes = 4 if op.name == "ascend.reduce_sum" else nir.element_bytes(elem)
        block = VectorGeometry.for_types(self.target, [nir.element_bytes(elem), acc_bytes]).block
        rows = in_shape[axis]
        if nir.has_attr(op, "scale") and not inner >= block:
            raise PassError("a reduce_sum's scale is lowered only on an outer axis with whole "
                            f"blocks after it ({inner} < {block} elements)", op)
        if (inner > 1 and inner < block) or (inner == 1 and rows < block and rows % block):
            SmallReduce(self, op, outer, rows, inner, fold_op).emit()
            return
        if inner > 1:
            ColumnReduce(self, op, outer, rows, inner, fold_op).emit()
            return
        in_shape = [outer, in_shape[axis]]
        self.fold_op, self.reduce_op = OPS[op.name]
        self.op, self.elem = op, elem
        # The type the reduction runs in: sums of f16 accumulate in f32.
        self.acc = "f32" if op.name == "ascend.reduce_sum" and elem == "f16" else elem
        self.es = nir.element_bytes(elem)
        self.aes = nir.element_bytes(self.acc)
        self.granule = self.target.granule("ub")
        self.geo = VectorGeometry.for_types(self.target, [self.es, self.aes])
        self.m, self.n = in_shape
        block = self.geo.block
        # Rows that are not whole blocks: the whole blocks of each row (`nm`
        # elements) plus one block ending at the row's end whose leading
        # lanes repeat the main part (set to the identity before folding).
        self.r = self.n % block
        self.nm = self.n - self.r
        if self.r and self.n < block:
            raise PassError(f"the reduced dimension ({self.n}) must be at least one 32-byte "
                            f"block ({block} {elem} elements) when it is not a whole number "
                            "of blocks", op)
        self.src, self.dst = nir.flatten_memref(src), nir.flatten_memref(dst)
        budget = int(self.target.capacity("ub") * self.ub_fraction)
        out_block = block
        row_blocks = self.nm * self.aes // self.granule
        # Rows over the repeat stride are cut into `pieces` of `piece`
        # elements (whole blocks, each within the stride).
        max_stride = self.target.vector_max_stride
        self.pieces = -(-row_blocks // max_stride)
        self.piece = -(-self.nm // (self.pieces * block)) * block
        widened = self.es if self.acc != elem else 0  # the f16 copy beside the f32 one
        slot = self.pieces * self.piece if self.pieces > 1 else self.nm  # a row in UB
        per_row = (slot + (block if self.r else 0) + 1) * (self.aes + widened)
        try:
            max_rows = max_chunk_elements(budget, per_row, out_block)
        except ValueError:
            max_rows = 0
        if self.max_chunk and self.max_chunk < slot and not self.r:
            max_rows = 0  # a row is more than a chunk: column chunks (long_rows)
        elif self.max_chunk:
            max_rows = min(max_rows, max(out_block, round_down(self.max_chunk // self.n,
                                                               out_block)))
        segments = segment_plan(self, budget) if self.pieces > 1 else None
        if segments is not None:
            emit_segments(self, segments)
        elif max_rows and (row_blocks <= max_stride or not self.r):
            plan = plan_chunks(self.m, max_rows, out_block)
            for_pieces(plan, self.rows_chunk if self.pieces == 1 else self.pieces_chunk)
        elif self.r:
            raise PassError(f"rows of {self.n} elements that are not whole 32-byte blocks must "
                            "fit one chunk and the vector repeat stride "
                            f"({self.target.vector_max_stride} blocks)", op)
        else:
            self.long_rows(budget)

    # -- whole rows per chunk ---------------------------------------------------
    def rows_chunk(self, row0, rows: int) -> None:
        es, g, lanes = self.es, self.granule, self.geo.lanes
        n = self.nm  # row length in UB: the row's whole blocks
        valid = min(rows, self.m)  # a padded piece: output under one block
        buf = nir.alloc([valid * n], self.elem, "ub")
        if not self.r:
            copy("cce.copy_gm_to_ub", sub(self.src, lin((row0, n)), valid * n), buf, 1,
                 valid * n * es // g)
            work = self.widen(buf, valid * n)
        else:
            work = self.unaligned_rows(buf, row0, valid)
        row_stride = n * self.aes // g
        for j0 in range(lanes, n, lanes):
            mask = min(lanes, n - j0)
            self.over_rows(valid, lambda r0, rep: self.fold(
                sub(work, r0 * n, (rep - 1) * n + mask),
                sub(work, r0 * n + j0, (rep - 1) * n + mask), rep, mask, row_stride))
        out = nir.alloc([rows], self.acc, "ub")
        width = min(lanes, n)
        self.over_rows(valid, lambda r0, rep: nir.create_op(
            self.reduce_op, [sub(out, r0, rep), sub(work, r0 * n, (rep - 1) * n + width)],
            repeat=rep, mask=width, src_blk_stride=1, src_rep_stride=row_stride,
            dst_rep_stride=1))
        self.store(out, row0, rows, valid)

    def pieces_chunk(self, row0, rows: int) -> None:
        """Rows longer than the repeat stride, whole rows per chunk: piece p
        (columns p*w .. p*w+w) of every row of the chunk is moved by one
        copy (a burst per row, the rest of the row as the GM gap) into area
        p of UB, [rows][w]; the areas are folded like short rows (stride w
        blocks), area p's first repeat of each row is folded onto area 0's,
        and one vcadd / vcmax reduces area 0. `pieces` copies a chunk, not
        one per row."""
        es, g, lanes = self.es, self.granule, self.geo.lanes
        n, w = self.n, self.piece
        valid = min(rows, self.m)
        area = valid * w
        buf = nir.alloc([self.pieces * area], self.elem, "ub")
        widths = [min(w, n - p * w) for p in range(self.pieces)]
        for p, wp in enumerate(widths):
            copy("cce.copy_gm_to_ub", sub(self.src, lin((row0, n), (p * w, 1)), (valid - 1) * n + wp),
                 sub(buf, p * area, area), valid, wp * es // g, (n - wp) * es // g,
                 (w - wp) * es // g)
        work = self.widen(buf, self.pieces * area)
        stride = w * self.aes // g
        width = min(lanes, w)
        for p, wp in enumerate(widths):
            base = p * area
            for j0 in range(lanes, wp, lanes):
                mask = min(lanes, wp - j0)
                self.over_rows(valid, lambda r0, rep, base=base, j0=j0, mask=mask: self.fold(
                    sub(work, base + r0 * w, (rep - 1) * w + mask),
                    sub(work, base + r0 * w + j0, (rep - 1) * w + mask), rep, mask, stride))
            if p:
                mask = min(width, wp)
                self.over_rows(valid, lambda r0, rep, base=base, mask=mask: nir.create_op(
                    self.fold_op, [sub(work, r0 * w, (rep - 1) * w + mask),
                                   sub(work, r0 * w, (rep - 1) * w + mask),
                                   sub(work, base + r0 * w, (rep - 1) * w + mask)],
                    repeat=rep, mask=mask, dst_blk_stride=1, dst_rep_stride=stride,
                    src0_blk_stride=1, src0_rep_stride=stride, src1_blk_stride=1,
                    src1_rep_stride=stride))
        out = nir.alloc([rows], self.acc, "ub")
        self.over_rows(valid, lambda r0, rep: nir.create_op(
            self.reduce_op, [sub(out, r0, rep), sub(work, r0 * w, (rep - 1) * w + width)],
            repeat=rep, mask=width, src_blk_stride=1, src_rep_stride=stride, dst_rep_stride=1))
        self.store(out, row0, rows, valid)

    def unaligned_rows(self, buf: ir.Value, row0, valid: int) -> ir.Value:
        """Rows whose length is not whole blocks: GM rows start at any
        element, so each row is one copy of its whole blocks (into a slot of
        `nm` elements) plus one copy of the block that ends at the row's end
        (never past the tensor). That block's first `block - r` lanes are
        elements of the main part: they become the fold's identity, then the
        block is folded onto the row's first block. One copy pair per row:
        correct for any length, but each copy pays the transfer latency."""
        n, nm, es, g, aes = self.n, self.nm, self.es, self.granule, self.aes
        block = self.geo.block
        tail = nir.alloc([valid * block], self.elem, "ub")

        def one_row(k) -> None:
            row = lin((row0, 1), (k, 1))
            copy("cce.copy_gm_to_ub", sub(self.src, lin((row, n)), nm), sub(buf, lin((k, nm)), nm),
                 1, nm * es // g)
            copy("cce.copy_gm_to_ub", sub(self.src, lin((row, n), (n - block, 1)), block),
                 sub(tail, lin((k, block)), block), 1, block * es // g)

        for_range(valid, one_row)
        work = self.widen(buf, valid * nm)
        twork = self.widen(tail, valid * block)
        identity = IDENTITY[self.fold_op]
        tail_stride = block * aes // g
        row_stride = nm * aes // g
        self.over_rows(valid, lambda r0, rep: nir.create_op(
            "cce.vdup", [sub(twork, r0 * block, rep * block)], repeat=rep, mask=block - self.r,
            dst_blk_stride=1, dst_rep_stride=tail_stride, scalar=identity))
        self.over_rows(valid, lambda r0, rep: nir.create_op(
            self.fold_op, [sub(work, r0 * nm, (rep - 1) * nm + block),
                           sub(work, r0 * nm, (rep - 1) * nm + block),
                           sub(twork, r0 * block, rep * block)],
            repeat=rep, mask=block, dst_blk_stride=1, dst_rep_stride=row_stride,
            src0_blk_stride=1, src0_rep_stride=row_stride, src1_blk_stride=1,
            src1_rep_stride=tail_stride))
        return work

    def widen(self, buf: ir.Value, count: int) -> ir.Value:
        """`buf` converted to the accumulation type (itself if the same)."""
        if self.acc == self.elem:
            return buf
        wide = nir.alloc([count], self.acc, "ub")
        self.convert(wide, self.acc, buf, self.elem, count, "none")
        return wide

    def store(self, out: ir.Value, row0, rows: int, valid: int) -> None:
        """Round the `valid` results to the element type once and store the
        whole block-aligned group of `rows`."""
        if self.acc != self.elem:
            narrow = nir.alloc([rows], self.elem, "ub")
            self.convert(narrow, self.elem, out, self.acc, valid, "rint")
            out = narrow
        copy("cce.copy_ub_to_gm", out, sub(self.dst, row0, rows), 1,
             rows * self.es // self.granule)

    def convert(self, dst: ir.Value, dst_elem: str, src: ir.Value, src_elem: str, count: int,
                round_mode: str) -> None:
        lanes, g = self.geo.lanes, self.granule
        des, ses = nir.element_bytes(dst_elem), nir.element_bytes(src_elem)
        for ins in split_repeats(count, lanes, self.geo.max_repeat):
            span = (ins.repeat - 1) * lanes + ins.mask
            nir.create_op("cce.vconv", [sub(dst, ins.offset, span), sub(src, ins.offset, span)],
                          repeat=ins.repeat, mask=ins.mask, dst_blk_stride=1,
                          dst_rep_stride=lanes * des // g, src_blk_stride=1,
                          src_rep_stride=lanes * ses // g, round_mode=round_mode)

    def over_rows(self, rows: int, body) -> None:
        """`body(r0, rep)` over groups of at most `max_repeat` rows. Groups
        start on whole blocks of rows (248 f32 / 240 f16 rows, not 255):
        the per-row results of a group (vcadd/vcmax dst, element r0) must
        start on a 32-byte boundary."""
        step = round_down(self.geo.max_repeat, self.geo.block)
        r0 = 0
        while r0 < rows:
            rep = min(rows - r0, step)
            body(r0, rep)
            r0 += rep

    def fold(self, acc: ir.Value, other: ir.Value, rep: int, mask: int, rep_stride: int) -> None:
        nir.create_op(self.fold_op, [acc, acc, other], repeat=rep, mask=mask,
                      dst_blk_stride=1, dst_rep_stride=rep_stride,
                      src0_blk_stride=1, src0_rep_stride=rep_stride,
                      src1_blk_stride=1, src1_rep_stride=rep_stride)

    # -- rows longer than a chunk -------------------------------------------------
    def long_rows(self, budget: int) -> None:
        """Each row in column chunks: a chunk is folded in halves down to one
        repeat, then folded into a one-repeat accumulator (the partial result
        across chunks); the per-row results gather in a block-sized output
        buffer per group of rows (overlap for the last group)."""
        n, es, g, lanes = self.n, self.es, self.granule, self.geo.lanes
        aes = self.aes
        out_block = self.geo.block
        widened = es if self.acc != self.elem else 0
        cols = max_chunk_elements(budget - 2 * out_block * (es + aes) - out_block * lanes * aes,
                                  aes + widened, lanes)
        if self.max_chunk:
            cols = min(cols, max(lanes, round_down(self.max_chunk, lanes)))
        col_plan = plan_chunks(n, cols, self.geo.block)
        row_plan = plan_chunks(self.m, out_block, out_block)
        identity = IDENTITY[self.fold_op]
        rep_stride = lanes * aes // g

        def group(row0, rows: int) -> None:
            valid = min(rows, self.m)
            out = nir.alloc([rows], self.acc, "ub")
            # One accumulator repeat per row, live across the row loop.
            accs = nir.alloc([valid * lanes], self.acc, "ub")
            nir.create_op("cce.vdup", [accs], repeat=valid, mask=lanes, dst_blk_stride=1,
                          dst_rep_stride=rep_stride, scalar=identity)

            def one_row(r) -> None:
                acc = sub(accs, lin((r, lanes)), lanes)

                def chunk(c0, length: int) -> None:
                    buf = nir.alloc([length], self.elem, "ub")
                    copy("cce.copy_gm_to_ub", sub(self.src, lin((row0, n), (r, n), (c0, 1)),
                                                  length), buf, 1, length * es // g)
                    # n is whole blocks and chunks whole repeats, so the
                    # column tail never overlaps (nothing is folded twice).
                    assert not (col_plan.tail and col_plan.tail.overlap)
                    work = self.widen(buf, length)
                    width = self.fold_halves(work, length)
                    self.fold(acc, sub(work, 0, width), 1, width, 0)

                for_pieces(col_plan, chunk)

            for_range(valid, one_row)
            nir.create_op(self.reduce_op, [out, accs], repeat=valid, mask=lanes,
                          src_blk_stride=1, src_rep_stride=rep_stride, dst_rep_stride=1)
            self.store(out, row0, rows, valid)

        for_pieces(row_plan, group)

    def fold_halves(self, buf: ir.Value, length: int) -> int:
        """Fold buf[h:length] onto buf[0:length-h] (h = half, whole repeats)
        until one repeat is left; every instruction reads and writes disjoint
        lanes. Returns the number of live leading elements."""
        lanes = self.geo.lanes
        rep_stride = lanes * self.aes // self.granule
        while length > lanes:
            half = -(-length // (2 * lanes)) * lanes
            count = length - half
            for ins in split_repeats(count, lanes, self.geo.max_repeat):
                span = (ins.repeat - 1) * lanes + ins.mask
                acc = sub(buf, ins.offset, span)
                nir.create_op(self.fold_op, [acc, acc, sub(buf, half + ins.offset, span)],
                              repeat=ins.repeat, mask=ins.mask, dst_blk_stride=1,
                              dst_rep_stride=rep_stride, src0_blk_stride=1,
                              src0_rep_stride=rep_stride, src1_blk_stride=1,
                              src1_rep_stride=rep_stride)
            length = half
        return length
