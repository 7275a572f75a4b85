"""A row or column input: the output viewed as [rows, N] and streamed in
chunks of whole rows."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.costmodel.vector.recipes import Compute
from npu.costmodel.vector.tiling import VectorGeometry, max_chunk_elements, plan_chunks, round_down
from npu.kernels.cce_build import View, copy, for_range, lin, sub
from npu.kernels.scalar_blocks import expand_scalar_blocks, load_scalar
from npu.kernels.vector_compute import emit
from npu.passes.base import Pass, PassError

from .flat import budget_bytes, stream_chunks, writes_in_place
from .operands import Input


class RowsLowering:
    """A row or column input: the output viewed as [rows, N], chunks of whole
    rows. In UB each row is its whole blocks (`nm` elements) so a row-wise
    instruction steps from row to row with its repeat stride. When N is not
    whole blocks, each row also gets the block that ends at the row's end
    (elements N-b..N-1, in bounds), computed with the bias block that ends at
    the bias's end; storing it rewrites b - r elements of the main part with
    the same values (overlap). That costs one copy per row and part."""

    def __init__(self, p: Pass, op: ir.Operation, inputs: list[Input], out: ir.Value,
                 out_shape: Sequence[int], out_elem: str, compute: Compute):
        self.p, self.op, self.inputs, self.out, self.out_elem = p, op, inputs, out, out_elem
        self.compute = compute
        if compute.temps:
            raise PassError("an op with temporaries (a composed recipe or cast chain) cannot "
                            "broadcast its input", op)
        self.n = out_shape[-1]
        self.m = int(np.prod(out_shape[:-1])) if len(out_shape) > 1 else 1
        sizes = [nir.element_bytes(i.elem) for i in inputs] + [nir.element_bytes(out_elem)]
        self.geo = VectorGeometry.for_types(p.target, sizes)
        self.granule = p.target.granule("ub")
        self.block = self.geo.block
        self.r = self.n % self.block
        self.nm = self.n - self.r
        if self.r and self.n < self.block:
            raise PassError(f"broadcasting a row or column operand needs the last dimension "
                            f"({self.n}) to be at least one 32-byte block ({self.block} "
                            "elements)", op)
        self.full = [i for i in inputs if i.kind == "full"]
        self.in_place = writes_in_place(p, compute, self.full)
        # Rows wider than a repeat's stride reaches (a squeeze-excite scale
        # over 112x112 maps: 784 blocks) are computed one row at a time, the
        # repeats stepping along the row instead of from row to row.
        self.row_by_row = self.nm * max(sizes) // self.granule > p.target.vector_max_stride

    def row_elems(self) -> int:
        """UB elements per row of a streamed buffer: whole blocks (+ end block)."""
        return self.nm + (self.block if self.r else 0)

    def emit(self) -> None:
        p, n = self.p, self.n
        columns = [i for i in self.inputs if i.kind == "column"]
        fixed = sum(self.row_elems() * nir.element_bytes(i.elem) for i in self.inputs
                    if i.kind == "row")
        fixed += sum(3 * self.granule for i in self.inputs if i.kind == "scalar")
        per_row = self.row_elems() * (sum(nir.element_bytes(i.elem) for i in self.full)
                                      + (0 if self.in_place else nir.element_bytes(self.out_elem)))
        if self.row_by_row:  # the columns' blocks for every row, loaded once: pieces of any rows
            row_block = 1
            fixed += sum(self.column_blocks(i) * self.granule
                         * (1 + self.granule // nir.element_bytes(i.elem)) for i in columns)
        else:
            row_block = max((self.granule // nir.element_bytes(i.elem) for i in columns), default=1)
            per_row += sum(nir.element_bytes(i.elem) + self.granule for i in columns)
        try:
            max_rows = max_chunk_elements(budget_bytes(p, fixed), per_row, row_block)
        except ValueError:
            raise PassError(f"rows of {n} elements do not fit the UB budget "
                            f"({budget_bytes(p, fixed)} bytes)", self.op) from None
        if p.max_chunk:
            max_rows = min(max_rows, max(row_block, round_down(p.max_chunk // n, row_block)))
        plan = plan_chunks(self.m, max_rows, row_block)
        self.flat = {id(i): nir.flatten_memref(i.value) for i in self.inputs}
        self.flat_out = nir.flatten_memref(self.out)
        self.fixed_views: dict[int, tuple[ir.Value, ir.Value | None] | View] = {}
        for inp in self.inputs:
            if inp.kind == "row":
                es = nir.element_bytes(inp.elem)
                main = nir.alloc([self.nm], inp.elem, "ub")
                copy("cce.copy_gm_to_ub", sub(self.flat[id(inp)], 0, self.nm), main, 1,
                     self.nm * es // self.granule)
                end = None
                if self.r:
                    end = nir.alloc([self.block], inp.elem, "ub")
                    copy("cce.copy_gm_to_ub", sub(self.flat[id(inp)], n - self.block, self.block),
                         end, 1, self.block * es // self.granule)
                self.fixed_views[id(inp)] = (main, end)
            elif inp.kind == "scalar":
                self.fixed_views[id(inp)] = load_scalar(self.p.target, inp.elem,
                                                        self.flat[id(inp)], self.op)
            elif inp.kind == "column" and self.row_by_row:
                self.fixed_views[id(inp)] = self.load_column(inp)
        stream_chunks(plan, self.load_piece, self.store_piece,
                      aliased=any(i.aliases_out for i in self.full))

    def move_rows(self, name: str, gm: ir.Value, row0, rows: int, main: ir.Value,
                  end: ir.Value | None, es: int) -> None:
        """GM rows <-> UB (main part, end block): one copy for all rows when
        rows are whole blocks, else two copies per row."""
        n, nm, b, g = self.n, self.nm, self.block, self.granule
        to_ub = name == "cce.copy_gm_to_ub"

        def one(gm_view: ir.Value, ub_view: ir.Value, blocks: int) -> None:
            if to_ub:
                copy(name, gm_view, ub_view, 1, blocks)
            else:
                copy(name, ub_view, gm_view, 1, blocks)

        if not self.r:
            one(sub(gm, lin((row0, n)), rows * n), main, rows * n * es // g)
            return

        def one_row(k) -> None:
            row = lin((row0, 1), (k, 1))
            one(sub(gm, lin((row, n)), nm), sub(main, lin((k, nm)), nm), nm * es // g)
            one(sub(gm, lin((row, n), (n - b, 1)), b), sub(end, lin((k, b)), b), b * es // g)

        for_range(rows, one_row)

    def load_piece(self, row0, rows: int) -> dict:
        bufs = {}
        col_rows = rows
        rows = min(rows, self.m)  # a padded piece (column operand under one block)
        for inp in self.inputs:
            es = nir.element_bytes(inp.elem)
            if inp.kind == "full":
                main = nir.alloc([rows * self.nm], inp.elem, "ub")
                end = nir.alloc([rows * self.block], inp.elem, "ub") if self.r else None
                self.move_rows("cce.copy_gm_to_ub", self.flat[id(inp)], row0, rows, main, end, es)
                bufs[id(inp)] = (main, end)
            elif inp.kind == "column" and not self.row_by_row:
                raw = nir.alloc([col_rows], inp.elem, "ub")
                copy("cce.copy_gm_to_ub", sub(self.flat[id(inp)], row0, col_rows), raw, 1,
                     col_rows * es // self.granule)
                per_block = self.granule // es
                expanded = nir.alloc([col_rows * per_block], inp.elem, "ub")
                expand_scalar_blocks(self.p.target, raw, inp.elem, col_rows, expanded, self.op)
                bufs[id(inp)] = expanded
        return bufs

    def store_piece(self, row0, rows: int, bufs: dict) -> None:
        nm, b, lanes, g = self.nm, self.block, self.geo.lanes, self.granule
        rows = min(rows, self.m)
        out_es = nir.element_bytes(self.out_elem)
        if self.in_place:
            out_main, out_end = bufs[id(self.full[0])]
        else:
            out_main = nir.alloc([rows * nm], self.out_elem, "ub")
            out_end = nir.alloc([rows * b], self.out_elem, "ub") if self.r else None
        if self.row_by_row:
            for_range(rows, lambda k: self.compute_row(row0, k, bufs, out_main, out_end))
            self.move_rows("cce.copy_ub_to_gm", self.flat_out, row0, rows, out_main, out_end,
                           out_es)
            return
        # (buffer part, row length in UB, column offset, active lanes)
        segments = [(0, nm, j0, min(lanes, nm - j0)) for j0 in range(0, nm, lanes)]
        if self.r:
            segments.append((1, b, 0, b))
        for part, row_len, j0, mask in segments:
            r0 = 0
            while r0 < rows:
                rep = min(rows - r0, self.geo.max_repeat)
                span = (rep - 1) * row_len + mask

                def full_view(buf: ir.Value, es: int) -> View:
                    return View(sub(buf, r0 * row_len + j0, span), 1, row_len * es // g)

                dst = full_view((out_main, out_end)[part], out_es)
                srcs = []
                for inp in self.inputs:
                    es = nir.element_bytes(inp.elem)
                    if inp.kind == "full":
                        srcs.append(full_view(bufs[id(inp)][part], es))
                    elif inp.kind == "row":
                        srcs.append(View(sub(self.fixed_views[id(inp)][part], j0, mask), 1, 0))
                    elif inp.kind == "scalar":
                        srcs.append(self.fixed_views[id(inp)])
                    else:  # column: one broadcast block per row
                        per_block = g // es
                        srcs.append(View(sub(bufs[id(inp)], r0 * per_block, rep * per_block), 0, 1))
                emit(self.compute, dst, srcs, rep, mask)
                r0 += rep
        self.move_rows("cce.copy_ub_to_gm", self.flat_out, row0, rows, out_main, out_end, out_es)

    def column_blocks(self, inp: Input) -> int:
        """Granules of a column operand's `m` values, whole vnchwconv repeats."""
        per_block = self.granule // nir.element_bytes(inp.elem)
        return -(-self.m // per_block)

    def load_column(self, inp: Input) -> ir.Value:
        """Every row's broadcast block of a column operand (row i's value in
        every lane of block i), loaded and expanded once for all pieces."""
        es = nir.element_bytes(inp.elem)
        per_block, blocks = self.granule // es, self.column_blocks(inp)
        raw = nir.alloc([blocks * per_block], inp.elem, "ub")
        copy("cce.copy_gm_to_ub", sub(self.flat[id(inp)], 0, blocks * per_block), raw, 1, blocks)
        expanded = nir.alloc([blocks * per_block * per_block], inp.elem, "ub")
        expand_scalar_blocks(self.p.target, raw, inp.elem, self.m, expanded, self.op)
        return expanded

    def compute_row(self, row0, k, bufs: dict, out_main: ir.Value,
                    out_end: ir.Value | None) -> None:
        """Row `k` of a piece: repeats of `lanes` elements along the row (each
        operand's repeat stride one repeat's blocks), a column operand's
        broadcast block read again by every repeat."""
        lanes, g, b, nm = self.geo.lanes, self.granule, self.block, self.nm
        out_es = nir.element_bytes(self.out_elem)
        parts = [(0, nm)] + ([(1, b)] if self.r else [])
        for part, row_len in parts:
            whole, tail = divmod(row_len, lanes)
            pieces = [(j0, min(self.geo.max_repeat, whole - j0 // lanes), lanes)
                      for j0 in range(0, whole * lanes, self.geo.max_repeat * lanes)]
            if tail:
                pieces.append((whole * lanes, 1, tail))
            for j0, rep, mask in pieces:
                span = (rep - 1) * lanes + mask

                def along(buf: ir.Value, es: int) -> View:
                    return View(sub(buf, lin((k, row_len), (j0, 1)), span), 1, lanes * es // g)

                srcs = []
                for inp in self.inputs:
                    es = nir.element_bytes(inp.elem)
                    if inp.kind == "full":
                        srcs.append(along(bufs[id(inp)][part], es))
                    elif inp.kind == "row":
                        srcs.append(View(sub(self.fixed_views[id(inp)][part], j0, span), 1,
                                         lanes * es // g))
                    elif inp.kind == "scalar":
                        srcs.append(self.fixed_views[id(inp)])
                    else:  # column: this row's broadcast block, for every repeat
                        per_block = g // es
                        block = sub(self.fixed_views[id(inp)],
                                    lin((row0, per_block), (k, per_block)), per_block)
                        srcs.append(View(block, 0, 0))
                emit(self.compute, along((out_main, out_end)[part], out_es), srcs, rep, mask)
