"""Reduction along an outer axis, for `npu-lower-reduce`: the input viewed as
[outer, R, inner] (inner > 1), out[o, i] = fold over r of in[o, r, i].

Rows of `inner` elements are combined elementwise, so the vector unit runs
on full lanes and no cross-lane reduction is needed:
  * `inner` is cut into column pieces of whole blocks (the last one moved
    back to end at the row's end: overlap, identical results stored twice);
  * per (outer index, column piece) an accumulator starts at the fold's
    identity (0, -inf, +inf); the R rows come in batches of K rows, loaded
    with one strided copy when rows are whole 32-byte blocks (else one copy
    per row), folded pairwise within the batch (row h..2h onto row 0..h, one
    instruction over contiguous rows per halving) and then onto the
    accumulator; every element is combined exactly once;
  * f16 sums are converted to f32 per batch and rounded once at the store
    (the ascend semantics accumulates sums in fp32); max/min stay in the
    element type (exact).
Rows shorter than one 32-byte block are not supported (a piece would move a
granule that holds parts of the next row).
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.kernels.cce_build import copy, for_pieces, for_range, lin, sub
from npu.dialects.hivm import CONFIG_LAYOUTS
from npu.passes.base import PassError
from npu.costmodel.vector.tiling import (VectorGeometry, max_chunk_elements, plan_chunks, round_down,
                               split_repeats)

IDENTITY = {"cce.vadd": 0.0, "cce.vmax": float("-inf"), "cce.vmin": float("inf")}


def copy_field_max(name: str) -> int:
    """Largest value of a field of the copy instruction's configuration word."""
    return next(f.max for f in CONFIG_LAYOUTS["copy"] if f.name == name)


class Reduction:
    """One reduction viewed as [outer, rows, inner] (fold over rows), with the
    type it accumulates in: f32 for f16 sums (the ascend semantics), else
    the element type."""

    def __init__(self, p, op: ir.Operation, outer: int, rows: int, inner: int, fold_op: str):
        self.p, self.op, self.fold_op = p, op, fold_op
        self.outer, self.rows, self.inner = outer, rows, inner
        self.elem = nir.memref_element(op.operands[0])
        self.acc = "f32" if fold_op == "cce.vadd" and self.elem == "f16" else self.elem
        self.es, self.aes = nir.element_bytes(self.elem), nir.element_bytes(self.acc)
        self.granule = p.target.granule("ub")


class ColumnReduce(Reduction):
    """Emits the reduction of one op (see the module docstring)."""

    def __init__(self, p, op: ir.Operation, outer: int, rows: int, inner: int, fold_op: str):
        super().__init__(p, op, outer, rows, inner, fold_op)
        self.geo = VectorGeometry.for_types(p.target, [self.es, self.aes])
        if inner < self.geo.block:
            raise PassError(f"reducing an outer axis needs the {inner} trailing elements per "
                            f"reduced index to be at least one 32-byte block "
                            f"({self.geo.block} elements)", op)
        self.src, self.dst = (nir.flatten_memref(v) for v in op.operands)
        self.aligned = (inner * self.es) % self.granule == 0

    def emit(self) -> None:
        p, geo = self.p, self.geo
        widened = self.acc != self.elem
        budget = int(p.target.capacity("ub") * p.ub_fraction)
        # Per column: the accumulator (+ its narrowed copy) and one batch row.
        fixed = self.aes + (self.es if widened else 0)
        per_row = self.es + (self.aes if widened else 0)
        try:
            cols = max_chunk_elements(budget, fixed + per_row, geo.lanes)
        except ValueError as e:
            raise PassError(str(e), self.op) from None
        if p.max_chunk:
            cols = min(cols, max(geo.lanes, round_down(p.max_chunk, geo.lanes)))
        col_plan = plan_chunks(self.inner, cols, geo.block)
        cols = col_plan.chunk if col_plan.full_chunks else col_plan.tail.length
        batch = max(1, min(self.rows, (budget - cols * fixed) // (cols * per_row),
                           copy_field_max("n_burst")))
        if p.max_chunk:
            batch = max(1, min(batch, p.max_chunk // cols))
        row_plan = plan_chunks(self.rows, batch, 1)

        def piece(o, c0, length: int) -> None:
            acc = nir.alloc([length], self.acc, "ub")
            self.vector(lambda off, span, rep, mask: nir.create_op(
                "cce.vdup", [sub(acc, off, span)], repeat=rep, mask=mask, dst_blk_stride=1,
                dst_rep_stride=self.rep_stride(self.aes), scalar=IDENTITY[self.fold_op]),
                length)
            for_pieces(row_plan, lambda r0, k: self.batch(o, c0, length, r0, k, acc))
            self.store(o, c0, length, acc)

        for_range(self.outer, lambda o: for_pieces(col_plan, lambda c0, n: piece(o, c0, n)))

    def batch(self, o, c0, length: int, r0, k: int, acc: ir.Value) -> None:
        es, g, inner = self.es, self.granule, self.inner
        buf = nir.alloc([k * length], self.elem, "ub")
        start = lin((o, self.rows * inner), (r0, inner), (c0, 1))
        burst = length * es // g
        gap = (inner - length) * es // g
        if self.aligned and (k == 1 or gap <= copy_field_max("src_gap")):
            copy("cce.copy_gm_to_ub", sub(self.src, start, (k - 1) * inner + length), buf, k,
                 burst, src_gap=gap if k > 1 else 0)
        else:
            for_range(k, lambda j: copy("cce.copy_gm_to_ub",
                                        sub(self.src, lin((start, 1), (j, inner)), length),
                                        sub(buf, lin((j, length)), length), 1, burst))
        work = buf
        if self.acc != self.elem:
            work = nir.alloc([k * length], self.acc, "ub")
            self.convert(work, buf, k * length, "none", self.aes, es)
        n = k
        while n > 1:  # fold rows [h, n) onto [0, n - h): disjoint, contiguous
            h = (n + 1) // 2
            count = (n - h) * length
            self.fold(work, 0, work, h * length, count)
            n = h
        self.fold(acc, 0, work, 0, length)

    def fold(self, dst: ir.Value, d0: int, src: ir.Value, s0: int, count: int) -> None:
        rs = self.rep_stride(self.aes)

        def one(off: int, span: int, rep: int, mask: int) -> None:
            d = sub(dst, d0 + off, span)
            nir.create_op(self.fold_op, [d, d, sub(src, s0 + off, span)], repeat=rep, mask=mask,
                          dst_blk_stride=1, dst_rep_stride=rs, src0_blk_stride=1,
                          src0_rep_stride=rs, src1_blk_stride=1, src1_rep_stride=rs)
        self.vector(one, count)

    def store(self, o, c0, length: int, acc: ir.Value) -> None:
        out = acc
        if self.acc != self.elem:
            out = nir.alloc([length], self.elem, "ub")
            self.convert(out, acc, length, "rint", self.es, self.aes)
        copy("cce.copy_ub_to_gm", out, sub(self.dst, lin((o, self.inner), (c0, 1)), length), 1,
             length * self.es // self.granule)

    def convert(self, dst: ir.Value, src: ir.Value, count: int, mode: str, des: int,
                ses: int) -> None:
        self.vector(lambda off, span, rep, mask: nir.create_op(
            "cce.vconv", [sub(dst, off, span), sub(src, off, span)], repeat=rep, mask=mask,
            dst_blk_stride=1, dst_rep_stride=self.rep_stride(des), src_blk_stride=1,
            src_rep_stride=self.rep_stride(ses), round_mode=mode), count)

    def rep_stride(self, es: int) -> int:
        return self.geo.lanes * es // self.granule

    def vector(self, body, count: int) -> None:
        """`body(offset, span, repeat, mask)` per instruction over `count` elements."""
        lanes = self.geo.lanes
        for ins in split_repeats(count, lanes, self.geo.max_repeat):
            body(ins.offset, (ins.repeat - 1) * lanes + ins.mask, ins.repeat, ins.mask)
