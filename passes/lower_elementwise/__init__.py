"""npu-lower-elementwise: ascend binary/scalar/unary/cast/clamp ops -> cce
vector code (thesis 6.4.3).

Scheme, per op:
  * classify each input against the output shape (numpy broadcasting):
    `full` (same shape), `scalar` (one element), `row` (varies along the last
    axis only: a bias row), `column` (varies along all but the last axis);
    anything else is rejected at the op;
  * with only full/scalar inputs the tensors are flattened and cut into the
    largest chunk whose UB buffers fit `ub-fraction` of UB (the rest is left
    for the double-buffered copy of the same buffers); the remainder that is
    not a whole number of 32-byte blocks is handled by the overlap tail
    (`npu.costmodel.vector.tiling.plan_chunks`). When the output aliases an input, the
    tail's inputs are loaded before the loop, so the overlap never re-reads
    results;
  * with a row or column input the output is viewed as [rows, N] and cut
    into chunks of whole rows; row inputs are loaded once, column inputs per
    chunk and expanded to one broadcast block per row with `vnchwconv`;
    instructions run down the rows with a repeat stride of one row (column
    operand: block stride 0, repeat stride one block). A row that is not
    whole blocks is handled as its whole blocks plus the block ending at the
    row's end (see `RowsLowering`);
  * a scalar input is loaded as one granule and its element 0 broadcast to
    a whole block by one `vnchwconv` (any 2- or 4-byte type), read with
    block and repeat stride 0;
  * vector instructions use the full mask over whole repeats, at most
    `max_repeat` repeats each, and a partial mask for the last repeat;
  * a tensor smaller than one granule is moved as one whole granule (the
    padded-argument convention of dialects/README.md), computing only its
    own lanes; with mixed element sizes each tensor moves only the granules
    its own elements occupy (never past its padded last granule).

What each op computes per instruction (the composed recipes of neg,
sigmoid, tanh and erf, the vconv chains of casts, vcmp / vsel for cmp and
select, vmax(x, x) for broadcast copies) and its precision is in
`npu.costmodel.vector.recipes` (emitted by `npu.kernels.vector_compute`).

General broadcasting: the output's dims of size 1 are dropped and adjacent
dims that every input either follows or broadcasts alike are merged. Two
merged dims or fewer are exactly the cases above (same-shape, scalar, row,
column). With more, the leading merged dims become an `scf.for` over 2-D
slices (the last two merged dims), each slice lowered as above at its GM
offset; a slice of the output must then be at least one 32-byte block
(smaller ones would share a granule with the next slice).
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.costmodel.vector.broadcast import OuterDims, classify, collapse_broadcast
from npu.costmodel.vector.recipes import compute_of
from npu.costmodel.vector.tiling import VectorGeometry
from npu.dialects.ascend import broadcastable
from npu.kernels.cce_build import delinearize, for_range, lin, sub
from npu.passes.base import Option, Pass, PassError, ub_fraction_option
from npu.passes.applies import OnOps
from npu.passes.elementwise_small import lower_small

from .flat import FlatLowering, budget_bytes, stream_chunks, writes_in_place
from .operands import BROADCASTING, HANDLED, Input
from .rows import RowsLowering

__all__ = ["LowerElementwise", "Input", "stream_chunks", "budget_bytes", "writes_in_place",
           "FlatLowering", "RowsLowering", "HANDLED", "BROADCASTING"]


# ----------------------------------------------------------------------------
# The pass
# ----------------------------------------------------------------------------


class LowerElementwise(Pass):
    name = "npu-lower-elementwise"
    summary = "Lower ascend elementwise/scalar/unary/cast/clamp ops to cce vector code"
    handles = HANDLED
    acts_on = OnOps("elementwise op", handles)  # every option: the program has one
    options = (
        ub_fraction_option(0.5,
                           "fraction of UB one iteration's buffers may use (0.5 leaves room for "
                           "double buffering)"),
        Option("in-place-unary", bool, False,
               "ops with one streamed input write the result over it (bigger chunks, but "
               "double buffering cannot overlap the chain)"),
        Option("max-chunk", int, 0,
               "cap on the chunk size in elements (0: as large as UB allows); for tests", low=0),
    )

    def run(self, module: ir.Operation) -> None:
        self.lower_each(module, erase=True)

    def lower(self, op: ir.Operation) -> None:
        operands = list(op.operands)
        out = operands[-1]
        out_shape = nir.memref_shape(out)
        for v in operands:
            if nir.memory_space(v) != "gm":
                raise PassError("elementwise operands must be memrefs in \"gm\"", op)
            if not nir.is_contiguous(v):
                raise PassError(f"operand of type {v.type} is not contiguous (row-major, "
                                "dense); the vector lowering moves whole runs", op)
        in_shapes = [nir.memref_shape(v) for v in operands[:-1]]
        for shape in in_shapes:
            if not broadcastable(shape, out_shape):
                raise PassError(f"operand shape {shape} does not broadcast to the output shape "
                                f"{out_shape}", op)
        if op.name not in BROADCASTING and in_shapes[0] != out_shape:
            raise PassError(f"input shape {in_shapes[0]} must equal the output shape "
                            f"{out_shape}", op)
        out_elem = nir.memref_element(out)
        elems = [nir.memref_element(v) for v in operands[:-1]]
        compute = compute_of(op, elems, out_elem)
        dims, slice_in, slice_out = collapse_broadcast(in_shapes, out_shape)
        if self.rows_too_long(op, slice_in, slice_out, elems + [out_elem]):
            # A row operand of rows longer than the repeat stride reaches:
            # one slice per row, where it is a full run.
            dims, slice_in, slice_out = collapse_broadcast(in_shapes, out_shape, inner_runs=1)
        flats = [nir.flatten_memref(v) for v in operands]
        aliased = [v == out for v in operands[:-1]]

        def lower_slice(in_offsets, out_offset) -> None:
            inputs = []
            for k, (flat, shape, e) in enumerate(zip(flats, slice_in, elems)):
                size = int(np.prod(shape))
                view = flat if in_offsets is None else sub(flat, in_offsets[k], size)
                inputs.append(Input(view, classify(op, shape, slice_out), e, aliased[k]))
            out_view = flats[-1] if out_offset is None else sub(flats[-1], out_offset,
                                                                 int(np.prod(slice_out)))
            if any(i.kind in ("row", "column") for i in inputs):
                RowsLowering(self, op, inputs, out_view, slice_out, out_elem, compute).emit()
            else:
                FlatLowering(self, op, inputs, out_view, slice_out, out_elem, compute).emit()

        why = self.untileable(op, dims, slice_in, slice_out, elems, out_elem)
        if why:
            lower_small(self, op, in_shapes, out_shape, elems, out_elem, compute, why)
            return
        if not dims.outer:
            lower_slice(None, None)
            return

        def body(i) -> None:
            index = delinearize(i, dims.outer)
            offsets = [lin(*[(ix, st) for ix, st in zip(index, strides) if st])
                       for strides in dims.in_strides]
            out_offset = lin(*[(ix, st) for ix, st in zip(index, dims.out_strides)])
            lower_slice(offsets, out_offset)

        for_range(int(np.prod(dims.outer)), body)

    def rows_too_long(self, op: ir.Operation, slice_in: list[list[int]], slice_out: list[int],
                      elems: list[str]) -> bool:
        """A slice with a row operand (and no column) whose rows of whole
        blocks are wider than the vector repeat stride (`RowsLowering` steps
        a row per repeat): one slice per row streams it as a full run. (A
        column would become a one-element slice per row, which the slice
        loop does not move: `RowsLowering` computes those rows one by one.)"""
        kinds = {classify(op, s, slice_out) for s in slice_in}
        if len(slice_out) < 2 or "row" not in kinds or "column" in kinds:
            return False
        sizes = [nir.element_bytes(e) for e in elems]
        whole = slice_out[-1] - slice_out[-1] % VectorGeometry.for_types(self.target, sizes).block
        return whole * max(sizes) // self.target.granule("ub") > self.target.vector_max_stride

    def untileable(self, op: ir.Operation, dims: OuterDims, slice_in: list[list[int]],
                   slice_out: list[int], elems: list[str], out_elem: str) -> str:
        """Why the tiled lowering (flat / rows, in a slice loop) cannot place
        this broadcast; empty when it can."""
        block = VectorGeometry.for_types(
            self.target, [nir.element_bytes(e) for e in elems + [out_elem]]).block
        kinds = [classify(op, s, slice_out) for s in slice_in]
        if dims.outer:
            # A slice under one block would move a whole granule: past the
            # slice (clobbering the next one, or out of the tensor for the
            # last); a one-element slice too, unless it never moves.
            moving = [s for s, strides in zip(slice_in, dims.in_strides) if any(strides)]
            small = [list(s) for s in slice_in + [slice_out]
                     if 1 < int(np.prod(s)) < block or (s in moving and int(np.prod(s)) == 1)]
            if small:
                return (f"broadcasting to {nir.memref_shape(op.operands[-1])} loops over slices "
                        f"of shape {slice_out}, and a slice of shape {small[0]} is smaller than "
                        f"one 32-byte block ({block} elements)")
        n = slice_out[-1]
        if any(k in ("row", "column") for k in kinds) and n % block and n < block:
            return (f"broadcasting a row or column operand needs the last dimension ({n}) to be "
                    f"at least one 32-byte block ({block} elements)")
        if any(e == "i8" and k in ("column", "scalar") for e, k in zip(elems, kinds)):
            return "an i8 operand broadcast as a column or scalar"
        return ""
