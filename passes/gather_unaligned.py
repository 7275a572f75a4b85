"""npu-lower-gather for rows that are not whole 32-byte blocks (a 30 x 20
f32 table: 80-byte rows): the rows are realigned in UB element by element.

A DMA burst moves whole blocks and its UB side starts on a block, so a row
of W elements cannot land at element r * W of a UB buffer. Per chunk of R
output rows:
  1. each row is read as Wp = W rounded up to a block (one burst; its start
     moved back so the burst ends inside the table's last granule when the
     row is near the end: the row then sits `shift` elements into its slot)
     into slot r of a staging buffer;
  2. `vnchwconv` expands every staged element to a block of its own
     (`transpose_general.expand_to_blocks`);
  3. one `copy_ub_to_ub` per row moves its W blocks (from `shift`, computed
     again from the id) to their packed place;
  4. `vnchwconv` compacts the blocks back to elements
     (`transpose_general.compact_blocks`) and one store writes the chunk.
R * W is a whole number of blocks (so every chunk but the last ends on a
block; the last one's store ends in the output's last granule). It costs two
vnchwconv passes over 8x (f32) / 16x (f16) the data: meant for the small
tables of odd hidden sizes; real embeddings take the direct path.
"""

from __future__ import annotations

import math

import numpy as np

from mlir import ir
from mlir.dialects import arith, cf, memref

from npu import ir as nir
from npu.kernels.cce_build import Index, copy, delinearize, for_range, lin, sub
from npu.passes.base import PassError
from npu.passes.transpose_general import compact_blocks, expand_to_blocks


def _round_up(a: int, b: int) -> int:
    return -(-a // b) * b


def checked_id(ids: ir.Value, at: Index, size: int, message: str) -> ir.Value:
    """The id at element `at` of `ids` as the scalar unit reads it (one GM
    load), a negative one wrapped by `size` (ONNX), asserted in [0, size)."""
    at = at if isinstance(at, ir.Value) else nir.index_const(at)
    loaded = memref.LoadOp(ids, [at]).result
    index = arith.IndexCastOp(ir.IndexType.get(), loaded).result
    zero, bound = nir.index_const(0), nir.index_const(size)
    negative = arith.CmpIOp(arith.CmpIPredicate.slt, index, zero).result
    wrapped = arith.AddIOp(index, bound).result
    index = arith.SelectOp(negative, wrapped, index).result
    inside = arith.CmpIOp(arith.CmpIPredicate.ult, index, bound).result
    cf.AssertOp(inside, message)
    return index


def range_message(op_name: str, size: int) -> str:
    return (f"{op_name}: an index is outside [{-size}, {size - 1}] (the gathered axis has "
            f"{size} entries)")


class ElementsIndex:
    """GatherElements as a gather of one-element rows: output element r
    reads data element sum(p_d * stride_d) with p the multi-index of r and
    p[axis] its id (what `UnalignedGather` asks of a kernel)."""

    def __init__(self, data: ir.Value, ids: ir.Value, out: ir.Value, elem: str,
                 data_shape: list[int], ids_shape: list[int], axis: int):
        self.table, self.ids, self.out, self.elem = data, ids, out, elem
        self.inner, self.axis, self.ids_shape = 1, axis, ids_shape
        self.strides = [int(np.prod(data_shape[d + 1:], dtype=np.int64))
                        for d in range(len(data_shape))]
        self.size = data_shape[axis]
        self.message = range_message("ascend.gather_elements", self.size)

    def row_index(self, r: Index) -> ir.Value:
        where = delinearize(r, self.ids_shape)
        where[self.axis] = checked_id(self.ids, r, self.size, self.message)
        start = lin(*zip(where, self.strides))
        return start if isinstance(start, ir.Value) else nir.index_const(start)


class UnalignedGather:
    """Emits the realigning gather of one op (`kernel` is the direct path's
    `_Kernel`, whose `row_index` gives each output row's table element)."""

    def __init__(self, p, op: ir.Operation, kernel, total: int, table_elements: int):
        self.p, self.op, self.k = p, op, kernel
        es = nir.element_bytes(kernel.elem)
        if es not in (2, 4):
            raise PassError(f"gathered rows of {kernel.inner} x {kernel.elem} are not whole "
                            "32-byte blocks, and realigning them needs a 2- or 4-byte type", op)
        self.es, self.g = es, p.target.granule("ub")
        self.b = self.g // es  # elements per block
        self.w = kernel.inner
        self.wp = _round_up(self.w, self.b)
        self.total = total
        # The table's bytes as allocated (whole GM granules): a burst may end there.
        granule = p.target.gm_alloc_granule_bytes
        self.table_end = _round_up(table_elements * es, granule) // es
        step = self.b // math.gcd(self.w, self.b)  # rows whose elements are whole blocks
        per_row = self.ub_bytes(1)
        budget = int(p.target.capacity("ub") * p.ub_fraction)
        rows = (budget - self.ub_bytes(0)) // per_row // step * step
        if p.max_rows:
            rows = min(rows, max(step, p.max_rows // step * step))
        if rows < step:
            raise PassError(f"gathered rows of {self.w} x {kernel.elem} are realigned {step} at "
                            f"a time in UB, which needs {self.ub_bytes(step)} bytes (budget "
                            f"{budget})", op)
        self.rows = min(rows, _round_up(total, step))

    def ub_bytes(self, rows: int) -> int:
        """Staging, expanded and assembled blocks, compacted output and scratch."""
        g, f = self.g, self.p.target.fractal
        staged = rows * self.wp
        packed = _round_up(rows * self.w, f)
        return (staged * self.es + _round_up(staged, f) * g + packed * g
                + (2 * packed // self.b + 2) * g + (3 * g if rows == 0 else 0))

    def emit(self) -> None:
        full, tail = divmod(self.total, self.rows)
        if full:
            for_range(full, lambda c: self.chunk(lin((c, self.rows)), self.rows))
        if tail:
            self.chunk(full * self.rows, tail)

    def source(self, r: Index) -> tuple[ir.Value, ir.Value]:
        """(first element of the burst reading row r, the row's shift in it)."""
        start = self.k.row_index(r)
        last = nir.index_const(self.table_end - self.wp)
        begin = arith.MinSIOp(start, last).result
        return begin, arith.SubIOp(start, begin).result

    def chunk(self, r0: Index, n: int) -> None:
        k, b, w, wp, es, g = self.k, self.b, self.w, self.wp, self.es, self.g
        f = self.p.target.fractal
        staging = nir.alloc([self.rows * wp], k.elem, "ub")

        def stage(i: Index) -> None:
            begin, _ = self.source(lin((r0, 1), (i, 1)))
            copy("cce.copy_gm_to_ub", sub(k.table, begin, wp), sub(staging, lin((i, wp)), wp), 1,
                 wp // b)

        for_range(n, stage)
        staged = n * wp
        expanded = nir.alloc([_round_up(self.rows * wp, f) * b], k.elem, "ub")
        expand_to_blocks(self.p, staging, expanded, staged, es)
        groups = -(-(n * w) // f)
        assembled = nir.alloc([_round_up(self.rows * w, f) * b], k.elem, "ub")

        def assemble(i: Index) -> None:
            _, shift = self.source(lin((r0, 1), (i, 1)))
            at = lin((i, wp * b), (shift, b))
            copy("cce.copy_ub_to_ub", sub(expanded, at, w * b), sub(assembled, lin((i, w * b)), w * b),
                 1, w)

        for_range(n, assemble)
        out_blocks = _round_up(self.rows * w, f) // b
        out = nir.alloc([(2 * out_blocks + 2) * b], k.elem, "ub")
        compact_blocks(self.p, assembled, out, groups, es)
        length = _round_up(n * w, b)
        # The burst may run past the view (the last chunk) into the output's last granule.
        copy("cce.copy_ub_to_gm", sub(out, 0, length), sub(k.out, lin((r0, w)), n * w), 1,
             length * es // g)
