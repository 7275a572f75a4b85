"""The epilogue of a matmul in `npu-lower-matmul`: an `npu.epilogue` group
(dialects/README.md, formed by `npu-fuse`) applied to each piece of a C
tile right after it drains from L0C to UB, before anything goes to GM.

Per drained piece (`cols` column blocks x `m` row blocks of C, Nz):
  * the f32 accumulator is C; when C is f16 (an f16 matmul result, or an
    epilogue computed in f16: `compute = "f16"`) it is rounded to f16 first,
    by a vconv or (drain-convert) by the L0C -> UB move itself (`drain_type`);
    with `head = "f32"`, an f16 epilogue whose first member adds a bias to C
    (`npu.costmodel.fusion.precision.f32_head`) keeps C and that add in f32 and rounds the sum;
  * each member, in order, loads the same piece of each operand it takes
    from outside the group (first use; one burst per column block, like
    C's store), computes into a new UB buffer or over an input no later
    member reads (`npu.costmodel.fusion.epilogue.plan`), with the per-instruction `Compute`
    of the elementwise lowering over the piece as one flat run;
  * every tensor that leaves the group is stored right after it is made;
  * a tensor the group's defractalizes read (`npu.costmodel.fusion.epilogue.NdStore`) is
    written row-major instead: per column block of the piece one copy of
    its 16-element rows (`n_burst` rows, the gap the rest of a GM row), to
    the sibling tensor whose columns the block is (`RowMajor`); the piece
    holding the last row block (or column block) of a shape that is not a
    whole number of them writes only the real rows (columns), under an
    scf.if on the piece's position.
A broadcast operand (`npu.costmodel.fusion.epilogue.row_broadcast`: a bias whose rows
repeat) is read once before the matmul's loops, one row per column block
of C, and stays in UB; a member reading it runs per column block with that
row's blocks as a source of block and repeat stride 0 (the other operands
and the result with a block stride of one row, so each repeat takes the
same block of 8 rows), so no drained piece loads it from GM.
The buffers are allocated where the drain is (its scf.if or one-trip
loop), so npu-plan-memory places them and npu-insert-sync orders them like
the drain's own; nothing assumes addresses or a free share of UB beyond
the per-fractal footprint the drain's chunking uses.

Modules: this one reads and checks the group and emits its members per
piece; `row_major` holds where a piece sits (`Piece`) and its row-major
stores.
"""

from __future__ import annotations

from typing import Callable

from mlir import ir

from npu import ir as nir
from npu.costmodel.fusion import epilogue, precision
from npu.costmodel.fusion import rows as fusion
from npu.costmodel.matmul.pipelined import store_cycles
from npu.costmodel.vector.recipes import cast_compute
from npu.kernels.cce_build import View, copy_bursts, index_add, index_mul, sub
from npu.kernels.vector_compute import constant_blocks, emit, emit_flat_run
from npu.passes.base import Pass, PassError

from . import row_major
from .row_major import Piece, RowMajor

BODY_OPS = nir.GROUP_BODY_OPS


def group_of(matmul: ir.Operation) -> ir.Operation | None:
    """The `npu.epilogue` region holding the matmul, if any."""
    return nir.enclosing_group(matmul, epilogue.EPILOGUE_ATTR)


class MatmulEpilogue:
    def __init__(self, p: Pass, region: ir.Operation, matmul: ir.Operation):
        self.p, self.region, self.matmul = p, region, matmul
        self.target = p.target
        cv = matmul.operands[-1]
        c = fusion.Operand(cv, epilogue.tensor_key(cv), "full", nir.memref_element(cv))
        members, stores = [], []
        for k, op in enumerate(region.regions[0].blocks[0].operations):
            op = op.operation
            if op == matmul:
                continue
            if op.name == "ascend.defractalize":
                stores.append((k, op))
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
        if not members and not stores:
            raise PassError("an npu.epilogue group without elementwise ops or defractalizes",
                            region)

        def leaves(root: ir.Value) -> bool:  # a tensor made inside lives in UB only
            op = nir.defining_op(root)
            while op is not None and op != region:
                op = op.parent
            return op is None
        self.ops = [m.op for m in members]
        stored = {epilogue.tensor_key(op.operands[0]) for _, op in stores}
        outputs = [c] + [m.out for m in members]
        attrs = nir.dict_attr_items(region.attributes[epilogue.EPILOGUE_ATTR])
        self.in_f16 = attrs.get("compute", "f32") == precision.COMPUTE_F16
        head = None
        if precision.HEAD_ATTR in attrs and not self.in_f16:
            raise PassError(f"an npu.epilogue group's {precision.HEAD_ATTR} needs compute = "
                            "\"f16\"", region)
        if self.in_f16:
            read = {t.root for _, op in stores for t in outputs
                    if epilogue.column_blocks(op.operands[0], t.value) is not None}
            why = precision.f16_refusal(epilogue.model(matmul, c, members, leaves), read)
            if why is not None:
                raise PassError(f"an npu.epilogue group with compute = \"f16\" must end in "
                                f"f32 -> f16 casts: {why}", region)
            head = attrs.get(precision.HEAD_ATTR)
            if head is not None and (head != "f32" or precision.f32_head(c, members) is None):
                raise PassError(f"an npu.epilogue group's {precision.HEAD_ATTR} = \"f32\" needs "
                                "a first member adding an f32 operand to C (its only reader)",
                                region)
            c, members = precision.in_f16(c, members, self.target, head is not None)
        self.e = epilogue.model(matmul, c, epilogue.collapse_gelu(c, members, leaves, stored,
                                                                  self.in_f16), leaves)
        granule = self.target.granule("ub")
        self.e.broadcast = {r for r in self.e.broadcast
                            if (self.target.fractal * self.e.loaded[r].es) % granule == 0}
        self.rows_ub: dict = {}
        self.consts: dict = {}  # member index -> its recipe's `Constants`
        self.stores = [op for _, op in stores]
        self.row_major = row_major.targets([self.e.c] + [m.out for m in self.e.members], stores,
                                           matmul, region)
        # a reduction split's partial sums (`PARTIAL_SUMS_ATTR`: the first
        # members add them to C): every piece of them loads before the first
        # add, so that their GM latencies overlap
        sums = nir.int_attr(region, epilogue.PARTIAL_SUMS_ATTR) \
            if epilogue.PARTIAL_SUMS_ATTR in region.attributes else 0
        adds = [o.operation for o in region.regions[0].blocks[0].operations
                if o.operation.name.startswith("ascend.") and o.operation != matmul][:sums]
        self.early = [r for r in dict.fromkeys(epilogue.tensor_key(op.operands[1]) for op in adds)
                      if r in self.e.loaded and r not in self.e.broadcast]
        self.plan = epilogue.plan(self.e, self.target, self.drain_type, frozenset(self.early))
        # The members that may write their result row-major in UB (`rows_in_ub`)
        # take a new buffer for it (they would overwrite their inputs' rows):
        # the plan of the default sink.
        rows = frozenset(k for k in range(len(self.e.members)) if self.may_store_rows(k))
        self.rows_plan = epilogue.plan(self.e, self.target, self.drain_type,
                                       frozenset(self.early), rows) if rows else self.plan
        # A result made in f32 (`f32_head`) and read on in f16 is rounded once
        # as it is made: root -> (the type it is read as, the rounded tensor's
        # root); when its one reader is a cast to f16 to nearest, that cast
        # is the rounding (`folded`: its index) and its result the tensor.
        made = {m.out.root: m.out.elem for m in self.e.members}
        self.narrowed: dict = {}
        self.folded: set = set()
        for k, m in enumerate(self.e.members):
            for i in m.ins:
                if made.get(i.root, i.elem) != i.elem:
                    self.narrowed[i.root] = (i.elem, i.root)
            if (head is not None and m.op.name == "ascend.cast" and nir.str_attr(m.op, "round_mode") == "rint"
                    and k and self.e.members[k - 1].out.root == m.ins[0].root
                    and (m.ins[0].elem, m.out.elem) == ("f32", "f16")
                    and sum(i.root == m.ins[0].root for n in self.e.members for i in n.ins) == 1
                    and m.ins[0].root not in self.e.leaving | set(self.row_major)):
                self.narrowed[m.ins[0].root] = (m.out.elem, m.out.root)
                self.folded.add(k)
        frac = self.target.fractal
        # Where a drained piece's row-major results go: `store_row_major`
        # (GM), or a kernel's own destination (npu-lower-attention's Q, K, V
        # tiles in L1 when the attention computes its projection).
        self.sink: Callable[[list[RowMajor], ir.Value, Piece], None] = self.store_row_major
        self.pitch = {}
        for o in list(self.e.loaded.values()) + outputs:
            strides, _ = nir.memref_layout(o.value.type)
            self.pitch[o.value] = strides[-4] // (frac * frac)

    @property
    def drain_type(self) -> str:
        """The type C's accumulator reaches UB in: f16 when C is f16 and
        npu-lower-matmul's drain-convert is on (the L0C -> UB move converts
        it, `convert = "f32_to_f16"`), else f32."""
        if self.e.c.elem == "i32":  # an int8 matmul's accumulator, converted by a member
            return "i32"
        return "f16" if self.e.c.elem == "f16" and self.p.drain_convert else "f32"

    @property
    def buffers(self) -> epilogue.Plan:
        """The buffer plan of the sink in use (`rows_plan` for the default)."""
        return self.rows_plan if self.sink == self.store_row_major else self.plan

    @property
    def bytes_per_fractal(self) -> int:
        return self.buffers.per_fractal

    @property
    def ub_budget(self) -> int:
        """UB bytes one drained piece may take (npu-fuse's share)."""
        attrs = nir.dict_attr_items(self.region.attributes[epilogue.EPILOGUE_ATTR])
        if "ub_budget" not in attrs:
            raise PassError("an npu.epilogue group needs its ub_budget", self.region)
        return int(attrs["ub_budget"])

    @property
    def stored_bytes_per_element(self) -> int:
        """GM bytes the drain writes per element of C (every tensor that
        leaves the group, Nz or row-major)."""
        outs = [self.e.c] + [m.out for m in self.e.members]
        return sum(o.es for o in outs if o.root in self.e.leaving or o.root in self.row_major)

    def store_cycles(self, elements: int) -> float:
        """GM write time of the drain over `elements` of C: each tensor that
        leaves, in Nz (one burst per column block) or row-major (one burst
        per row of 16: `npu.costmodel.matmul.pipelined.store_cycles`)."""
        outs = [self.e.c] + [m.out for m in self.e.members]
        return sum(store_cycles(self.target, elements, o.es,
                                self.target.fractal if o.root in self.row_major else 0)
                   for o in outs if o.root in self.e.leaving or o.root in self.row_major)

    @property
    def vector_cycles(self) -> int:
        """The members' vector work over all of C (`npu.costmodel.fusion.epilogue.vector_cycles`)."""
        return epilogue.vector_cycles(self.e.members, self.target)

    @property
    def loads_pieces(self) -> bool:
        """Whether each drained piece loads operand pieces from GM."""
        return any(r not in self.e.broadcast for r in self.e.loaded)

    @property
    def resident_bytes(self) -> int:
        """UB the broadcast rows and the recipes' constant blocks hold for the
        whole matmul."""
        blocks = sum(len(m.compute.constants) for m in self.e.members)
        return epilogue.broadcast_bytes(self.e) + blocks * self.target.vector_block_bytes

    def load_broadcast(self, prefix: list) -> None:
        """Before the matmul's loops: each broadcast operand's first row
        of every column block (of batch 0: they are equal), GM -> UB, and
        the recipes' constant blocks."""
        for k, m in enumerate(self.e.members):
            consts = constant_blocks(m.compute, self.target)
            if consts is not None:
                self.consts[k] = consts
        frac = self.target.fractal
        for root in self.e.broadcast:
            o = self.e.loaded[root]
            cols = nir.memref_shape(o.value)[-4]
            stored = nir.memref_element(o.value)  # o.elem: the type it is computed in
            es = nir.element_bytes(stored)
            ub = nir.alloc([cols, 1, 1, frac], stored, "ub")
            gm = nir.subview(o.value, [0] * (len(prefix) + 4), [1] * len(prefix) + [cols, 1, 1, frac])
            row = self.target.blocks(frac * es)
            copy_bursts("cce.copy_gm_to_ub", gm, ub, cols, row,
                        src_gap=self.target.blocks(self.pitch[o.value] * frac * frac * es) - row)
            self.rows_ub[root] = nir.flatten_memref(ub)
            if stored != o.elem:  # an f32 bias of an epilogue computed in f16: converted once
                rows = nir.flatten_memref(nir.alloc([cols, 1, 1, frac], o.elem, "ub"))
                emit_flat_run(cast_compute(stored, o.elem, "rint"), self.target, cols * frac,
                              (rows, o.elem), [(self.rows_ub[root], stored)])
                self.rows_ub[root] = rows

    def emit(self, acc: ir.Value, piece: Piece) -> None:
        """The members on one drained piece (`acc`: its UB buffer, f32 or, with
        `drain_type` f16, rounded by the move)."""
        frac = self.target.fractal
        count = piece.cols * piece.rows * frac * frac
        c = self.e.c
        bufs: dict = {}
        if nir.memref_element(acc) == c.elem:
            bufs[c.root] = acc
        else:
            bufs[c.root] = self.alloc(piece, c.elem)
            emit_flat_run(cast_compute("f32", c.elem, "rint"), self.target, count,
                          (nir.flatten_memref(bufs[c.root]), c.elem), [(nir.flatten_memref(acc), "f32")])
        if c.root in self.e.leaving:
            self.move("cce.copy_ub_to_gm", c, bufs[c.root], piece)
        if c.root in self.row_major:
            self.sink(self.row_major[c.root], bufs[c.root], piece)
        for root in self.early:
            o = self.e.loaded[root]
            bufs[root] = self.alloc(piece, o.elem)
            self.move("cce.copy_gm_to_ub", o, bufs[root], piece)
        for k, (m, reuse) in enumerate(zip(self.e.members, self.buffers.reuse)):
            for i in m.ins:
                if i.root not in bufs and i.root not in self.e.broadcast:
                    bufs[i.root] = self.alloc(piece, i.elem)
                    self.move("cce.copy_gm_to_ub", i, bufs[i.root], piece)
            rows = False  # the result row-major in UB (`rows_in_ub`)
            if k in self.folded:  # the previous member rounded into its result
                out = bufs[m.out.root]
            else:
                out = bufs[reuse] if reuse is not None else self.alloc(piece, m.out.elem)
                elem, rounded = self.narrowed.get(m.out.root, (None, None))
                narrow = self.alloc(piece, elem) if elem is not None else None
                rows = reuse is None and narrow is None and self.rows_in_ub(k, piece)
                if any(i.root in self.e.broadcast for i in m.ins):
                    self.emit_by_columns(m, out, bufs, piece, narrow, rows)
                else:
                    temps = [nir.flatten_memref(self.alloc(piece, t)) for t in m.compute.temps]
                    emit_flat_run(m.compute, self.target, count,
                                  (nir.flatten_memref(out), m.out.elem),
                                  [(nir.flatten_memref(bufs[i.root]), i.elem) for i in m.ins],
                                  temps, self.consts.get(k))
                    if narrow is not None:
                        self.narrow(out, narrow, 0, count)
                bufs[m.out.root] = out
                if narrow is not None:
                    bufs[rounded] = narrow
            if m.out.root in self.e.leaving:
                self.move("cce.copy_ub_to_gm", m.out, out, piece)
            if rows:
                row_major.store_rows(self.target, self.row_major[m.out.root][0], out, piece)
            elif m.out.root in self.row_major:
                self.sink(self.row_major[m.out.root], out, piece)

    def may_store_rows(self, k: int) -> bool:
        """Whether member `k` may write its result row-major in UB
        (`rows_in_ub`, the piece's width aside): a binary member with a
        broadcast operand whose result is only stored row-major to GM (no
        later member reads it, no Nz copy of it leaves), to one part of
        whole blocks."""
        m = self.e.members[k]
        return (m.out.root in self.row_major and m.out.root not in self.e.leaving
                and any(i.root in self.e.broadcast for i in m.ins)
                and not any(i.root == m.out.root for n in self.e.members[k + 1:] for i in n.ins)
                and row_major.rows_fit(self.target, self.row_major[m.out.root], 2, m.out.es))

    def rows_in_ub(self, k: int, piece: Piece) -> bool:
        """Whether member `k` (`may_store_rows`, on its new buffer) writes
        its result row-major in UB, each row of the piece's column blocks
        side by side, for one burst per row (`row_major.store_rows`); with
        the default sink only (npu-lower-attention's Q, K and V tiles stay
        Nz)."""
        return (self.sink == self.store_row_major and self.may_store_rows(k)
                and row_major.rows_fit(self.target, self.row_major[self.e.members[k].out.root],
                                       piece.cols, self.e.members[k].out.es))

    def narrow(self, wide: ir.Value, narrow: ir.Value, first: int, count: int) -> None:
        """Elements first .. first+count of `wide` rounded (to nearest) into `narrow`."""
        src, dst = nir.memref_element(wide), nir.memref_element(narrow)
        emit_flat_run(cast_compute(src, dst, "rint"), self.target, count,
                      (nir.subview(nir.flatten_memref(narrow), [first], [count]), dst),
                      [(nir.subview(nir.flatten_memref(wide), [first], [count]), src)])

    def emit_by_columns(self, m, out: ir.Value, bufs: dict, piece: Piece,
                        narrow: ir.Value | None = None, rows: bool = False) -> None:
        """A binary member with a broadcast operand, per column block of the
        piece and per block of a row: every repeat takes that block of 8
        rows (block stride one row), the broadcast row's block is read with
        strides 0. `narrow`: each column block, once computed, is rounded
        into it too (so the first narrow write, which npu-plan-memory places
        by, follows the drain closely, as an f16 C's vconv does). `rows`:
        the result row-major in the piece (`rows_in_ub`), each repeat's
        blocks a row of the piece apart."""
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
        flats = {i.root: nir.flatten_memref(bufs[i.root]) for i in m.ins if i.root not in self.e.broadcast}
        flat_out = nir.flatten_memref(out)
        for j in range(piece.cols):
            for h in range(row_blocks):
                for r0 in range(0, repeats, t.max_repeat):
                    rep = min(t.max_repeat, repeats - r0)
                    start = j * column + h * per_block + r0 * rep_stride * per_block
                    extent = ((rep - 1) * rep_stride + (rows_per_repeat - 1) * row_blocks + 1) \
                        * per_block

                    def strided(flat: ir.Value) -> View:
                        return View(sub(flat, start, extent), row_blocks, rep_stride)

                    def in_rows(flat: ir.Value) -> View:  # row r, block j at r * cols + j
                        wide = row_blocks * piece.cols  # blocks of a row of the piece
                        at = ((r0 * rows_per_repeat * piece.cols + j) * row_blocks + h) * per_block
                        span = ((rep - 1) * rows_per_repeat * wide + (rows_per_repeat - 1) * wide
                                + 1) * per_block
                        return View(sub(flat, at, span), wide, rows_per_repeat * wide)
                    srcs = []
                    for i in m.ins:
                        if i.root in self.e.broadcast:
                            at = index_add(first_row, j * frac + h * per_block)
                            srcs.append(View(sub(self.rows_ub[i.root], at, per_block), 0, 0))
                        else:
                            srcs.append(strided(flats[i.root]))
                    emit(m.compute, (in_rows if rows else strided)(flat_out), srcs, rep,
                         t.lanes(es))
            if narrow is not None:
                self.narrow(out, narrow, j * column, column)

    def alloc(self, piece: Piece, elem: str) -> ir.Value:
        frac = self.target.fractal
        return nir.alloc([piece.cols, piece.rows, frac, frac], elem, "ub")

    def move(self, name: str, o: fusion.Operand, ub: ir.Value, piece: Piece) -> None:
        """The piece of tensor `o` between GM and UB: one burst per column
        block (its row blocks are contiguous in Nz)."""
        frac = self.target.fractal
        blk = self.target.fractal_bytes(o.es)
        chained = None if name == "cce.copy_gm_to_ub" else self.p.chained_l1(o.value)
        if chained is not None:
            name = "cce.copy_ub_to_l1"  # a chained result stays in L1
        gm = nir.subview(chained or o.value, piece.prefix + [piece.col, piece.row, 0, 0],
                         [1] * len(piece.prefix) + [piece.cols, piece.rows, frac, frac])
        gap = self.target.blocks((self.pitch[o.value] - piece.rows) * blk)
        src, dst = (gm, ub) if name == "cce.copy_gm_to_ub" else (ub, gm)
        copy_bursts(name, src, dst, piece.cols, self.target.blocks(piece.rows * blk),
                    **({"src_gap": gap} if name == "cce.copy_gm_to_ub" else {"dst_gap": gap}))

    def store_row_major(self, parts: list[RowMajor], ub: ir.Value, piece: Piece) -> None:
        """The default `sink`: the piece's row-major results to GM
        (`row_major.store`)."""
        row_major.store(self.target, self.region, parts, ub, piece)

    def finish(self) -> None:
        """After the matmul is lowered (inside the region): drop the members
        and the tensors only they used, and put the rest where the region is."""
        nir.dissolve_group(self.region, self.ops + self.stores)

