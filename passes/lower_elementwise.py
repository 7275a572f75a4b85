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
    (`npu.vector_tiling.plan_chunks`). When the output aliases an input, the
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
`npu.vector_compute`.

General broadcasting: the output's dims of size 1 are dropped and adjacent
dims that every input either follows or broadcasts alike are merged. Two
merged dims or fewer are exactly the cases above (same-shape, scalar, row,
column). With more, the leading merged dims become an `scf.for` over 2-D
slices (the last two merged dims), each slice lowered as above at its GM
offset; a slice of the output must then be at least one 32-byte block
(smaller ones would share a granule with the next slice).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.cce_build import View, copy, delinearize, for_range, index_mul, lin, sub
from npu.dialects.ascend import broadcastable
from npu.passes.base import Option, Pass, PassError, ub_fraction_option
from npu.passes.elementwise_small import SmallElementwise
from npu.vector_compute import (BINARY, CAST_CHAINS, SCALAR, UNARY, Compute, Step, cast_compute,
                                unary_compute)
from npu.vector_tiling import (ChunkPlan, VectorGeometry, max_chunk_elements, plan_chunks,
                               round_down, split_repeats)

CMP, SELECT, BROADCAST = "ascend.cmp", "ascend.select", "ascend.broadcast"
# Ops whose inputs broadcast (numpy) to the output.
BROADCASTING = tuple(BINARY) + (CMP, SELECT, BROADCAST)
HANDLED = BROADCASTING + tuple(SCALAR) + tuple(UNARY) + ("ascend.cast", "ascend.clamp")


# ----------------------------------------------------------------------------
# Operands and views
# ----------------------------------------------------------------------------


@dataclass
class Input:
    """A GM input (`value`: a 1-D view of the elements one lowering sees) and
    how it broadcasts to the output."""

    value: ir.Value
    kind: str  # "full" | "scalar" | "row" | "column"
    elem: str
    aliases_out: bool = False  # the same GM memref as the output


def classify(op: ir.Operation, in_shape: Sequence[int], out_shape: Sequence[int]) -> str:
    rank = len(out_shape)
    if len(in_shape) > rank:
        raise PassError(f"operand shape {list(in_shape)} has more dimensions than the output "
                        f"{list(out_shape)}", op)
    padded = [1] * (rank - len(in_shape)) + list(in_shape)
    if any(d not in (1, o) for d, o in zip(padded, out_shape)):
        raise PassError(f"operand shape {list(in_shape)} does not broadcast to the output "
                        f"shape {list(out_shape)}", op)
    if padded == list(out_shape):
        return "full"
    if int(np.prod(padded)) == 1:
        return "scalar"
    if all(d == 1 for d in padded[:-1]) and padded[-1] == out_shape[-1]:
        return "row"
    if padded[-1] == 1 and padded[:-1] == list(out_shape[:-1]):
        return "column"
    raise PassError(f"unsupported broadcast of {list(in_shape)} to {list(out_shape)}: "
                    "only same-shape, scalar, row-vector (last axis) and column-vector "
                    "(all but the last axis) operands are lowered", op)


# ----------------------------------------------------------------------------
# The pass
# ----------------------------------------------------------------------------


class LowerElementwise(Pass):
    name = "npu-lower-elementwise"
    summary = "Lower ascend elementwise/scalar/unary/cast/clamp ops to cce vector code"
    handles = HANDLED
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

    # -- analysis -------------------------------------------------------------
    def compute_of(self, op: ir.Operation, inputs: list["Input"], out_elem: str) -> Compute:
        name = op.name
        in_elem = inputs[-1].elem  # the data operand (select: a/b, not cond)
        if name == "ascend.cast":
            compute = cast_compute(in_elem, out_elem, nir.str_attr(op, "round_mode"))
            if compute is None:
                pairs = ", ".join(f"{a}->{b}" for a, b in sorted(CAST_CHAINS))
                raise PassError(f"unsupported cast from {in_elem} to {out_elem} "
                                f"(supported: {pairs})", op)
            return compute
        if name == CMP:
            if inputs[0].elem != inputs[1].elem or out_elem != "i8":
                raise PassError(f"cmp compares two operands of one type into i8, got "
                                f"{inputs[0].elem}, {inputs[1].elem} -> {out_elem}", op)
            return Compute("cmp", predicate=nir.str_attr(op, "predicate"))
        if name == SELECT:
            if inputs[0].elem != "i8" or not inputs[1].elem == inputs[2].elem == out_elem:
                raise PassError("select needs an i8 condition and a, b, out of one type, got "
                                f"{', '.join(i.elem for i in inputs)} -> {out_elem}", op)
            return Compute("select")
        if any(i.elem != out_elem for i in inputs):
            raise PassError(f"input element type {in_elem} differs from output {out_elem}", op)
        if name == BROADCAST:
            return Compute("copy")
        if name in BINARY:
            return Compute("binary", vop=BINARY[name])
        if name in SCALAR:
            return Compute("scalar", vop=SCALAR[name], scalar=nir.float_attr(op, "scalar"))
        if in_elem not in ("f16", "f32"):
            raise PassError(f"'{name}' needs f16 or f32 operands, got {in_elem}", op)
        if name == "ascend.clamp":
            lo, hi = nir.float_attr(op, "min"), nir.float_attr(op, "max")
            return Compute("unary", steps=(Step("cce.vmaxs", lo, "y", ("x",)),
                                           Step("cce.vmins", hi)))
        return unary_compute(name, in_elem)

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
        probe = [Input(v, "full", e) for v, e in zip(operands[:-1], elems)]
        compute = self.compute_of(op, probe, out_elem)
        dims, slice_in, slice_out = collapse_broadcast(in_shapes, out_shape)
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
            SmallElementwise(self, op, in_shapes, out_shape, elems, out_elem, compute,
                             why).emit()
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


    def untileable(self, op: ir.Operation, dims: "OuterDims", slice_in: list[list[int]],
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


@dataclass(frozen=True)
class OuterDims:
    """Leading merged dims looped over: their sizes, and per operand the
    element stride of each (0 where the operand broadcasts)."""

    outer: list[int]
    in_strides: list[list[int]]
    out_strides: list[int]


def collapse_broadcast(in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int]
                       ) -> tuple[OuterDims, list[list[int]], list[int]]:
    """Merge the output's dims into runs every input follows or broadcasts
    alike; returns the leading runs (all but the last two) as loop dims and
    the per-input / output shapes of one slice (the last two runs)."""
    rank = len(out_shape)
    padded = [[1] * (rank - len(s)) + list(s) for s in in_shapes]
    groups: list[list] = []  # [size, signature]
    for d, size in enumerate(out_shape):
        if size == 1:
            continue
        sig = tuple(p[d] == size for p in padded)
        if groups and groups[-1][1] == sig:
            groups[-1][0] *= size
        else:
            groups.append([size, sig])
    if not groups:
        groups = [[1, tuple(True for _ in in_shapes)]]
    inner, lead = groups[-2:], groups[:-2]
    slice_out = [g[0] for g in inner]
    slice_in = [[g[0] if g[1][k] else 1 for g in inner] for k in range(len(in_shapes))]
    outer = [g[0] for g in lead]
    in_strides, out_strides = [], []
    for k in range(len(in_shapes)):
        stride = int(np.prod(slice_in[k]))
        strides = []
        for size, sig in reversed(lead):
            strides.append(stride if sig[k] else 0)
            stride *= size if sig[k] else 1
        in_strides.append(list(reversed(strides)))
    stride = int(np.prod(slice_out))
    for size, _ in reversed(lead):
        out_strides.append(stride)
        stride *= size
    return OuterDims(outer, in_strides, list(reversed(out_strides))), slice_in, slice_out


def writes_in_place(p: LowerElementwise, compute: Compute, full: list[Input]) -> bool:
    """Whether the result overwrites the first streamed input's buffer (vector
    ops may write their own source lanes), saving one buffer per element.

    With two streamed inputs this is free. With one, the buffer would chain
    load -> compute -> store -> next load of the same buffer, which double
    buffering cannot overlap (one ping-pong copy busy for the whole chain);
    a separate output buffer lets the next load start once the compute has
    read the input. `in-place-unary` trades that for chunks twice as big
    (fewer transfers: better without double buffering)."""
    if compute.kind in ("cast", "cmp", "select") or not full:
        return False  # the output's type differs from the first streamed input's
    return len(full) >= 2 or p.in_place_unary


def budget_bytes(p: LowerElementwise, fixed_bytes: int) -> int:
    """UB bytes one iteration's streamed buffers may take."""
    return int((p.target.capacity("ub") - fixed_bytes) * p.ub_fraction)


def expand_scalar_blocks(p: LowerElementwise, src: ir.Value, elem: str, count: int,
                         dst: ir.Value, op: ir.Operation) -> None:
    """Broadcast each of `count` consecutive elements at `src` (UB) to a whole
    32-byte block at `dst` (block i = element i repeated), with vnchwconv:
    all 16 source rows point at the same block, so row j of the transpose is
    element j repeated. For 4-byte types each half-row is written twice (both
    halves are the same value)."""
    es = nir.element_bytes(elem)
    per_block = p.target.granule("ub") // es
    rows = p.target.fractal
    if es == 2:
        dst_offsets = list(range(rows))
    elif es == 4:
        dst_offsets = [t for t in range(per_block) for _ in range(2)]
    else:
        raise PassError(f"broadcasting {elem} operands is not supported (vnchwconv "
                        "handles 2- and 4-byte types)", op)
    per_repeat = per_block  # source elements expanded per vnchwconv repeat
    repeats = -(-count // per_repeat)
    done = 0
    while done < repeats:
        rep = min(repeats - done, p.target.max_repeat)
        s = sub(src, done * per_block, rep * per_block) if done else src
        d = sub(dst, done * per_block * per_block, rep * per_block * per_block) if done else dst
        nir.create_op("cce.vnchwconv", [d, s], repeat=rep, src_offsets=[0] * rows,
                      dst_offsets=dst_offsets, src_rep_stride=1, dst_rep_stride=per_block)
        done += rep


def load_scalar(p: LowerElementwise, inp: Input, flat: ir.Value, op: ir.Operation) -> View:
    """A one-element operand as a UB block holding that element in every lane
    (read with block and repeat stride 0). The GM load is one granule (the
    tensor's padded granule); one vnchwconv with all 16 row pointers on that
    granule makes row j of its transpose element j repeated, and only row 0
    (both halves for 4-byte types) is kept: pure data movement, so it works
    for every 2- and 4-byte type (i32 included) and never reads the padding
    as a value."""
    granule = p.target.granule("ub")
    es = nir.element_bytes(inp.elem)
    if es not in (2, 4):
        raise PassError(f"broadcasting {inp.elem} operands is not supported (vnchwconv "
                        "handles 2- and 4-byte types)", op)
    per_block = granule // es
    raw = nir.alloc([per_block], inp.elem, "ub")
    copy("cce.copy_gm_to_ub", sub(flat, 0, per_block), raw, 1, 1)
    # Block 0: row 0 (its first half for 4-byte types); every other row
    # lands in block 1, a scratch block never read.
    keep = 1 if es == 2 else 2
    rows = p.target.fractal
    both = nir.alloc([2 * per_block], inp.elem, "ub")
    nir.create_op("cce.vnchwconv", [both, raw], repeat=1, src_offsets=[0] * rows,
                  dst_offsets=[0] * keep + [1] * (rows - keep), src_rep_stride=0,
                  dst_rep_stride=0)
    return View(sub(both, 0, per_block), 0, 0)


def stream_chunks(plan: ChunkPlan, load_piece: Callable[[object, int], dict],
                  store_piece: Callable[[object, int, dict], None], aliased: bool) -> None:
    """Load, compute and store each piece of `plan`: an scf.for over the full
    chunks, then the tail. When the output aliases an input, the tail's
    overlap would re-read already-computed elements, so the tail's inputs are
    loaded before the loop."""
    preloaded = None
    if plan.tail is not None and plan.full_chunks and aliased:
        preloaded = load_piece(plan.tail.start, plan.tail.length)
    if plan.full_chunks:
        loop = nir.for_loop(0, plan.full_chunks)
        with ir.InsertionPoint(loop.body):
            start = index_mul(loop.induction_variable, plan.chunk)
            store_piece(start, plan.chunk, load_piece(start, plan.chunk))
            nir.yield_()
    if plan.tail is not None:
        bufs = preloaded or load_piece(plan.tail.start, plan.tail.length)
        store_piece(plan.tail.start, plan.tail.length, bufs)


class FlatLowering:
    """All inputs full or scalar: flatten and chunk."""

    def __init__(self, p: LowerElementwise, op: ir.Operation, inputs: list[Input], out: ir.Value,
                 out_shape: Sequence[int], out_elem: str, compute: Compute):
        self.p, self.op, self.inputs, self.out, self.out_elem = p, op, inputs, out, out_elem
        self.compute = compute
        self.total = int(np.prod(out_shape))
        temp_bytes = [nir.element_bytes(t) for t in compute.temps]
        sizes = [nir.element_bytes(i.elem) for i in inputs] + [nir.element_bytes(out_elem)]
        self.geo = VectorGeometry.for_types(p.target, sizes + temp_bytes)
        self.full = [i for i in inputs if i.kind == "full"]
        self.in_place = writes_in_place(p, compute, self.full)
        per_elem = sum(nir.element_bytes(i.elem) for i in self.full)
        if not self.in_place:
            per_elem += nir.element_bytes(out_elem)
        self.per_elem = per_elem + sum(temp_bytes)

    def scalar_bytes(self) -> int:
        granule = self.p.target.granule("ub")
        return 3 * granule * sum(1 for i in self.inputs if i.kind == "scalar")

    def plan(self) -> ChunkPlan:
        budget = budget_bytes(self.p, self.scalar_bytes())
        try:
            chunk = max_chunk_elements(budget, self.per_elem, self.geo.lanes)
        except ValueError as e:
            raise PassError(str(e), self.op) from None
        if self.p.max_chunk:
            chunk = min(chunk, max(self.geo.lanes, round_down(self.p.max_chunk, self.geo.lanes)))
        # A tensor under one block gets one padded piece (README: GM granules).
        return plan_chunks(self.total, chunk, self.geo.block)

    def emit(self) -> None:
        plan = self.plan()
        self.flat = {id(i): nir.flatten_memref(i.value) for i in self.inputs}
        flat_out = nir.flatten_memref(self.out)
        self.flat_out = flat_out
        self.scalar_views = {id(i): self.load_scalar(i) for i in self.inputs if i.kind == "scalar"}
        stream_chunks(plan, self.load_piece, self.store_piece,
                      aliased=any(i.aliases_out for i in self.full))

    def load_scalar(self, inp: Input) -> View:
        return load_scalar(self.p, inp, self.flat[id(inp)], self.op)

    def load_piece(self, start, length: int) -> dict:
        bufs = {}
        block_bytes = self.p.target.granule("ub")
        for inp in self.full:
            es = nir.element_bytes(inp.elem)
            buf = nir.alloc([length], inp.elem, "ub")
            copy("cce.copy_gm_to_ub", sub(self.flat[id(inp)], start, length), buf, 1,
                 self.moved_granules(length, es))
            bufs[id(inp)] = buf
        return bufs

    def store_piece(self, start, length: int, bufs: dict) -> None:
        block_bytes = self.p.target.granule("ub")
        if self.in_place:
            out_buf = bufs[id(self.full[0])]
        else:
            out_buf = nir.alloc([length], self.out_elem, "ub")
        out_es = nir.element_bytes(self.out_elem)
        lanes = self.geo.lanes
        tmp_bufs = [(nir.alloc([length], t, "ub"), nir.element_bytes(t)) for t in self.compute.temps]
        # Only the tensor's own elements are computed (a padded piece is longer).
        for ins in split_repeats(min(length, self.total), lanes, self.geo.max_repeat):
            touched = (ins.repeat - 1) * lanes + ins.mask
            dst = View(sub(out_buf, ins.offset, touched), 1, lanes * out_es // block_bytes)
            tmps = [View(sub(buf, ins.offset, touched), 1, lanes * es // block_bytes)
                    for buf, es in tmp_bufs]
            srcs = []
            for inp in self.inputs:
                if inp.kind == "scalar":
                    srcs.append(self.scalar_views[id(inp)])
                else:
                    es = nir.element_bytes(inp.elem)
                    srcs.append(View(sub(bufs[id(inp)], ins.offset, touched), 1,
                                     lanes * es // block_bytes))
            self.compute.emit(dst, srcs, ins.repeat, ins.mask, tmps)
        copy("cce.copy_ub_to_gm", out_buf, sub(self.flat_out, start, length), 1,
             self.moved_granules(length, out_es))

    def moved_granules(self, length: int, es: int) -> int:
        """Granules one piece moves between GM and UB. A padded piece (the
        tensor is under one common block) moves only the granules the
        tensor's own elements start in: with mixed element sizes the piece
        is longer than the narrow tensors' one padded granule."""
        block_bytes = self.p.target.granule("ub")
        return -(-min(length, self.total) * es // block_bytes)


class RowsLowering:
    """A row or column input: the output viewed as [rows, N], chunks of whole
    rows. In UB each row is its whole blocks (`nm` elements) so a row-wise
    instruction steps from row to row with its repeat stride. When N is not
    whole blocks, each row also gets the block that ends at the row's end
    (elements N-b..N-1, in bounds), computed with the bias block that ends at
    the bias's end; storing it rewrites b - r elements of the main part with
    the same values (overlap). That costs one copy per row and part."""

    def __init__(self, p: LowerElementwise, op: ir.Operation, inputs: list[Input], out: ir.Value,
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
        widest = max(sizes)
        if self.nm * widest // self.granule > p.target.vector_max_stride:
            raise PassError(f"rows of {self.n} elements exceed the vector repeat stride limit "
                            f"({p.target.vector_max_stride} blocks)", op)

    def row_elems(self) -> int:
        """UB elements per row of a streamed buffer: whole blocks (+ end block)."""
        return self.nm + (self.block if self.r else 0)

    def emit(self) -> None:
        p, n = self.p, self.n
        columns = [i for i in self.inputs if i.kind == "column"]
        row_block = max((self.granule // nir.element_bytes(i.elem) for i in columns), default=1)
        fixed = sum(self.row_elems() * nir.element_bytes(i.elem) for i in self.inputs
                    if i.kind == "row")
        fixed += sum(3 * self.granule for i in self.inputs if i.kind == "scalar")
        per_row = self.row_elems() * (sum(nir.element_bytes(i.elem) for i in self.full)
                                      + (0 if self.in_place else nir.element_bytes(self.out_elem)))
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
                self.fixed_views[id(inp)] = load_scalar(self.p, inp, self.flat[id(inp)], self.op)
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
            elif inp.kind == "column":
                raw = nir.alloc([col_rows], inp.elem, "ub")
                copy("cce.copy_gm_to_ub", sub(self.flat[id(inp)], row0, col_rows), raw, 1,
                     col_rows * es // self.granule)
                per_block = self.granule // es
                expanded = nir.alloc([col_rows * per_block], inp.elem, "ub")
                expand_scalar_blocks(self.p, raw, inp.elem, col_rows, expanded, self.op)
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
                self.compute.emit(dst, srcs, rep, mask)
                r0 += rep
        self.move_rows("cce.copy_ub_to_gm", self.flat_out, row0, rows, out_main, out_end, out_es)
