"""The UB-level builders of a fused row kernel's steps (`npu-lower-fused`):
an elementwise member over a chunk's rows (flat runs, row and col
operands broadcast down the rows or one row at a time), a reciprocal of a
col operand, a row reduction folded onto accumulators (or a sum of
products), conversions. Shared by the one-pass chunks and the two-pass
kernel's pieces (`npu.kernels.online_kernel`), whose `width` is the piece's.

  * elementwise ops whose operands are full/scalar (or all col): the
    per-instruction `Compute` of `npu-lower-elementwise` over the chunk as a
    flat run (recipes with temporaries, casts, f16 widening included);
  * a row or col operand: instructions run down the rows (repeat stride one
    row) per segment of `lanes` columns, the row operand with repeat stride
    0, the col operand expanded to one broadcast block per row by
    `npu.kernels.scalar_blocks.expand_scalar_blocks` (block stride 0); in
    place, or when rows are long and few, one row per instruction;
  * last-axis reductions: the row's segments folded onto a `lanes`-wide
    work row with vadd/vmax/vmin (the source stays intact for later ops),
    one vcadd/vcmax/vcmin per row; f16 sums accumulate in f32 and round once.
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.fusion import rows as fusion
from npu.costmodel.vector.recipes import Compute, cast_compute
from npu.costmodel.vector.tiling import VectorGeometry, round_down, split_repeats
from npu.kernels.cce_build import View, sub
from npu.kernels.scalar_blocks import expand_scalar_blocks
from npu.kernels.vector_compute import emit, emit_flat_run


# What a reduction's padding lanes hold (`RowBuilders.segment_partials`).
IDENTITY = {"ascend.reduce_sum": 0.0, "ascend.reduce_max": float("-inf"),
            "ascend.reduce_min": float("inf")}

# Accumulators of a sum of products (`fused_chunk.square_sum`): each
# segment is a multiply-add into one, so two keep the rounds short and
# halve the work rows of four.
PRODUCT_CHAINS = 2


def two_level_sum(n: int, lanes: int, aes: int, granule: int, online: bool,
                  one_pass: bool = True) -> bool:
    """A row sum as one cross-lane reduction per repeat (a row's partials
    land in a block-aligned row of their own) and one per row over them:
    no work rows of `lanes` accumulators, and one pipe_barrier(V) instead
    of one per round of folds. Whole repeats of at most `lanes` per row;
    the two-pass kernel's pieces only when the partials fill whole blocks
    (one instruction over the rows, else one per row). It costs one repeat
    per row more than the folds: in one-pass chunks only where the folds
    would take several accumulators (8 repeats or more a row), and not
    with `one_pass` false (npu-lower-fused steps=false)."""
    partials = n // lanes
    if online:
        return n % lanes == 0 and 1 < partials <= lanes and partials * aes % granule == 0
    return one_pass and n % lanes == 0 and 4 * 2 * lanes <= n and partials <= lanes


def long_row(n: int, aes: int, target) -> bool:
    """Rows of `n` accumulator elements (`aes` bytes) whose pitch exceeds
    the repeat stride: a reduction over them cannot repeat down the rows;
    it reduces each row's segments first (`RowBuilders.segment_partials`)."""
    return n * aes // target.granule("ub") > target.vector_max_stride


def sum_work_bytes(n: int, lanes: int, aes: int, granule: int, product: bool,
                   two_level: bool = True, long: bool = False) -> int:
    """UB bytes per row of a one-pass row sum's work rows; `long` (`long_row`):
    a row's segment partials, then the work rows of their reduction (the
    products' one-row buffer is not per row: `fused_chunk.chunk_bytes`
    counts it once)."""
    if long:
        block = granule // aes
        parts = n // lanes if n % lanes == 0 else -(-(n // lanes) // block) * block + 1
        pitch = -(-parts * aes // granule) * granule
        if parts <= lanes:
            return pitch
        return pitch + sum_work_bytes(parts, lanes, aes, granule, False, False)
    if not product and two_level_sum(n, lanes, aes, granule, False, two_level):
        return -(-(n // lanes) * aes // granule) * granule
    return fusion.fold_chains(n, lanes, PRODUCT_CHAINS if product else 4) * lanes * aes


class RowBuilders:
    """Mixin of `FusedKernel`: needs `p` (the pass), `target`, `granule`,
    `width` (columns of the UB rows), `online` (a two-pass plan or None),
    `fixed` (row and scalar operands in UB) and `consts` (recipe constant
    blocks per member index)."""

    def col_alloc(self, rows: int, elem: str) -> ir.Value:
        """A per-row buffer of `rows` values, rounded up to whole blocks (a
        col operand is broadcast a block of values at a time)."""
        return nir.alloc([self.col_size(rows, elem)], elem, "ub")

    def col_size(self, rows: int, elem: str) -> int:
        per_block = self.granule // nir.element_bytes(elem)
        return -(-rows // per_block) * per_block

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
                emit(compute, flat(out, m.out.es), srcs, piece.repeat, piece.mask,
                              [flat(b, es) for b, es in temps], self.consts.get(m.index))
            return
        for i in ins:
            if i.kind == "col" and i.root not in expanded:
                per_block = g // i.es  # vnchwconv expands whole blocks of col values
                wide = nir.alloc([-(-rows // per_block) * per_block * per_block], i.elem, "ub")
                expand_scalar_blocks(self.target, bufs[i.root], i.elem, rows, wide, m.op)
                expanded[i.root] = wide
        n, lanes = self.width, geo.lanes
        along_rows = split_repeats(n, lanes, geo.max_repeat)
        pitch = n * max(o.es for o in ins + [m.out]) // g
        # In place, instructions down the rows would each touch the span of
        # the rows the previous one wrote (npu-insert-sync orders them with
        # a pipe_barrier(V) each); one row per instruction keeps them apart.
        in_place = any(i.kind == "full" and bufs[i.root] == out for i in ins)
        if (pitch > self.target.vector_max_stride or in_place
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
                emit(compute, dst, srcs, rep, mask)
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
                emit(compute, along(out, r * n, m.out.es), srcs, piece.repeat, piece.mask)

    def reciprocal(self, o: fusion.Operand, bufs: dict, rows: int, valid: int,
                   geo: VectorGeometry) -> fusion.Operand:
        """1 / a col operand, once per row: dividing a row by its own value
        (softmax's sum) becomes a multiplication, a quarter of vdiv's cost
        per element; two roundings instead of one (within one ulp)."""
        key = ("reciprocal", o.root)
        if key not in bufs:
            rec = self.col_alloc(rows, o.elem)
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
               valid: int, wide: bool = False, factor: ir.Value | None = None) -> None:
        """Row results of reduction `m` into `out` (of `accumulator(m)`'s type
        when `wide`: two-pass partials stay unrounded). With `factor` (a row
        sum in f32, `fused_chunk.square_sum`), the rows reduced are the
        products src * factor: each segment is multiplied into its
        accumulator (vmul, then vmla), rounded once per segment, where a
        product pass and a fold pass would each read the rows."""
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

        sp = n  # the row pitch of `src`
        if long_row(n, aes, self.target):
            src, n, sp = self.segment_partials(m, src, factor, valid, n)
            factor = None
        row = sp * aes // g
        partials = n // lanes
        two_level = factor is None and sp == n and two_level_sum(
            n, lanes, aes, g, self.online is not None, self.p.steps)
        if n <= lanes and factor is not None:  # one segment: the products, then reduce them
            work, width, pitch = nir.alloc([valid * n], acc, "ub"), n, n
            emit_flat_run(Compute("binary", vop="cce.vmul"), self.target, valid * n,
                          (work, acc), [(src, acc), (factor, acc)])
        elif n <= lanes:  # one segment: reduce the rows where they are
            work, width, pitch = src, n, sp
        elif two_level:
            # One cross-lane reduction per repeat over whole rows (a row's
            # partials land contiguous, block-aligned), then one per row over
            # its partials: two instructions per group of rows instead of
            # one fold per `lanes` columns.
            pitch = -(-partials * aes // g) * g // aes  # a row's partials start on a block
            work, width = nir.alloc([valid * pitch], acc, "ub"), partials
            per = max(1, geo.max_repeat // partials) if pitch == partials else 1
            for r0 in range(0, valid, per):
                rr = min(valid - r0, per)
                nir.create_op(reduce_op, [sub(work, r0 * pitch, (rr - 1) * pitch + partials),
                                          sub(src, r0 * n, rr * n)],
                              repeat=rr * partials, mask=lanes, src_blk_stride=1,
                              src_rep_stride=lanes * aes // g, dst_rep_stride=1)
        else:
            chains = fusion.fold_chains(n, lanes, PRODUCT_CHAINS if factor is not None else 4)
            work, width, pitch = nir.alloc([valid * chains * lanes], acc, "ub"), lanes, lanes
        stride = pitch * aes // g
        if n > lanes and not two_level:
            def fold(dst: int, a: tuple[ir.Value, int, int], b: tuple[ir.Value, int, int],
                     mask: int = lanes, op: str = fold_op) -> None:
                """work from element dst = a op b; a, b: (buffer, first element, row pitch)."""
                def body(r0: int, rep: int) -> None:
                    (abuf, a0, ap), (bbuf, b0, bp) = a, b
                    nir.create_op(op, [sub(work, r0 * pitch + dst, (rep - 1) * pitch + mask),
                                       sub(abuf, r0 * ap + a0, (rep - 1) * ap + mask),
                                       sub(bbuf, r0 * bp + b0, (rep - 1) * bp + mask)],
                                  repeat=rep, mask=mask, dst_blk_stride=1, dst_rep_stride=stride,
                                  src0_blk_stride=1, src0_rep_stride=ap * aes // g,
                                  src1_blk_stride=1, src1_rep_stride=bp * aes // g)
                over_rows(body)

            def product(dst: int, j0: int, mask: int, first: bool) -> None:
                """work from element dst (+)= the segment at column j0 of src * factor."""
                fold(dst, (src, j0, n), (factor, j0, n), mask, "cce.vmul" if first else "cce.vmla")

            # `chains` independent accumulators, chain c's rows from element
            # c * valid * lanes (disjoint byte ranges: npu-insert-sync sees
            # them independent): a round of folds waits for one
            # pipe_barrier(V), not one per fold.
            base = [c * valid * lanes for c in range(chains)]
            segments = [(j0, min(lanes, n - j0)) for j0 in range(0, n, lanes)]
            if n >= 2 * lanes and factor is not None:
                for k, (j0, mask) in enumerate(segments):
                    product(base[k % chains], j0, mask, k < chains)
            elif n >= 2 * lanes:
                for c in range(chains):
                    fold(base[c], (src, 2 * c * lanes, sp), (src, (2 * c + 1) * lanes, sp))
                for k, (j0, mask) in enumerate(segments[2 * chains:]):
                    c = k % chains
                    fold(base[c], (work, base[c], pitch), (src, j0, sp), mask)
            if n >= 2 * lanes:
                while chains > 1:
                    chains //= 2
                    for c in range(chains):
                        fold(base[c], (work, base[c], pitch), (work, base[c + chains], pitch))
            elif factor is not None:  # one partial segment beyond the first
                product(0, 0, lanes, True)
                (j0, mask), = segments[1:]
                product(0, j0, mask, False)
            else:  # one partial segment beyond the first: a copy of segment 0, then the fold
                copy_rows = Compute("copy")
                over_rows(lambda r0, rep: emit(
                    copy_rows, View(sub(work, r0 * pitch, (rep - 1) * pitch + lanes), 1, stride),
                    [View(sub(src, r0 * sp, (rep - 1) * sp + lanes), 1, row)], rep, lanes))
                (j0, mask), = segments[1:]
                fold(0, (work, 0, pitch), (src, j0, sp), mask)
        keep = wide or acc == elem
        result = out if keep else self.col_alloc(rows, acc)
        over_rows(lambda r0, rep: nir.create_op(
            reduce_op, [sub(result, r0, rep), sub(work, r0 * pitch, (rep - 1) * pitch + width)],
            repeat=rep, mask=width, src_blk_stride=1, src_rep_stride=stride, dst_rep_stride=1))
        if not keep:
            self.convert(out, elem, result, acc, valid, "rint")

    def segment_partials(self, m: fusion.RowOp, src: ir.Value, factor: ir.Value | None,
                         valid: int, n: int) -> tuple[ir.Value, int, int]:
        """The first level of a reduction over rows longer than the repeat
        stride (`long_row`): one cross-lane reduction per `lanes` segment
        along each row (repeat stride one segment, whatever the row pitch),
        a row's partials into a block-aligned row of their own. With
        `factor`, each row's products first go to a one-row buffer (vmul).
        Returns (partials, their count per row, their row pitch): rows the
        caller reduces as usual, their pitch within the stride."""
        _, reduce_op = fusion.REDUCE[m.op.name]
        acc = fusion.accumulator(m)
        aes, g = nir.element_bytes(acc), self.granule
        lanes = VectorGeometry.for_types(self.target, [aes]).lanes
        block = g // aes
        whole = n // lanes
        # A last partial segment's result needs a block-aligned destination:
        # it goes on the block after the whole segments', the gap between
        # holds the reduction's identity (one vdup over all rows first).
        parts = whole if n % lanes == 0 else -(-whole // block) * block + 1
        pitch = -(-parts * aes // g) * g // aes
        work = nir.alloc([valid * pitch], acc, "ub")
        if parts != whole + (n % lanes != 0):
            for piece in split_repeats(valid * pitch, lanes, self.target.max_repeat):
                nir.create_op("cce.vdup", [sub(work, piece.offset,
                                               (piece.repeat - 1) * lanes + piece.mask)],
                              repeat=piece.repeat, mask=piece.mask, dst_blk_stride=1,
                              dst_rep_stride=lanes * aes // g, scalar=IDENTITY[m.op.name])
        products = nir.alloc([n], acc, "ub") if factor is not None else None
        if products is None and n % lanes == 0 and pitch == parts:
            # Whole segments and block-filling partials: rows back to back,
            # one instruction over as many rows as its repeats hold.
            most = round_down(self.target.max_repeat, block)  # results start on blocks
            per = max(1, most // parts)
            for r0 in range(0, valid, per):
                rr = min(valid - r0, per)
                for piece in split_repeats(rr * n, lanes, most):
                    first = r0 * parts + piece.offset // lanes
                    nir.create_op(reduce_op, [sub(work, first, piece.repeat),
                                              sub(src, r0 * n + piece.offset,
                                                  piece.repeat * lanes)],
                                  repeat=piece.repeat, mask=lanes, src_blk_stride=1,
                                  src_rep_stride=lanes * aes // g, dst_rep_stride=1)
            return work, parts, pitch
        for r in range(valid):
            row = sub(src, r * n, n)
            if products is not None:
                emit_flat_run(Compute("binary", vop="cce.vmul"), self.target, n,
                              (products, acc), [(row, acc), (sub(factor, r * n, n), acc)])
                row = products
            for piece in split_repeats(n, lanes, round_down(self.target.max_repeat, block)):
                first = piece.offset // lanes if piece.mask == lanes else parts - 1
                nir.create_op(reduce_op, [sub(work, r * pitch + first, piece.repeat),
                                          sub(row, piece.offset,
                                              (piece.repeat - 1) * lanes + piece.mask)],
                              repeat=piece.repeat, mask=piece.mask, src_blk_stride=1,
                              src_rep_stride=lanes * aes // g, dst_rep_stride=1)
        return work, parts, pitch

    def convert(self, dst: ir.Value, dst_elem: str, src: ir.Value, src_elem: str, count: int,
                round_mode: str) -> None:
        compute = cast_compute(src_elem, dst_elem, round_mode)
        geo = VectorGeometry.for_types(self.target, [4])
        lanes, g = geo.lanes, self.granule
        des, ses = nir.element_bytes(dst_elem), nir.element_bytes(src_elem)
        for ins in split_repeats(count, lanes, geo.max_repeat):
            span = (ins.repeat - 1) * lanes + ins.mask
            emit(compute, View(sub(dst, ins.offset, span), 1, lanes * des // g),
                          [View(sub(src, ins.offset, span), 1, lanes * ses // g)],
                          ins.repeat, ins.mask)
