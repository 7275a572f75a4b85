"""One chunk of rows of a two-pass fused kernel (`npu.kernels.online_rows`): the
piece loops of pass 1 (reductions folded into per-row accumulators) and
pass 2 (outputs), emitted with the UB-level builders of `npu-lower-fused`'s
`FusedKernel` (its `width` set to the piece's columns).

The first piece of pass 1 is emitted on its own: its reductions initialise
the accumulators (no identity values: a running max starts at the first
piece's max) and it fixes the variance shift K; the further pieces run in a
loop and merge. Accumulators of f16 sums are f32 and round once at the end,
as in the one-pass kernel.
"""

from __future__ import annotations

from mlir import ir

from npu.costmodel.fusion import rows as fusion
from npu import ir as nir
from npu.kernels.cce_build import View, copy, lin, sub
from npu.dialects.hivm import config_field
from npu.kernels.online_rows import OnlineReduction, in_place_source, last_uses
from npu.costmodel.vector.recipes import Compute, Step
from npu.kernels.vector_compute import emit
from npu.costmodel.vector.tiling import VectorGeometry, split_repeats


class TwoPass:
    """One chunk of `rows` rows from `row0` of `kernel` (a FusedKernel with
    an online plan)."""

    def __init__(self, kernel, row0, rows: int):
        self.k, self.row0, self.chunk_rows = kernel, row0, rows
        self.valid = min(rows, kernel.rows)
        # Per-row buffers hold whole blocks of the narrowest (2-byte) values:
        # col operands are broadcast a block of values at a time (vnchwconv).
        per_block = kernel.granule // 2
        self.rows = -(-rows // per_block) * per_block
        self.plan = kernel.online
        self.n = kernel.n
        self.accumulator = fusion.accumulator
        self.reductions: dict = self.plan.reductions
        # base reduction op -> its softmax / variance dependents
        self.dependents: dict = {}
        for r in self.reductions.values():
            if r.base is not None:
                self.dependents.setdefault(r.base.op, []).append(r)

    # -- structure ------------------------------------------------------------
    def emit(self) -> None:
        k = self.k
        self.cols: dict = {}
        for o in k.g.loaded.values():
            if o.kind == "col":
                self.cols[o.root] = k.load(o, self.row0, self.chunk_rows, self.valid)
        self.col_ops(self.plan.early_cols)
        if self.plan.pass1:
            self.acc = {m.op: nir.alloc([self.rows], self.accumulator(m), "ub")
                        for m in self.plan.pass1 if m.compute is None}
            self.shift = self.shift_buffers()  # root -> (K in its type, K in the accumulator type)
            self.correction: dict = {}  # softmax base op -> exp(m_old - m_new) (f32)
            self.pieces(self.statistics, peel_first=True)
            self.finish()
        self.col_ops(self.plan.late_cols)
        self.pieces(self.outputs, peel_first=False)
        k.width = k.n

    def pieces(self, body, peel_first: bool) -> None:
        """`body(j0, width, first)` per piece, each inside a loop of its own
        (a one-trip loop for a single piece): buffers allocated in a loop
        body live for that body only (npu-plan-memory), so pieces and passes
        reuse each other's UB."""
        w, n = self.plan.width, self.n
        full, tail = n // w, n % w
        start = 0
        if peel_first:
            self.scoped(lambda: body(0, w, True))
            start = 1
        if full - start == 1:
            self.scoped(lambda: body(start * w, w, False))
        elif full - start > 1:
            loop = nir.for_loop(start, full)
            with ir.InsertionPoint(loop.body):
                body(lin((loop.induction_variable, w)), w, False)
                nir.yield_()
        if tail:
            self.scoped(lambda: body(full * w, tail, False))

    @staticmethod
    def scoped(emit) -> None:
        loop = nir.for_loop(0, 1)
        with ir.InsertionPoint(loop.body):
            emit()
            nir.yield_()

    # -- pass 1 ---------------------------------------------------------------
    def statistics(self, j0, width: int, first: bool) -> None:
        k = self.k
        k.width = width
        bufs = dict(self.cols)
        if not first:
            bufs.update({root: pair[0] for root, pair in self.shift.items()})
        expanded: dict = {}
        self.load_rows(self.plan.pass1, j0, width)
        last = last_uses(self.plan.pass1)
        for index, m in enumerate(self.plan.pass1):
            self.load_inputs(m, bufs, j0, width)
            if m.compute is not None:
                out = self.result_buffer(m, index, last, bufs, width)
                k.elementwise(m, bufs, expanded, out, self.rows, self.valid)
                bufs[m.out.root] = out
                continue
            acc = self.acc[m.op]
            part = acc if first else nir.alloc([self.rows], self.accumulator(m), "ub")
            k.reduce(m, bufs[m.ins[0].root], part, self.rows, self.valid, wide=True)
            if not first:
                self.merge(self.reductions[m.op], part)
            bufs[m.out.root] = acc  # the running max softmax's sub reads
            if first:
                for dep in self.dependents.get(m.op, []):
                    if dep.mode == "variance":
                        self.variance_shift(m, dep, width)
                        bufs[dep.shift_root] = self.shift[dep.shift_root][0]

    def shift_buffers(self) -> dict:
        """The variance shifts' buffers, per chunk (set by the first piece)."""
        out = {}
        for r in self.reductions.values():
            if r.mode == "variance":
                acc_elem = self.accumulator(r.base)
                elem = next(i.elem for c in self.plan.pass1 for i in c.ins
                            if i.root == r.shift_root)
                wide = nir.alloc([self.rows], acc_elem, "ub")
                narrow = wide if elem == acc_elem else nir.alloc([self.rows], elem, "ub")
                out[r.shift_root] = (narrow, wide)
        return out

    def variance_shift(self, base, dep: OnlineReduction, width: int) -> None:
        """K = the first piece's mean, in the shift's type and (exactly) in
        the accumulator's."""
        acc_elem = self.accumulator(base)
        narrow, wide = self.shift[dep.shift_root]
        self.vec("cce.vmuls", wide, [self.acc[base.op]], acc_elem, 1.0 / width)
        if narrow is not wide:
            elem = nir.memref_element(narrow)
            self.k.convert(narrow, elem, wide, acc_elem, self.valid, "rint")
            self.k.convert(wide, acc_elem, narrow, elem, self.valid, "none")

    def merge(self, r: OnlineReduction, part: ir.Value) -> None:
        m = r.member
        acc, elem = self.acc[m.op], self.accumulator(m)
        if r.mode == "softmax":  # s = s * exp(m_old - m_new) + part
            self.vec("cce.vmul", acc, [acc, self.correction[r.base.op]], elem)
            self.vec("cce.vadd", acc, [acc, part], elem)
            return
        fold = {"ascend.reduce_sum": "cce.vadd", "ascend.reduce_max": "cce.vmax",
                "ascend.reduce_min": "cce.vmin"}[m.op.name]
        if any(d.mode == "softmax" for d in self.dependents.get(m.op, [])):
            new = nir.alloc([self.rows], elem, "ub")
            self.vec("cce.vmax", new, [acc, part], elem)
            old32, new32 = self.widened(acc, elem), self.widened(new, elem)
            corr = nir.alloc([self.rows], "f32", "ub")
            self.vec("cce.vsub", corr, [old32, new32], "f32")
            self.vec("cce.vexp", corr, [corr], "f32")
            self.correction[m.op] = corr
        self.vec(fold, acc, [acc, part], elem)

    def widened(self, buf: ir.Value, elem: str) -> ir.Value:
        if elem == "f32":
            return buf
        wide = nir.alloc([self.rows], "f32", "ub")
        self.k.convert(wide, "f32", buf, elem, self.valid, "none")
        return wide

    def finish(self) -> None:
        """Final per-row values: variance corrected, f32 sums rounded once."""
        for m in self.plan.pass1:
            if m.compute is not None:
                continue
            r, acc, acc_elem = self.reductions[m.op], self.acc[m.op], self.accumulator(m)
            if r.mode == "variance":  # Q - (S - n K)^2 / n, never below 0
                t = nir.alloc([self.rows], acc_elem, "ub")
                self.vec("cce.vmuls", t, [self.shift[r.shift_root][1]], acc_elem, -float(self.n))
                self.vec("cce.vadd", t, [t, self.acc[r.base.op]], acc_elem)
                self.vec("cce.vmul", t, [t, t], acc_elem)
                self.vec("cce.vmuls", t, [t], acc_elem, -1.0 / self.n)
                self.vec("cce.vadd", acc, [acc, t], acc_elem)
                self.vec("cce.vmaxs", acc, [acc], acc_elem, 0.0)
            final = acc
            if acc_elem != m.out.elem:
                final = nir.alloc([self.rows], m.out.elem, "ub")
                self.k.convert(final, m.out.elem, acc, acc_elem, self.valid, "rint")
            self.cols[m.out.root] = final
            if m.out.root in self.k.g.leaving:
                self.k.store(m.out, final, self.row0, self.valid)

    def col_ops(self, members) -> None:
        for m in members:
            out = nir.alloc([self.rows], m.out.elem, "ub")
            self.k.elementwise(m, self.cols, {}, out, self.rows, self.valid)
            self.cols[m.out.root] = out
            if m.out.root in self.k.g.leaving:
                self.k.store(m.out, out, self.row0, self.valid)

    # -- pass 2 ---------------------------------------------------------------
    def outputs(self, j0, width: int, first: bool) -> None:
        k = self.k
        k.width = width
        bufs = dict(self.cols)
        expanded: dict = {}
        self.load_rows(self.plan.pass2, j0, width)
        last = last_uses(self.plan.pass2)
        for index, m in enumerate(self.plan.pass2):
            self.load_inputs(m, bufs, j0, width)
            out = self.result_buffer(m, index, last, bufs, width)
            k.elementwise(m, bufs, expanded, out, self.rows, self.valid)
            bufs[m.out.root] = out
            if m.out.root in k.g.leaving:
                self.move("cce.copy_ub_to_gm", m.out, out, j0, width)

    def result_buffer(self, m, index: int, last: dict, bufs: dict, width: int) -> ir.Value:
        """An input's piece buffer when `m` is its last use (lane-wise ops
        may write over what they read), else a new one."""
        source = in_place_source(m, index, last, self.k.g.leaving)
        if source is not None:
            return bufs[source.root]
        return nir.alloc([self.valid * width], m.out.elem, "ub")

    # -- data movement --------------------------------------------------------
    def load_rows(self, members, j0, width: int) -> None:
        """The piece of each row operand (gamma, beta) the pass reads."""
        for o in {i.root: i for m in members for i in m.ins if i.kind == "row"}.values():
            buf = nir.alloc([width], o.elem, "ub")
            copy("cce.copy_gm_to_ub", sub(self.k.flat[o.value], j0, width), buf, 1,
                 width * o.es // self.k.granule)
            self.k.fixed[o.root] = buf

    def load_inputs(self, m, bufs: dict, j0, width: int) -> None:
        for i in m.ins:
            if i.kind == "full" and i.root not in bufs:
                buf = nir.alloc([self.valid * width], i.elem, "ub")
                self.move("cce.copy_gm_to_ub", i, buf, j0, width)
                bufs[i.root] = buf

    def move(self, name: str, o, buf: ir.Value, j0, width: int) -> None:
        """Copy the piece [rows, j0:j0+width] of a full tensor (its GM rows
        `n` apart) between GM and its UB buffer (rows `width` apart)."""
        g, n, valid = self.k.granule, self.n, self.valid
        blocks, gap = width * o.es // g, (n - width) * o.es // g
        gm = self.k.flat[o.value]
        to_ub = name == "cce.copy_gm_to_ub"
        if valid == 1 or gap <= config_field("copy", "src_gap").max:
            view = sub(gm, lin((self.row0, n), (j0, 1)), (valid - 1) * n + width)
            src, dst = (view, buf) if to_ub else (buf, view)
            gaps = (gap, 0) if to_ub else (0, gap)
            copy(name, src, dst, valid, blocks, *(gaps if valid > 1 else (0, 0)))
            return
        for r in range(valid):  # rows too far apart for the gap field
            view = sub(gm, lin((self.row0, n), (j0, 1), (r, n)), width)
            part = sub(buf, r * width, width)
            copy(name, *((view, part) if to_ub else (part, view)), 1, blocks)

    # -- per-row vector ops ---------------------------------------------------
    def vec(self, op: str, dst: ir.Value, srcs: list, elem: str,
            scalar: float | None = None) -> None:
        """`op` over the chunk's valid rows of per-row buffers."""
        es, g = nir.element_bytes(elem), self.k.granule
        geo = VectorGeometry.for_types(self.k.target, [es])
        if len(srcs) == 2:
            compute = Compute("binary", vop=op)
        elif scalar is not None:
            compute = Compute("scalar", vop=op, scalar=scalar)
        else:
            compute = Compute("unary", steps=(Step(op, None, "y", ("x",)),))
        for piece in split_repeats(self.valid, geo.lanes, geo.max_repeat):
            span = (piece.repeat - 1) * geo.lanes + piece.mask

            def view(buf: ir.Value) -> View:
                return View(sub(buf, piece.offset, span), 1, geo.lanes * es // g)

            emit(compute, view(dst), [view(s) for s in srcs], piece.repeat, piece.mask)
