"""Reductions whose rows are shorter than one 32-byte block, for
`npu-lower-reduce`: the input viewed as [outer, R, inner] where either the
reduced rows (inner = 1, R under one block and not whole blocks) or the
trailing runs (1 < inner < one block) cannot be placed on block boundaries
(softmax over 10 classes, ReduceSum over axis 0 of a 3 x 5 matrix).

The whole tensor is held in UB and rearranged so that the reduced index is
the outer one and every row of outputs starts on a block:
  1. load the input (one copy) and expand every element to its own block
     (`vnchwconv`, as the general transpose does);
  2. fill an assembly buffer of R rows x M_pad blocks (M = outer * inner
     outputs, M_pad rounded up to whole blocks) with the fold's identity,
     then copy the blocks in: for each r, one `copy_ub_to_ub` of `outer`
     bursts of `inner` blocks (source gap (R - 1) * inner blocks);
  3. compact the blocks back to elements (`vnchwconv`): R rows of M_pad
     elements, each on a block boundary, identity in the padding;
  4. fold the rows pairwise with vadd / vmax / vmin (f16 sums converted to
     f32 first and rounded once at the end) and store the M results.
A tensor that does not fit UB with the 16x / 8x expansion is reduced in
equal parts of its outer axis, each a whole number of blocks in GM (a
GlobalAveragePool of 2x2 maps in NCHW); when no part fits, it is rejected
at the op.
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.kernels.cce_build import copy, for_range, lin, sub
from npu.passes.base import PassError
from npu.passes.reduce_columns import IDENTITY, Reduction
from npu.passes.transpose_general import compact_blocks, expand_to_blocks
from npu.costmodel.vector.tiling import round_up, split_repeats



MAX_PARTS = 64  # each part is its own straight-line code


class SmallReduce(Reduction):
    """Emits one reduction (module docstring)."""

    def __init__(self, p, op: ir.Operation, outer: int, rows: int, inner: int, fold_op: str):
        super().__init__(p, op, outer, rows, inner, fold_op)
        self.block = self.granule // self.es
        self.whole = outer
        self._size_for(outer)
        need = self.ub_bytes()
        budget = int(p.target.capacity("ub") * p.ub_fraction)
        if need > budget:  # equal parts of the outer axis, each whole blocks in and out
            fits = [part for part in range(outer - 1, 0, -1) if outer % part == 0
                    and outer // part <= MAX_PARTS and part * inner * self.es % self.granule == 0
                    and self._size_for(part).ub_bytes() <= budget]
            if not fits:
                raise PassError(f"reducing rows of {rows} x {inner} elements (shorter than one "
                                f"32-byte block) holds the whole tensor in UB: {need} bytes, "
                                f"budget {budget}, and no equal part of its {outer} outer "
                                f"indices (at most {MAX_PARTS}, whole 32-byte blocks) fits", op)
            self._size_for(fits[0])

    def _size_for(self, outer: int) -> "SmallReduce":
        """Sizes of a part of `outer` outer indices (the whole tensor, or an
        equal part of it when the whole does not fit UB)."""
        self.outer = outer
        self.total = outer * self.rows * self.inner
        self.m = outer * self.inner
        self.m_pad = round_up(self.m, max(self.block, self.granule // self.aes))
        # Assembly blocks, a whole number of 16-block compaction groups.
        self.groups = -(-self.rows * self.m_pad // self.p.target.fractal)
        return self

    def ub_bytes(self) -> int:
        g, f = self.granule, self.p.target.fractal
        expanded = round_up(self.total, f) * g
        assembled = self.groups * f * g
        compacted = (2 * self.groups * f // self.block + 2) * g
        wide = self.groups * f * self.aes if self.acc != self.elem else 0
        return round_up(self.total, self.block) * self.es + expanded + assembled + compacted + wide

    def emit(self) -> None:
        src, dst = (nir.flatten_memref(v) for v in self.op.operands)
        if self.outer == self.whole:
            self.emit_part(src, dst)
            return
        for o0 in range(0, self.whole, self.outer):  # equal, block-aligned parts
            self.emit_part(sub(src, o0 * self.rows * self.inner, self.total),
                           sub(dst, o0 * self.inner, self.m))

    def emit_part(self, src: ir.Value, dst: ir.Value) -> None:
        p, es, g, elem, f = self.p, self.es, self.granule, self.elem, self.p.target.fractal
        padded = round_up(self.total, self.block)
        inp = nir.alloc([padded], elem, "ub")
        copy("cce.copy_gm_to_ub", src, inp, 1, padded * es // g)
        expanded = nir.alloc([round_up(self.total, f) * self.block], elem, "ub")
        expand_to_blocks(p, inp, expanded, self.total, es)
        blocks = self.groups * f
        assembled = nir.alloc([blocks * self.block], elem, "ub")
        self.vector(lambda off, span, rep, mask, lanes: nir.create_op(
            "cce.vdup", [sub(assembled, off, span)], repeat=rep, mask=mask, dst_blk_stride=1,
            dst_rep_stride=lanes * es // g, scalar=IDENTITY[self.fold_op]),
            blocks * self.block, es)
        inner, rows, m_pad, b = self.inner, self.rows, self.m_pad, self.block

        def one_row(r) -> None:
            copy("cce.copy_ub_to_ub",
                 sub(expanded, lin((r, inner * b)),
                     ((self.outer - 1) * rows * inner + inner) * b),
                 sub(assembled, lin((r, m_pad * b)), self.m * b), self.outer, inner,
                 src_gap=(rows - 1) * inner, dst_gap=0)

        for_range(rows, one_row)
        out_blocks = self.groups * f // b
        compacted = nir.alloc([(2 * out_blocks + 2) * b], elem, "ub")
        compact_blocks(p, assembled, compacted, self.groups, es)
        work = compacted
        if self.acc != elem:
            work = nir.alloc([rows * m_pad], self.acc, "ub")
            self.convert(work, compacted, rows * m_pad, "none")
        n = rows
        while n > 1:  # fold rows [h, n) onto [0, n - h)
            h = (n + 1) // 2
            self.fold(work, h * m_pad, (n - h) * m_pad)
            n = h
        result = work
        if self.acc != elem:
            result = nir.alloc([m_pad], elem, "ub")
            self.convert(result, work, m_pad, "rint")
        stored = round_up(self.m, b)
        copy("cce.copy_ub_to_gm", sub(result, 0, stored), dst, 1, stored * es // g)

    def fold(self, buf: ir.Value, other: int, count: int) -> None:
        rs = lambda lanes: lanes * self.aes // self.granule  # noqa: E731

        def one(off: int, span: int, rep: int, mask: int, lanes: int) -> None:
            d = sub(buf, off, span)
            nir.create_op(self.fold_op, [d, d, sub(buf, other + off, span)], repeat=rep,
                          mask=mask, dst_blk_stride=1, dst_rep_stride=rs(lanes),
                          src0_blk_stride=1, src0_rep_stride=rs(lanes), src1_blk_stride=1,
                          src1_rep_stride=rs(lanes))
        self.vector(one, count, self.aes)

    def convert(self, dst: ir.Value, src: ir.Value, count: int, mode: str) -> None:
        des, ses = (nir.element_bytes(nir.memref_element(v)) for v in (dst, src))
        g = self.granule
        self.vector(lambda off, span, rep, mask, lanes: nir.create_op(
            "cce.vconv", [sub(dst, off, span), sub(src, off, span)], repeat=rep, mask=mask,
            dst_blk_stride=1, dst_rep_stride=lanes * des // g, src_blk_stride=1,
            src_rep_stride=lanes * ses // g, round_mode=mode), count, max(des, ses))

    def vector(self, body, count: int, es: int) -> None:
        """`body(offset, span, repeat, mask, lanes)` per instruction over `count` elements."""
        lanes = self.p.target.lanes(es)
        for ins in split_repeats(count, lanes, self.p.target.max_repeat):
            body(ins.offset, (ins.repeat - 1) * lanes + ins.mask, ins.repeat, ins.mask, lanes)
