"""Broadcasts the tiled elementwise lowering cannot place, for
`npu-lower-elementwise`: rows under one 32-byte block (e.g. [2, 10] + [10]
in f16, or a [3, 1] column against [3, 7]), slice loops whose slices are
under one block, and i8 operands that broadcast (vnchwconv has no 1-byte
form).

The whole problem is held in UB. Every input that broadcasts is first
materialised in the output's shape, as the general transpose gathers:
  1. load it whole (one copy); i8 is converted to f16 (exact);
  2. expand every element to its own 32-byte block (`vnchwconv`);
  3. assemble the blocks in output order, one instruction per output row
     (last output dim, n elements): a `copy_ub_to_ub` of n one-block bursts
     with source gap s - 1 when the input follows that dim with stride s,
     or a `vmax(x, x)` reading one block with block and repeat stride 0
     when it broadcasts along it;
  4. compact the blocks back to elements (`vnchwconv`), and convert i8
     back.
Then the op's own instructions run over the flat buffers (as the flat
lowering does) and the output is stored with one copy. Tensors that do not
fit half of UB with the 16x / 8x expansion are rejected at the op.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.costmodel.vector.recipes import Compute
from npu.costmodel.vector.tiling import plan_chunks, round_up, split_repeats
from npu.kernels.cce_build import View, copy, delinearize, for_pieces, for_range, lin, sub
from npu.kernels.vector_compute import emit
from npu.passes.base import PassError
from npu.passes.transpose_general import compact_blocks, expand_to_blocks, halving_fit


class SmallElementwise:
    """Emits one op (module docstring)."""

    def __init__(self, p, op: ir.Operation, in_shapes: Sequence[Sequence[int]],
                 out_shape: Sequence[int], elems: Sequence[str], out_elem: str,
                 compute: Compute, why: str, views: Sequence[ir.Value] | None = None):
        self.p, self.op, self.compute = p, op, compute
        # flat GM memrefs of the inputs and the output (a chunk's), else the op's operands
        self.views = list(views) if views is not None else None
        self.in_shapes, self.out_shape = [list(s) for s in in_shapes], list(out_shape)
        self.elems, self.out_elem = list(elems), out_elem
        self.granule = p.target.granule("ub")
        self.rows = p.target.fractal
        self.total = int(np.prod(out_shape))
        self.groups = -(-self.total // self.rows)
        need = self.ub_bytes()
        budget = int(p.target.capacity("ub") * p.ub_fraction)
        if need > budget:
            raise PassError(f"{why}; the whole-tensor fallback needs {need} bytes of UB "
                            f"(budget {budget})", op)

    def work_elem(self, elem: str) -> str:
        return "f16" if elem == "i8" else elem

    def materialised(self, k: int) -> bool:
        rank = len(self.out_shape)
        padded = [1] * (rank - len(self.in_shapes[k])) + self.in_shapes[k]
        return padded != self.out_shape

    def ub_bytes(self) -> int:
        g = self.granule
        total = 0
        for k, elem in enumerate(self.elems):
            es = nir.element_bytes(elem)
            total += round_up(self.total, g) * es
            if self.materialised(k):
                n = int(np.prod(self.in_shapes[k]))
                total += round_up(n, g) * 4 + round_up(n, self.rows) * g  # load, expanded
                total += self.groups * self.rows * g + (2 * self.groups * 2 + 2) * g
        total += round_up(self.total, g) * nir.element_bytes(self.out_elem)
        total += sum(round_up(self.total, g) * nir.element_bytes(t) for t in self.compute.temps)
        return total

    def emit(self) -> None:
        operands = self.views or [nir.flatten_memref(v) for v in self.op.operands]
        bufs = [self.load(k, operands[k]) for k in range(len(self.elems))]
        out_es = nir.element_bytes(self.out_elem)
        sizes = [nir.element_bytes(e) for e in self.elems + [self.out_elem]]
        sizes += [nir.element_bytes(t) for t in self.compute.temps]
        lanes = self.p.target.lanes(max(sizes))
        g = self.granule
        padded = round_up(self.total, g)
        out = nir.alloc([padded], self.out_elem, "ub")
        tmps = [(nir.alloc([padded], t, "ub"), nir.element_bytes(t)) for t in self.compute.temps]
        for ins in split_repeats(self.total, lanes, self.p.target.max_repeat):
            span = (ins.repeat - 1) * lanes + ins.mask

            def view(buf: ir.Value, es: int) -> View:
                return View(sub(buf, ins.offset, span), 1, lanes * es // g)

            emit(self.compute, view(out, out_es),
                               [view(b, nir.element_bytes(e)) for b, e in zip(bufs, self.elems)],
                               ins.repeat, ins.mask, [view(b, es) for b, es in tmps])
        stored = -(-self.total * out_es // g)
        copy("cce.copy_ub_to_gm", sub(out, 0, stored * g // out_es), operands[-1], 1, stored)

    def load(self, k: int, value: ir.Value) -> ir.Value:
        """Input k in the output's shape, flat in UB."""
        elem, g = self.elems[k], self.granule
        es = nir.element_bytes(elem)
        n = int(np.prod(self.in_shapes[k]))
        raw = nir.alloc([round_up(max(n, self.total), g)], elem, "ub")
        copy("cce.copy_gm_to_ub", value, raw, 1, -(-n * es // g))
        if not self.materialised(k):
            return raw
        work = self.work_elem(elem)
        wes = nir.element_bytes(work)
        b = g // wes
        src = raw
        if work != elem:
            src = nir.alloc([round_up(n, g)], work, "ub")
            self.convert(src, raw, n, "none")
        expanded = nir.alloc([round_up(n, self.rows) * b], work, "ub")
        expand_to_blocks(self.p, src, expanded, n, wes)
        assembled = nir.alloc([self.groups * self.rows * b], work, "ub")
        self.assemble(k, expanded, assembled, b, wes)
        out_blocks = self.groups * self.rows // b
        compacted = nir.alloc([(2 * out_blocks + 2) * b], work, "ub")
        compact_blocks(self.p, assembled, compacted, self.groups, wes)
        if work == elem:
            return compacted
        back = nir.alloc([round_up(self.total, g)], elem, "ub")
        self.convert(back, compacted, self.total, "rint")
        return back

    def assemble(self, k: int, expanded: ir.Value, assembled: ir.Value, b: int,
                 wes: int) -> None:
        rank = len(self.out_shape)
        shape = [1] * (rank - len(self.in_shapes[k])) + self.in_shapes[k]
        strides = [int(np.prod(shape[d + 1:])) if shape[d] != 1 else 0 for d in range(rank)]
        n = self.out_shape[-1]
        s = strides[-1]
        lead = self.out_shape[:-1]
        g = self.granule
        lanes = self.p.target.lanes(wes)

        def row(i) -> None:
            index = delinearize(i, lead) if lead else []
            start = lin(*[(ix, st * b) for ix, st in zip(index, strides[:-1]) if st])
            dst = sub(assembled, lin((i, n * b)), n * b)
            if s:
                copy("cce.copy_ub_to_ub", sub(expanded, start, ((n - 1) * s + 1) * b), dst, n, 1,
                     src_gap=s - 1, dst_gap=0)
                return
            one = sub(expanded, start, b)
            for ins in split_repeats(n * b, lanes, self.p.target.max_repeat):
                span = (ins.repeat - 1) * lanes + ins.mask
                d = sub(dst, ins.offset, span)
                nir.create_op("cce.vmax", [d, one, one], repeat=ins.repeat, mask=ins.mask,
                              dst_blk_stride=1, dst_rep_stride=lanes * wes // g,
                              src0_blk_stride=0, src0_rep_stride=0, src1_blk_stride=0,
                              src1_rep_stride=0)

        for_range(int(np.prod(lead)) if lead else 1, row)

    def convert(self, dst: ir.Value, src: ir.Value, count: int, mode: str) -> None:
        des, ses = (nir.element_bytes(nir.memref_element(v)) for v in (dst, src))
        g = self.granule
        lanes = self.p.target.lanes(max(des, ses))
        for ins in split_repeats(count, lanes, self.p.target.max_repeat):
            span = (ins.repeat - 1) * lanes + ins.mask
            nir.create_op("cce.vconv", [sub(dst, ins.offset, span), sub(src, ins.offset, span)],
                          repeat=ins.repeat, mask=ins.mask, dst_blk_stride=1,
                          dst_rep_stride=lanes * des // g, src_blk_stride=1,
                          src_rep_stride=lanes * ses // g, round_mode=mode)


def lower_small(p, op: ir.Operation, in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int],
                elems: Sequence[str], out_elem: str, compute: Compute, why: str) -> None:
    """The whole-tensor fallback, or, when the tensors do not fit UB, the
    same on chunks of the output's leading dims that every input either
    follows or broadcasts along (EfficientNet's squeeze-excite scale at
    2x2 in NCHW: [1, 1152, 2, 2] times a [1, 1152, 1, 1] gate, chunks of
    channels). A chunk is whole blocks in every tensor that advances with
    it (the last ends at the tensors' ends), so no chunk's store touches
    another's elements; an input that broadcasts along the chunked dims is
    loaded whole for each chunk."""
    try:
        SmallElementwise(p, op, in_shapes, out_shape, elems, out_elem, compute, why).emit()
        return
    except PassError as refusal:
        first_refusal = refusal
    rank = len(out_shape)
    padded = [[1] * (rank - len(s)) + list(s) for s in in_shapes]
    t = 0  # leading dims every input follows or broadcasts alike
    while t < rank - 1 and all(s[:t + 1] == list(out_shape[:t + 1]) or s[:t + 1] == [1] * (t + 1)
                               for s in padded):
        t += 1
    lead = int(np.prod(out_shape[:t], dtype=np.int64))
    follows = [s[:t] == list(out_shape[:t]) and lead > 1 for s in padded]
    inner = [int(np.prod(s[t:], dtype=np.int64)) for s in padded] + [
        int(np.prod(out_shape[t:], dtype=np.int64))]
    g = p.target.granule("ub")
    step = 1
    for k, elem in enumerate(list(elems) + [out_elem]):
        if k == len(elems) or follows[k]:
            b = g // nir.element_bytes(elem)
            step = math.lcm(step, b // math.gcd(inner[k], b))

    def chunk_op(n: int, views=None) -> SmallElementwise:
        shapes = [[n if f else 1] + s[t:] for s, f in zip(padded, follows)]
        return SmallElementwise(p, op, shapes, [n] + list(out_shape[t:]), elems, out_elem,
                                compute, why, views)

    found = halving_fit(lead, step, chunk_op)
    if found is None:
        raise first_refusal
    flats = [nir.flatten_memref(v) for v in op.operands]

    def chunk(start, n: int) -> None:
        views = [sub(f, lin((start, inner[k])), n * inner[k]) if k == len(elems) or follows[k]
                 else f for k, f in enumerate(flats)]
        chunk_op(n, views).emit()
    for_pieces(plan_chunks(lead, found[0], 1), chunk)
