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
from npu.cce_build import copy_bursts
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
        self.e = epilogue.model(matmul, c, members, leaves)
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
                if i.root not in bufs:
                    bufs[i.root] = self.alloc(piece, i.elem)
                    self.move("cce.copy_gm_to_ub", i, bufs[i.root], piece)
            out = bufs[reuse] if reuse is not None else self.alloc(piece, m.out.elem)
            temps = [_flat(self.alloc(piece, t)) for t in m.compute.temps]
            emit_flat_run(m.compute, self.target, count, (_flat(out), m.out.elem),
                          [(_flat(bufs[i.root]), i.elem) for i in m.ins], temps)
            bufs[m.out.root] = out
            if m.out.root in self.e.leaving:
                self.move("cce.copy_ub_to_gm", m.out, out, piece)

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
        for m in self.e.members:
            m.op.erase()
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
