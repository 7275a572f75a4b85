"""The epilogue of a matmul in `npu-lower-matmul`: an `npu.epilogue` group
(dialects/README.md, formed by `npu-fuse`) applied to each piece of a C
tile right after it drains from L0C to UB, before anything goes to GM.

Per drained piece (`cols` column blocks x `m` row blocks of C, Nz):
  * the f32 accumulator is C (rounded to f16 first when C is f16);
  * each member, in order, loads the same piece of each operand it takes
    from outside the group (first use; one burst per column block, like
    C's store), computes into a new UB buffer or over an input no later
    member reads (`npu.epilogue.plan`), with the per-instruction `Compute`
    of the elementwise lowering over the piece as one flat run;
  * every tensor that leaves the group is stored right after it is made.
A broadcast operand (`npu.epilogue.row_broadcast`: a bias whose rows
repeat) is read once before the matmul's loops, one row per column block
of C, and stays in UB; a member reading it runs per column block with that
row's blocks as a source of block and repeat stride 0 (the other operands
and the result with a block stride of one row, so each repeat takes the
same block of 8 rows), so no drained piece loads it from GM.
The buffers are allocated where the drain is (its scf.if or one-trip
loop), so npu-plan-memory places them and npu-insert-sync orders them like
the drain's own; nothing assumes addresses or a free share of UB beyond
the per-fractal footprint the drain's chunking uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import memref

from npu import epilogue, fusion
from npu import ir as nir
from npu.cce_build import View, copy_bursts, index_add, index_mul, sub
from npu.passes.base import Pass, PassError
from npu.vector_compute import cast_compute, emit_flat_run

BODY_OPS = ("memref.alloc", "scf.yield", "arith.constant") + nir.VIEW_OPS


def group_of(matmul: ir.Operation) -> ir.Operation | None:
    """The `npu.epilogue` region holding the matmul, if any."""
    parent = matmul.parent
    if parent is not None and parent.name == "scf.execute_region" \
            and epilogue.EPILOGUE_ATTR in parent.attributes:
        return parent
    return None


@dataclass
class Piece:
    """Where a drained piece of C sits: the batch prefix, first column
    block, first row block (index values) and its size in blocks."""

    prefix: list
    col: ir.Value
    row: ir.Value
    cols: int
    rows: int


class MatmulEpilogue:
    def __init__(self, p: Pass, region: ir.Operation, matmul: ir.Operation):
        self.p, self.region, self.matmul = p, region, matmul
        self.target = p.target
        cv = matmul.operands[-1]
        c = fusion.Operand(cv, epilogue.tensor_key(cv), "full", nir.memref_element(cv))
        members = []
        for k, op in enumerate(region.regions[0].blocks[0].operations):
            op = op.operation
            if op == matmul:
                continue
            if not op.name.startswith("ascend."):
                if op.name not in BODY_OPS:
                    raise PassError(f"'{op.name}' cannot be part of a matmul epilogue (only the "
                                    "matmul, elementwise ascend ops, allocs, views and "
                                    "scf.yield)", op)
                continue
            if op.name not in fusion.ELEMENTWISE or any(
                    nir.memref_shape(v) != nir.memref_shape(cv) for v in op.operands):
                raise PassError("a matmul epilogue member must be elementwise with operands "
                                f"shaped like the matmul's C {cv.type}", op)
            members.append(epilogue.grouped_member(op, k, self.target))
        if not members:
            raise PassError("an npu.epilogue group without elementwise ops", region)

        def leaves(root: ir.Value) -> bool:  # a tensor made inside lives in UB only
            op = nir.defining_op(root)
            while op is not None and op != region:
                op = op.parent
            return op is None
        self.ops = [m.op for m in members]
        self.e = epilogue.model(matmul, c, epilogue.collapse_gelu(c, members, leaves), leaves)
        granule = self.target.granule("ub")
        self.e.broadcast = {r for r in self.e.broadcast
                            if (self.target.fractal * self.e.loaded[r].es) % granule == 0}
        self.rows_ub: dict = {}
        self.plan = epilogue.plan(self.e, self.target)
        frac = self.target.fractal
        self.pitch = {}
        for o in list(self.e.loaded.values()) + [c] + [m.out for m in members]:
            strides, _ = nir.memref_layout(o.value.type)
            self.pitch[o.value] = strides[-4] // (frac * frac)

    @property
    def bytes_per_fractal(self) -> int:
        return self.plan.per_fractal

    @property
    def ub_budget(self) -> int:
        """UB bytes one drained piece may take (npu-fuse's share)."""
        attrs = nir.dict_attr_items(self.region.attributes[epilogue.EPILOGUE_ATTR])
        if "ub_budget" not in attrs:
            raise PassError("an npu.epilogue group needs its ub_budget", self.region)
        return int(attrs["ub_budget"])

    @property
    def vector_cycles(self) -> int:
        """The members' vector work over all of C (`npu.epilogue.vector_cycles`)."""
        return epilogue.vector_cycles(self.e.members, self.target)

    @property
    def loads_pieces(self) -> bool:
        """Whether each drained piece loads operand pieces from GM."""
        return any(r not in self.e.broadcast for r in self.e.loaded)

    @property
    def resident_bytes(self) -> int:
        """UB the broadcast rows hold for the whole matmul."""
        return epilogue.broadcast_bytes(self.e)

    def load_broadcast(self, prefix: list) -> None:
        """Before the matmul's loops: each broadcast operand's first row
        of every column block (of batch 0: they are equal), GM -> UB."""
        frac = self.target.fractal
        for root in self.e.broadcast:
            o = self.e.loaded[root]
            cols = nir.memref_shape(o.value)[-4]
            ub = nir.alloc([cols, 1, 1, frac], o.elem, "ub")
            gm = nir.subview(o.value, [0] * (len(prefix) + 4), [1] * len(prefix) + [cols, 1, 1, frac])
            row = self.target.blocks(frac * o.es)
            copy_bursts("cce.copy_gm_to_ub", gm, ub, cols, row,
                        src_gap=self.target.blocks(self.pitch[o.value] * frac * frac * o.es) - row)
            self.rows_ub[root] = _flat(ub)

    def emit(self, acc: ir.Value, piece: Piece) -> None:
        """The members on one drained piece (`acc`: its f32 UB buffer)."""
        frac = self.target.fractal
        count = piece.cols * piece.rows * frac * frac
        c = self.e.c
        bufs: dict = {}
        if c.elem == "f32":
            bufs[c.root] = acc
        else:
            bufs[c.root] = self.alloc(piece, c.elem)
            emit_flat_run(cast_compute("f32", c.elem, "rint"), self.target, count,
                          (_flat(bufs[c.root]), c.elem), [(_flat(acc), "f32")])
        if c.root in self.e.leaving:
            self.move("cce.copy_ub_to_gm", c, bufs[c.root], piece)
        for m, reuse in zip(self.e.members, self.plan.reuse):
            for i in m.ins:
                if i.root not in bufs and i.root not in self.e.broadcast:
                    bufs[i.root] = self.alloc(piece, i.elem)
                    self.move("cce.copy_gm_to_ub", i, bufs[i.root], piece)
            out = bufs[reuse] if reuse is not None else self.alloc(piece, m.out.elem)
            if any(i.root in self.e.broadcast for i in m.ins):
                self.emit_by_columns(m, out, bufs, piece)
            else:
                temps = [_flat(self.alloc(piece, t)) for t in m.compute.temps]
                emit_flat_run(m.compute, self.target, count, (_flat(out), m.out.elem),
                              [(_flat(bufs[i.root]), i.elem) for i in m.ins], temps)
            bufs[m.out.root] = out
            if m.out.root in self.e.leaving:
                self.move("cce.copy_ub_to_gm", m.out, out, piece)

    def emit_by_columns(self, m, out: ir.Value, bufs: dict, piece: Piece) -> None:
        """A binary member with a broadcast operand, per column block of the
        piece and per block of a row: every repeat takes that block of 8
        rows (block stride one row), the broadcast row's block is read with
        strides 0."""
        t = self.target
        frac, granule = t.fractal, t.granule("ub")
        es = m.out.es
        per_block = granule // es                      # elements of one 32-byte block
        row_blocks = frac * es // granule             # blocks of one row of 16
        rows_per_repeat = t.vector_bytes // granule    # one block per row in a repeat
        repeats = piece.rows * frac // rows_per_repeat
        column = piece.rows * frac * frac
        rep_stride = rows_per_repeat * row_blocks
        first_row = index_mul(piece.col, frac)
        flats = {i.root: _flat(bufs[i.root]) for i in m.ins if i.root not in self.e.broadcast}
        flat_out = _flat(out)
        for j in range(piece.cols):
            for h in range(row_blocks):
                for r0 in range(0, repeats, t.max_repeat):
                    rep = min(t.max_repeat, repeats - r0)
                    start = j * column + h * per_block + r0 * rep_stride * per_block
                    extent = ((rep - 1) * rep_stride + (rows_per_repeat - 1) * row_blocks + 1) \
                        * per_block

                    def strided(flat: ir.Value) -> View:
                        return View(sub(flat, start, extent), row_blocks, rep_stride)
                    srcs = []
                    for i in m.ins:
                        if i.root in self.e.broadcast:
                            at = index_add(first_row, j * frac + h * per_block)
                            srcs.append(View(sub(self.rows_ub[i.root], at, per_block), 0, 0))
                        else:
                            srcs.append(strided(flats[i.root]))
                    m.compute.emit(strided(flat_out), srcs, rep, t.lanes(es))

    def alloc(self, piece: Piece, elem: str) -> ir.Value:
        frac = self.target.fractal
        return nir.alloc([piece.cols, piece.rows, frac, frac], elem, "ub")

    def move(self, name: str, o: fusion.Operand, ub: ir.Value, piece: Piece) -> None:
        """The piece of tensor `o` between GM and UB: one burst per column
        block (its row blocks are contiguous in Nz)."""
        frac = self.target.fractal
        blk = self.target.fractal_bytes(o.es)
        gm = nir.subview(o.value, piece.prefix + [piece.col, piece.row, 0, 0],
                         [1] * len(piece.prefix) + [piece.cols, piece.rows, frac, frac])
        gap = self.target.blocks((self.pitch[o.value] - piece.rows) * blk)
        src, dst = (gm, ub) if name == "cce.copy_gm_to_ub" else (ub, gm)
        copy_bursts(name, src, dst, piece.cols, self.target.blocks(piece.rows * blk),
                    **({"src_gap": gap} if name == "cce.copy_gm_to_ub" else {"dst_gap": gap}))

    def finish(self) -> None:
        """After the matmul is lowered (inside the region): drop the members
        and the tensors only they used, and put the rest where the region is."""
        for op in self.ops:
            op.erase()
        block = self.region.regions[0].blocks[0]
        for op in reversed([o.operation for o in block.operations]):
            if op.name in BODY_OPS and op.name != "scf.yield" and all(
                    not list(r.uses) for r in op.results):
                op.erase()
        for op in [o.operation for o in block.operations]:
            if op.name != "scf.yield":
                op.move_before(self.region)
        self.region.erase()


def _flat(buf: ir.Value) -> ir.Value:
    """A UB buffer as one run of elements."""
    shape = nir.memref_shape(buf)
    if len(shape) == 1:
        return buf
    t = nir.memref_type(buf)
    count = 1
    for d in shape:
        count *= d
    return memref.CollapseShapeOp(ir.MemRefType.get([count], t.element_type, None,
                                                    t.memory_space),
                                  buf, [list(range(len(shape)))]).result
