"""npu-lower-fused: each `npu.fused` group (from `npu-fuse`) -> one cce
vector kernel over chunks of whole rows.

Per chunk of rows: every tensor the group reads from GM is loaded once
(at its first use), every member op computes in UB on the chunk's buffers,
and only the tensors leaving the group are stored (right after the op that
computes them). Row operands (bias, gamma) and scalars are loaded once
before the loop. Chunk rows are a whole number of `row_block` (32-byte
blocks of the col values) and as many as the footprint model
(`npu.fusion.footprint`) lets fit in `ub-fraction` of UB; the last chunk is
moved back to end at the last row (overlap: a few rows computed twice, which
is safe since a group never writes a tensor it loads).

Per member op, the UB-level builders of the vector lowerings:
  * elementwise ops whose operands are full/scalar (or all col): the
    per-instruction `Compute` of `npu-lower-elementwise` over the chunk as a
    flat run (recipes with temporaries, casts, f16 widening included);
  * a row or col operand: instructions run down the rows (repeat stride one
    row) per segment of `lanes` columns, the row operand with repeat stride
    0, the col operand expanded to one broadcast block per row by the
    elementwise lowering's `expand_scalar_blocks` (block stride 0);
  * last-axis reductions: the row's segments folded onto a `lanes`-wide
    work row with vadd/vmax/vmin (the source stays intact for later ops),
    one vcadd/vcmax/vcmin per row; f16 sums accumulate in f32 and round once.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu import fusion, gelu, online_rows
from npu.fusion import FUSED_UB_FRACTION
from npu import ir as nir
from npu.nz_store import NzStore
from npu.cce_build import View, copy, for_pieces, lin, sub
from npu.passes.base import Option, Pass, PassError, ub_fraction_option
from npu.passes.lower_elementwise import Input, expand_scalar_blocks, load_scalar
from npu.vector_compute import Compute, constant_blocks
from npu.vector_tiling import VectorGeometry, plan_chunks, round_down, split_repeats


# UB share a chunk's buffers may take when all of them are doubled.
DOUBLED_SHARE = 0.9
# What a fused group's body may hold besides its member ops.
BODY_OPS = ("memref.alloc", "scf.yield", "arith.constant") + nir.VIEW_OPS


class LowerFused(Pass):
    name = "npu-lower-fused"
    summary = "Lower npu.fused groups of row ops to one cce vector kernel each"
    options = (
        ub_fraction_option(FUSED_UB_FRACTION,
                           "UB share of one chunk's buffers by the footprint model (the rest: "
                           "double buffering and the memory planner's longer lifetimes)"),
        Option("max-chunk", int, 0,
               "cap on the elements of one chunk (0: as UB allows); for tests"),
    )

    def run(self, module: ir.Operation) -> None:
        for func in nir.functions(module):
            groups = nir.walk(func, lambda o: o.name == "scf.execute_region"
                              and fusion.FUSED_ATTR in o.attributes)
            if not groups:
                continue
            users = fusion.tensor_users(func)
            for region in groups:
                FusedKernel(self, region, users).emit()
                region.erase()


class FusedKernel:
    def __init__(self, p: LowerFused, region: ir.Operation, users: dict):
        self.p, self.region = p, region
        self.target = p.target
        self.granule = self.target.granule("ub")
        members, layouts = [], []
        for k, op in enumerate(region.regions[0].blocks[0].operations):
            op = op.operation
            if op.name == "ascend.fractalize":  # an Nz store of a member's result
                layouts.append(op)
                continue
            if not op.name.startswith("ascend."):
                if op.name not in BODY_OPS:
                    raise PassError(f"'{op.name}' cannot be part of a fused group (only ascend row "
                                    "ops, memref.alloc, views and scf.yield)", op)
                continue
            d = fusion.describe(op, k, self.target)
            if isinstance(d, str):
                raise PassError(f"cannot be part of a fused group: {d}", op)
            members.append(d)
        if not members:
            raise PassError("an npu.fused group without ascend ops", region)
        self.g = fusion.model(members, users, layouts=layouts)
        collapsed = gelu.collapse(self.g.members, self.g.leaving)
        if len(collapsed) < len(members):
            kept = {m.op for m in collapsed}
            self.g = fusion.model(collapsed, users, [m.op for m in members if m.op not in kept],
                                  layouts)
        self.members = self.g.members
        self.rows, self.n = self.g.rows, self.g.n or 1
        self.width = self.n  # columns of the UB buffers (a piece's in the two-pass kernel)
        fp = fusion.footprint(self.g, self.target)
        budget = int(self.target.capacity("ub") * p.ub_fraction)
        self.online = None
        if not online_rows.whole_rows_fit(self.g, self.target, budget):
            plan = online_rows.plan(self.g, self.target, budget)
            if isinstance(plan, str):
                raise PassError(f"the fused group does not fit UB: {fp.fixed} + {fp.per_row} "
                                f"bytes per row, budget {budget}; {plan}", region)
            self.online = plan
            self.check_layouts(layouts)
            self.plan = plan_chunks(self.rows, plan.rows,
                                    online_rows.online_row_block(self.g, self.target))
            return
        self.check_layouts(layouts)
        # Some stores wait for the chunk's end (see `chunk`) when keeping their
        # results live until then costs no rows.
        rows = self.chunk_rows(fp, budget, region)
        self.deferred = fusion.stores_at_end(self.g)
        if self.chunk_rows(fusion.footprint(self.g, self.target, deferred=self.deferred),
                           budget, region) < rows:
            self.deferred = frozenset()
        self.plan = plan_chunks(self.rows, rows, fp.row_block)

    def chunk_rows(self, fp: fusion.Footprint, budget: int, region: ir.Operation) -> int:
        """Rows of a chunk under footprint `fp`."""
        max_rows = fp.rows_fitting(budget)
        # npu-double-buffer gives each buffer of the loop body a second copy,
        # live for the whole body, only while both fit: a chunk whose buffers
        # all fit twice overlaps load, compute and store; the liveness-sized
        # chunk would leave some buffers single (serialising on them).
        doubled = (int(self.target.capacity("ub") * DOUBLED_SHARE) - 2 * fp.fixed) // max(
            1, 2 * fp.all_per_row)
        doubled -= doubled % fp.row_block
        # ... worth it only while one chunk's load takes at least half the GM latency.
        path = self.target.path("gm_to_ub")
        widest_row = max((self.n * o.es for o in self.g.loaded.values() if o.kind == "full"),
                         default=0)
        long_enough = 2 * doubled * widest_row >= path.latency * path.bytes_per_cycle
        if doubled >= fp.row_block and long_enough:
            max_rows = min(max_rows, doubled)
        if self.p.max_chunk:
            max_rows = min(max_rows, max(fp.row_block,
                                         round_down(self.p.max_chunk // self.n, fp.row_block)))
        if max_rows < fp.row_block or max_rows <= 0:
            raise PassError(f"the fused group does not fit UB: {fp.fixed} + {fp.per_row} bytes "
                            f"per row, budget {budget}", region)
        return max_rows

    def check_layouts(self, layouts: list[ir.Operation]) -> None:
        written = {m.out.root for m in self.members if m.out.kind == "full"}
        for f in layouts:
            why = fusion.nz_layout(f.operands[0], f.operands[1], self.g.rows, self.g.n,
                                   self.target)
            if why is None and nir.view_root(f.operands[0]) not in written:
                why = "it does not read a member's result"
            if why is None and self.online is not None:
                why = "the group's rows are longer than UB (two-pass kernel)"
            if why is not None:
                raise PassError(f"cannot be an Nz store of the fused group: {why}", f)

    # -- structure ------------------------------------------------------------
    def emit(self) -> None:
        with self.region.location, ir.InsertionPoint(self.region):
            # GM views of what moves between GM and UB (never the group's own tensors).
            self.flat = {}
            for m in self.members:
                for o in m.ins + [m.out]:
                    moves = o.root in self.g.loaded or o.root in self.g.leaving
                    if moves and o.value not in self.flat:
                        self.flat[o.value] = nir.flatten_memref(o.value)
            self.nz = {root: NzStore(self.target, nir.flatten_memref(nz), self.rows, self.n,
                                     nir.memref_element(nz)) for root, nz in self.g.nz.items()}
            for store in self.nz.values():
                store.zero_padding()
            self.fixed: dict = {}
            for o in self.g.loaded.values():
                if o.kind == "row" and self.online is None:  # two-pass: per piece
                    buf = nir.alloc([self.n], o.elem, "ub")
                    copy("cce.copy_gm_to_ub", self.flat[o.value], buf, 1,
                         self.n * o.es // self.granule)
                    self.fixed[o.root] = buf
                elif o.kind == "scalar":
                    self.fixed[o.root] = load_scalar(self.p, Input(o.value, "scalar", o.elem),
                                                     self.flat[o.value], self.region)
            # The recipes' constant blocks, once before the chunks.
            self.consts = {m.index: constant_blocks(m.compute, self.target)
                           for m in self.members if m.compute is not None}
            if self.online is not None:
                from npu.online_kernel import TwoPass

                for_pieces(self.plan, lambda row0, rows: TwoPass(self, row0, rows).emit())
            else:
                for_pieces(self.plan, self.chunk)

    def chunk(self, row0, rows: int) -> None:
        """One chunk: loads at first use, the members in order, each store
        right after its result, but the `deferred` ones back to back at the
        chunk's end (`fusion.stores_at_end`). Stores issued together share
        one MTE3 -> V flag (`npu-insert-sync` sink-sets); each flag costs
        MTE3 the GM latency, and layernorm's two results (f32 and its f16
        Nz copy, whose cast and gather come between) would pay it twice per
        chunk."""
        valid = min(rows, self.rows)
        bufs: dict = {}
        expanded: dict = {}
        pending: list = []
        k = 0
        while k < len(self.members):
            m = self.members[k]
            pair = self.multiply_add(k)
            if pair is not None:
                m, x = pair
                k += 1
            for i in m.ins + ([x] if pair is not None else []):
                if i.kind in ("full", "col") and i.root not in bufs:
                    bufs[i.root] = self.load(i, row0, rows, valid)
            if pair is not None:
                out = bufs[x.root]  # dead after the pair: the result overwrites it
            else:
                out = nir.alloc([valid * self.n if m.out.kind == "full" else rows], m.out.elem,
                                "ub")
            if m.compute is None:
                self.reduce(m, bufs[m.ins[0].root], out, rows, valid)
            else:
                self.elementwise(m, bufs, expanded, out, rows, valid)
            bufs[m.out.root] = out
            if m.out.root in self.g.leaving:
                def leave(o: fusion.Operand = m.out, buf: ir.Value = out) -> None:
                    self.store(o, buf, row0, valid)

                if m.out.root in self.deferred:
                    pending.append(leave)
                else:
                    leave()
            if m.out.root in self.nz:
                self.nz[m.out.root].store(out, row0, valid,
                                          pending if m.out.root in self.deferred else None)
            k += 1
        for leave in pending:
            leave()

    def multiply_add(self, k: int) -> tuple[fusion.RowOp, fusion.Operand] | None:
        """Members k, k+1 as one vmadd: t = x * p then y = t + q, where t is
        used by nothing else and x (a full operand) by nothing after; y is
        computed in x's buffer as p * x + q (one rounding where there were
        two). Returns (the vmadd member over (p, q), x) or None."""
        if k + 1 >= len(self.members):
            return None
        m, m2 = self.members[k], self.members[k + 1]
        if not (m.compute and m2.compute and (m.compute.kind, m.compute.vop) == ("binary", "cce.vmul")
                and (m2.compute.kind, m2.compute.vop) == ("binary", "cce.vadd")):
            return None
        t = m.out.root
        later = [i.root for n in self.members[k + 2:] for i in n.ins]
        if (t in self.g.leaving or t in self.nz or t in later
                or [i.root for i in m2.ins].count(t) != 1):
            return None
        (q,) = [i for i in m2.ins if i.root != t]
        elems = {o.elem for o in m.ins + m2.ins + [m.out, m2.out]}
        if m2.out.kind != "full" or len(elems) != 1 or elems - {"f16", "f32"}:
            return None
        for x, p in ((m.ins[0], m.ins[1]), (m.ins[1], m.ins[0])):
            if x.kind == "full" and x.root not in later and x.root not in (p.root, q.root):
                return fusion.RowOp(m2.op, m2.index, m2.rows, m2.n, [p, q], m2.out,
                                    Compute("multiply_add")), x
        return None

    def load(self, o: fusion.Operand, row0, rows: int, valid: int) -> ir.Value:
        if o.kind == "full":
            buf = nir.alloc([valid * self.n], o.elem, "ub")
            copy("cce.copy_gm_to_ub", sub(self.flat[o.value], lin((row0, self.n)), valid * self.n),
                 buf, 1, valid * self.n * o.es // self.granule)
            return buf
        buf = nir.alloc([rows], o.elem, "ub")
        copy("cce.copy_gm_to_ub", sub(self.flat[o.value], row0, rows), buf, 1,
             -(-valid * o.es // self.granule))
        return buf

    def store(self, o: fusion.Operand, buf: ir.Value, row0, valid: int) -> None:
        if o.kind == "full":
            copy("cce.copy_ub_to_gm", buf, sub(self.flat[o.value], lin((row0, self.n)),
                                               valid * self.n), 1,
                 valid * self.n * o.es // self.granule)
        else:
            copy("cce.copy_ub_to_gm", buf, sub(self.flat[o.value], row0, valid), 1,
                 -(-valid * o.es // self.granule))

    # -- elementwise ----------------------------------------------------------
    def elementwise(self, m: fusion.RowOp, bufs: dict, expanded: dict, out: ir.Value,
                    rows: int, valid: int) -> None:
        compute, ins = m.compute, list(m.ins)
        sizes = [o.es for o in m.ins + [m.out]] + [nir.element_bytes(t) for t in compute.temps]
        geo = VectorGeometry.for_types(self.target, sizes)
        g = self.granule
        if m.op.name == "ascend.div" and ins[1].kind == "col" and m.out.kind == "full":
            ins[1] = self.reciprocal(ins[1], bufs, rows, valid, geo)
            compute = Compute("binary", vop="cce.vmul")
        if m.out.kind == "col" or all(i.kind in ("full", "scalar") for i in ins):
            count = valid * (self.width if m.out.kind == "full" else 1)
            lanes = geo.lanes
            temps = [(nir.alloc([count], t, "ub"), nir.element_bytes(t)) for t in compute.temps]
            for piece in split_repeats(count, lanes, geo.max_repeat):
                touched = (piece.repeat - 1) * lanes + piece.mask

                def flat(buf: ir.Value, es: int) -> View:
                    return View(sub(buf, piece.offset, touched), 1, lanes * es // g)

                srcs = [self.fixed[i.root] if i.kind == "scalar" else flat(bufs[i.root], i.es)
                        for i in ins]
                compute.emit(flat(out, m.out.es), srcs, piece.repeat, piece.mask,
                             [flat(b, es) for b, es in temps], self.consts.get(m.index))
            return
        for i in ins:
            if i.kind == "col" and i.root not in expanded:
                per_block = g // i.es  # vnchwconv expands whole blocks of col values
                wide = nir.alloc([-(-rows // per_block) * per_block * per_block], i.elem, "ub")
                expand_scalar_blocks(self.p, bufs[i.root], i.elem, rows, wide, m.op)
                expanded[i.root] = wide
        n, lanes = self.width, geo.lanes
        along_rows = split_repeats(n, lanes, geo.max_repeat)
        pitch = n * max(o.es for o in ins + [m.out]) // g
        if (pitch > self.target.vector_max_stride
                or valid * len(along_rows) < -(-n // lanes) * -(-valid // geo.max_repeat)):
            self.broadcast_by_row(m, compute, ins, bufs, expanded, out, valid, along_rows, lanes)
            return
        for j0 in range(0, n, lanes):
            mask = min(lanes, n - j0)
            r0 = 0
            while r0 < valid:
                rep = min(valid - r0, geo.max_repeat)
                span = (rep - 1) * n + mask
                srcs = []
                for i in ins:
                    if i.kind == "full":
                        srcs.append(View(sub(bufs[i.root], r0 * n + j0, span), 1, n * i.es // g))
                    elif i.kind == "row":
                        srcs.append(View(sub(self.fixed[i.root], j0, mask), 1, 0))
                    elif i.kind == "scalar":
                        srcs.append(self.fixed[i.root])
                    else:
                        per_block = g // i.es
                        srcs.append(View(sub(expanded[i.root], r0 * per_block, rep * per_block),
                                         0, 1))
                dst = View(sub(out, r0 * n + j0, span), 1, n * m.out.es // g)
                compute.emit(dst, srcs, rep, mask)
                r0 += rep

    def broadcast_by_row(self, m: fusion.RowOp, compute: Compute, ins: list, bufs: dict,
                         expanded: dict, out: ir.Value, valid: int, along_rows,
                         lanes: int) -> None:
        """The row-broadcast op one row at a time (repeats along the row, a
        col operand's broadcast block re-read by every repeat): fewer
        instructions than one per `lanes` columns when rows are long and few."""
        g, n = self.granule, self.width
        for r in range(valid):
            for piece in along_rows:
                span = (piece.repeat - 1) * lanes + piece.mask

                def along(buf: ir.Value, start: int, es: int) -> View:
                    return View(sub(buf, start + piece.offset, span), 1, lanes * es // g)

                srcs = []
                for i in ins:
                    if i.kind == "full":
                        srcs.append(along(bufs[i.root], r * n, i.es))
                    elif i.kind == "row":
                        srcs.append(along(self.fixed[i.root], 0, i.es))
                    elif i.kind == "scalar":
                        srcs.append(self.fixed[i.root])
                    else:
                        per_block = g // i.es
                        srcs.append(View(sub(expanded[i.root], r * per_block, per_block), 0, 0))
                compute.emit(along(out, r * n, m.out.es), srcs, piece.repeat, piece.mask)

    def reciprocal(self, o: fusion.Operand, bufs: dict, rows: int, valid: int,
                   geo: VectorGeometry) -> fusion.Operand:
        """1 / a col operand, once per row: dividing a row by its own value
        (softmax's sum) becomes a multiplication, a quarter of vdiv's cost
        per element; two roundings instead of one (within one ulp)."""
        key = ("reciprocal", o.root)
        if key not in bufs:
            rec = nir.alloc([rows], o.elem, "ub")
            lanes = VectorGeometry.for_types(self.target, [o.es]).lanes
            for ins in split_repeats(valid, lanes, geo.max_repeat):
                span = (ins.repeat - 1) * lanes + ins.mask
                stride = lanes * o.es // self.granule
                nir.create_op("cce.vrec", [sub(rec, ins.offset, span), sub(bufs[o.root], ins.offset, span)],
                              repeat=ins.repeat, mask=ins.mask, dst_blk_stride=1,
                              dst_rep_stride=stride, src_blk_stride=1, src_rep_stride=stride)
            bufs[key] = rec
        return fusion.Operand(o.value, key, "col", o.elem)

    # -- reductions -----------------------------------------------------------
    def reduce(self, m: fusion.RowOp, src: ir.Value, out: ir.Value, rows: int,
               valid: int, wide: bool = False) -> None:
        """Row results of reduction `m` into `out` (of `accumulator(m)`'s type
        when `wide`: two-pass partials stay unrounded)."""
        fold_op, reduce_op = fusion.REDUCE[m.op.name]
        elem = m.ins[0].elem
        acc = fusion.accumulator(m)
        aes, g, n = nir.element_bytes(acc), self.granule, self.width
        geo = VectorGeometry.for_types(self.target, [aes])
        lanes = geo.lanes
        if acc != elem:
            widened = nir.alloc([valid * n], acc, "ub")
            self.convert(widened, acc, src, elem, valid * n, "none")
            src = widened
        step = round_down(geo.max_repeat, geo.block)  # result groups start on blocks

        def over_rows(body) -> None:
            r0 = 0
            while r0 < valid:
                rep = min(valid - r0, step)
                body(r0, rep)
                r0 += rep

        row = n * aes // g
        partials = n // lanes
        two_level = (self.online is not None and n % lanes == 0 and 1 < partials <= lanes
                     and partials * aes % g == 0)
        if n <= lanes:  # one segment: reduce the rows where they are
            work, width, pitch = src, n, n
        elif two_level:
            # One cross-lane reduction per repeat over whole rows (a row's
            # partials land contiguous, block-aligned), then one per row over
            # its partials: two instructions per group of rows instead of
            # one fold per `lanes` columns.
            work, width, pitch = nir.alloc([valid * partials], acc, "ub"), partials, partials
            per = max(1, geo.max_repeat // partials)
            for r0 in range(0, valid, per):
                rr = min(valid - r0, per)
                nir.create_op(reduce_op, [sub(work, r0 * partials, rr * partials),
                                          sub(src, r0 * n, rr * n)],
                              repeat=rr * partials, mask=lanes, src_blk_stride=1,
                              src_rep_stride=lanes * aes // g, dst_rep_stride=1)
        else:
            chains = fusion.fold_chains(n, lanes)
            work, width, pitch = nir.alloc([valid * chains * lanes], acc, "ub"), lanes, lanes
        stride = pitch * aes // g
        if n > lanes and not two_level:
            def fold(dst: int, a: tuple[ir.Value, int, int], b: tuple[ir.Value, int, int],
                     mask: int = lanes) -> None:
                """work from element dst = a op b; a, b: (buffer, first element, row pitch)."""
                def body(r0: int, rep: int) -> None:
                    (abuf, a0, ap), (bbuf, b0, bp) = a, b
                    nir.create_op(fold_op, [sub(work, r0 * pitch + dst, (rep - 1) * pitch + mask),
                                            sub(abuf, r0 * ap + a0, (rep - 1) * ap + mask),
                                            sub(bbuf, r0 * bp + b0, (rep - 1) * bp + mask)],
                                  repeat=rep, mask=mask, dst_blk_stride=1, dst_rep_stride=stride,
                                  src0_blk_stride=1, src0_rep_stride=ap * aes // g,
                                  src1_blk_stride=1, src1_rep_stride=bp * aes // g)
                over_rows(body)

            # `chains` independent accumulators, chain c's rows from element
            # c * valid * lanes (disjoint byte ranges: npu-insert-sync sees
            # them independent): a round of folds waits for one
            # pipe_barrier(V), not one per fold.
            base = [c * valid * lanes for c in range(chains)]
            segments = [(j0, min(lanes, n - j0)) for j0 in range(0, n, lanes)]
            if n >= 2 * lanes:
                for c in range(chains):
                    fold(base[c], (src, 2 * c * lanes, n), (src, (2 * c + 1) * lanes, n))
                for k, (j0, mask) in enumerate(segments[2 * chains:]):
                    c = k % chains
                    fold(base[c], (work, base[c], pitch), (src, j0, n), mask)
                while chains > 1:
                    chains //= 2
                    for c in range(chains):
                        fold(base[c], (work, base[c], pitch), (work, base[c + chains], pitch))
            else:  # one partial segment beyond the first: a copy of segment 0, then the fold
                copy_rows = Compute("copy")
                over_rows(lambda r0, rep: copy_rows.emit(
                    View(sub(work, r0 * pitch, (rep - 1) * pitch + lanes), 1, stride),
                    [View(sub(src, r0 * n, (rep - 1) * n + lanes), 1, row)], rep, lanes))
                (j0, mask), = segments[1:]
                fold(0, (work, 0, pitch), (src, j0, n), mask)
        keep = wide or acc == elem
        result = out if keep else nir.alloc([rows], acc, "ub")
        over_rows(lambda r0, rep: nir.create_op(
            reduce_op, [sub(result, r0, rep), sub(work, r0 * pitch, (rep - 1) * pitch + width)],
            repeat=rep, mask=width, src_blk_stride=1, src_rep_stride=stride, dst_rep_stride=1))
        if not keep:
            self.convert(out, elem, result, acc, valid, "rint")

    def convert(self, dst: ir.Value, dst_elem: str, src: ir.Value, src_elem: str, count: int,
                round_mode: str) -> None:
        from npu.vector_compute import cast_compute

        compute = cast_compute(src_elem, dst_elem, round_mode)
        geo = VectorGeometry.for_types(self.target, [4])
        lanes, g = geo.lanes, self.granule
        des, ses = nir.element_bytes(dst_elem), nir.element_bytes(src_elem)
        for ins in split_repeats(count, lanes, geo.max_repeat):
            span = (ins.repeat - 1) * lanes + ins.mask
            compute.emit(View(sub(dst, ins.offset, span), 1, lanes * des // g),
                         [View(sub(src, ins.offset, span), 1, lanes * ses // g)],
                         ins.repeat, ins.mask)
