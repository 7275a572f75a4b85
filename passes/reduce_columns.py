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

Short reductions (`rows * inner` accumulator elements within the vector
repeat stride, rows whole blocks: a global pool of an NC1HWC0 map is
[N*C1, H*W, 16]) take many outer indices per chunk instead (`OuterBatches`):
one contiguous copy of K whole [rows, inner] slabs, one conversion, and the
pairwise folds run over all K slabs at once (the repeat walks the outer
index, the repeat stride one slab). Per outer index the old loop paid a
load's latency and a dozen one-repeat instructions: ResNet-50's head,
[128, 49, 16] f16, took 54,738 cycles for a vector bound of ~3,400.
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
        # A reduce_sum's `scale` (a global average's 1/(H*W)): the rounded
        # results times it, as ascend.muls would compute them, before the store.
        self.scale = nir.float_attr(op, "scale") if nir.has_attr(op, "scale") else None


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
        batches = OuterBatches.plan(self)
        if batches is not None:
            batches.emit()
            return
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
        self.scaled(out, 1, 0, length)
        copy("cce.copy_ub_to_gm", out, sub(self.dst, lin((o, self.inner), (c0, 1)), length), 1,
             length * self.es // self.granule)

    def convert(self, dst: ir.Value, src: ir.Value, count: int, mode: str, des: int,
                ses: int) -> None:
        self.vector(lambda off, span, rep, mask: nir.create_op(
            "cce.vconv", [sub(dst, off, span), sub(src, off, span)], repeat=rep, mask=mask,
            dst_blk_stride=1, dst_rep_stride=self.rep_stride(des), src_blk_stride=1,
            src_rep_stride=self.rep_stride(ses), round_mode=mode), count)

    def scaled(self, buf: ir.Value, k: int, stride: int, count: int) -> None:
        """`buf`'s first `count` elements (k = 1), or those of each of `k` runs
        `stride` blocks apart, times the scale in place (the element type)."""
        if self.scale is None:
            return
        if k == 1:
            rs = self.rep_stride(self.es)
            self.vector(lambda off, span, rep, mask: nir.create_op(
                "cce.vmuls", [sub(buf, off, span)] * 2, repeat=rep, mask=mask, dst_blk_stride=1,
                dst_rep_stride=rs, src_blk_stride=1, src_rep_stride=rs, scalar=self.scale), count)
            return
        lanes = self.geo.lanes
        for s0 in range(0, count, lanes):
            mask = min(lanes, count - s0)
            view = sub(buf, s0, (k - 1) * stride * self.granule // self.es + mask)
            nir.create_op("cce.vmuls", [view, view], repeat=k, mask=mask, dst_blk_stride=1,
                          dst_rep_stride=stride, src_blk_stride=1, src_rep_stride=stride,
                          scalar=self.scale)

    def rep_stride(self, es: int) -> int:
        return self.geo.lanes * es // self.granule

    def vector(self, body, count: int) -> None:
        """`body(offset, span, repeat, mask)` per instruction over `count` elements."""
        lanes = self.geo.lanes
        for ins in split_repeats(count, lanes, self.geo.max_repeat):
            body(ins.offset, (ins.repeat - 1) * lanes + ins.mask, ins.repeat, ins.mask)


class OuterBatches:
    """K outer indices a chunk, each a [rows, inner] slab of the accumulation
    type in UB (module docstring). Every fold instruction covers one segment
    of `lanes` columns of the folded rows in all K slabs (repeat = K, repeat
    stride = one slab), so a chunk costs ~log2(rows) * rows * inner / lanes
    instructions whatever K is."""

    def __init__(self, r: ColumnReduce, k: int):
        self.r, self.k = r, k
        self.slab = r.rows * r.inner  # elements of one outer index
        self.stride = self.slab * r.aes // r.granule  # one slab, in blocks

    @classmethod
    def plan(cls, r: ColumnReduce) -> "OuterBatches | None":
        """The batching for `r`, or None where the per-outer loop is as good
        or the slab does not fit the repeat stride (or UB)."""
        t, p = r.p.target, r.p
        if r.outer < 2 or not r.aligned or r.rows < 2:
            return None
        slab = r.rows * r.inner
        if slab * r.aes // r.granule > t.vector_max_stride:
            return None
        widened = r.acc != r.elem
        # Per slab: the loaded rows, their widened copy and the narrowed
        # result. `ub-fraction` is one slot's share: npu-double-buffer
        # ping-pongs the loaded rows, the two slots share one widened copy
        # and one result (counted at half weight in each). Where the two
        # slots do not fit UB (a share over 0.5), the loop stays
        # single-buffered and a slot has no twin to share with: all three
        # buffers, whole, must fit UB (at 0.8, ResNet-50's head took 303,104
        # bytes of 262,144). At shares up to 0.5 the first bound implies it.
        loaded, shared = slab * r.es, (slab * r.aes + r.inner * r.es if widened else 0)
        per_slot = loaded + shared // 2
        budget = int(t.capacity("ub") * p.ub_fraction)
        k = min(r.outer, budget // per_slot, t.capacity("ub") // (loaded + shared),
                r.geo.max_repeat, copy_field_max("n_burst"))
        if p.max_chunk:  # a cap under one slab tests the per-outer pieces instead
            k = min(k, p.max_chunk // slab)
        if k < 2 and not (p.max_chunk and k == 1):
            return None
        # Equal chunks: a short tail would pay a load's latency for little.
        return cls(r, -(-r.outer // -(-r.outer // k)))

    def emit(self) -> None:
        for_pieces(plan_chunks(self.r.outer, self.k, 1), self.chunk)

    def chunk(self, o0, k: int) -> None:
        r, slab = self.r, self.slab
        es, g, lanes = r.es, r.granule, r.geo.lanes
        buf = nir.alloc([k * slab], r.elem, "ub")
        copy("cce.copy_gm_to_ub", sub(r.src, lin((o0, slab)), k * slab), buf, 1,
             k * slab * es // g)
        work = buf
        if r.acc != r.elem:
            work = nir.alloc([k * slab], r.acc, "ub")
            r.convert(work, buf, k * slab, "none", r.aes, es)
        n = r.rows
        while n > 1:  # rows [h, n) onto [0, n - h) of every slab: disjoint
            h = (n + 1) // 2
            count = (n - h) * r.inner
            for s0 in range(0, count, lanes):
                mask = min(lanes, count - s0)
                span = (k - 1) * slab + mask
                dst = sub(work, s0, span)
                nir.create_op(r.fold_op, [dst, dst, sub(work, h * r.inner + s0, span)],
                              repeat=k, mask=mask, dst_blk_stride=1, dst_rep_stride=self.stride,
                              src0_blk_stride=1, src0_rep_stride=self.stride, src1_blk_stride=1,
                              src1_rep_stride=self.stride)
            n = h
        self.store(o0, k, work)

    def store(self, o0, k: int, work: ir.Value) -> None:
        """Row 0 of each slab is its result: narrowed into a dense [k, inner]
        buffer (f32 sums of f16) and stored with one burst, or stored
        straight from the slabs with one burst per slab (the rest of the
        slab as the UB-side gap)."""
        r = self.r
        es, g, inner, lanes = r.es, r.granule, r.inner, r.geo.lanes
        dst = sub(r.dst, lin((o0, inner)), k * inner)
        if r.acc == r.elem:
            r.scaled(work, k, self.stride, inner)
            copy("cce.copy_ub_to_gm", sub(work, 0, (k - 1) * self.slab + inner), dst, k,
                 inner * es // g, src_gap=(self.slab - inner) * es // g)
            return
        out = nir.alloc([k * inner], r.elem, "ub")
        for s0 in range(0, inner, lanes):
            mask = min(lanes, inner - s0)
            nir.create_op("cce.vconv", [sub(out, s0, (k - 1) * inner + mask),
                                        sub(work, s0, (k - 1) * self.slab + mask)],
                          repeat=k, mask=mask, dst_blk_stride=1,
                          dst_rep_stride=inner * es // g, src_blk_stride=1,
                          src_rep_stride=self.stride, round_mode="rint")
        r.scaled(out, 1, 0, k * inner)
        copy("cce.copy_ub_to_gm", out, dst, 1, k * inner * es // g)
