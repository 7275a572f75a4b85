"""npu-lower-fractalize: ascend.fractalize (ND -> Nz) and ascend.defractalize
(Nz -> ND) through UB with `vnchwconv` (thesis 6.4.2).

The matrix is processed in strips of `t` row blocks (h = 16t rows). A strip
is loaded into UB row by row (pitch padded to whole column blocks) and two
`vnchwconv` passes turn it into the Nz strip, which leaves with one copy
(C1 bursts of t fractals, one per column block). With rows numbered
r = a*t + b (a < 16, b < t), as in the thesis:

  pass 1: pieces of rows {a*t+b : a} -> tmp[b][c][d][a]   (one instruction,
          repeat over (b, c); "collects 16x16 blocks")
  pass 2: tmp[b] -> out[c][a*t+b][d]                       (one per b
          (two for f32); "transposes the blocks back")

`algorithm=naive` uses t = 1 (16-row strips: two vnchwconv of C1 repeats
each per strip); `algorithm=fill-ub` (default) takes the largest t whose
strip and tmp buffers fill UB (80 rows for a 768-wide f16 matrix on
ascend910), then a shorter tail strip; `ub-fraction=0.5` limits the strips
to half of UB so that npu-double-buffer can ping-pong them (measured
fastest with double buffering, see bench/fractalize.py). Defractalize runs the same passes
inverted. f32 uses the 4-byte vnchwconv (16 rows of 8 elements -> 8 rows of
16, written in halves).

A batch of matrices of one strip each (attention heads of 49 rows) has the
strip in the batch loop's own body, so npu-double-buffer ping-pongs its
buffers across the matrices; a one-trip strip loop there kept each
matrix's load, passes and store in series (six 49 x 32 f16 matrices:
5,367 -> 3,273 cycles on one core).

On many cores a matrix wider than one column block may be cut into runs of
its row blocks (`npu.core_part`, npu-split-cores): each core strips its own
run through the whole tensors.

Tails: rows beyond R in the last row block are zero-filled in UB (Nz
padding); columns beyond C in the last column block are zero-filled too.
Rows whose byte length is not a whole number of 32-byte blocks are moved
one row per copy (GM addresses have no alignment, UB rows stay aligned);
a row read may run into the next row (those lanes are padding columns and
are zeroed after pass 1), a row write may run into the next row (which is
written later by the same pipe, in order). Near the tensor's end, where a
whole-block access would pass the end, the last 32 bytes of the tensor are
moved as one window: on reads the window is fetched and the row tails are
shifted into place with two vnchwconv (broadcast every element to its own
piece, then pick 16 pieces); on writes the window is gathered the same way
from the UB rows and written last. No access ever passes the tensor's end.
"""

from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith, memref

from npu import ir as nir
from npu.kernels.cce_build import copy, core_part, index_add, index_mul
from npu.dialects.hivm import config_field
from npu.passes.base import Option, Pass, PassError, ub_fraction_option
from npu.passes.applies import OnOps

from .plan import (ALGORITHMS, VNCHW_BLOCK_BYTES, VNCHW_ROWS, Geometry, Vnchw, forward_passes,
                   inverse_passes, split_repeats)
from .rows import RowMoves

# A one-row matrix moves with strided copies (`LowerFractalize.emit_one_row`);
# False: through the 16-row strips and vnchwconv (the program of before).
ONE_ROW = True

__all__ = ["LowerFractalize", "Geometry", "Vnchw", "forward_passes", "inverse_passes",
           "split_repeats", "ALGORITHMS"]


class LowerFractalize(RowMoves, Pass):
    name = "npu-lower-fractalize"
    summary = "Lower ascend.fractalize/defractalize to cce (UB strips + vnchwconv)"
    handles = ("ascend.fractalize", "ascend.defractalize")
    acts_on = OnOps("fractalize or defractalize", handles)  # every option: the program has one
    options = (
        Option("algorithm", str, "fill-ub", "naive: 16-row strips; fill-ub: strips as tall "
               "as UB allows, then the tail", ALGORITHMS),
        ub_fraction_option(1.0, "share of UB the fill-ub strips may use (0.5 leaves "
                           "room for npu-double-buffer to ping-pong them)"),
    )

    def run(self, module: ir.Operation) -> None:
        self.lower_each(module)

    # ------------------------------------------------------------------ analysis

    def geometry(self, op: ir.Operation) -> Geometry:
        frac = self.target.fractal
        forward = op.name == "ascend.fractalize"
        if len(op.operands) != 2:
            raise PassError(f"expects 2 operands (src, dst), got {len(op.operands)}", op)
        nd, nz = (op.operands[0], op.operands[1]) if forward else (op.operands[1], op.operands[0])
        for v in (nd, nz):
            if not nir.is_memref(v.type) or nir.memory_space(v) != "gm":
                raise PassError(f"operands must be memrefs in 'gm', got {v.type}", op)
        et = nir.memref_element(nd)
        if et not in ("f16", "f32", "i32", "i8") or nir.memref_element(nz) != et:
            raise PassError(f"fractalize needs f16, f32, i32 or i8 operands of one type, got "
                            f"{nir.memref_element(op.operands[0])} and "
                            f"{nir.memref_element(op.operands[1])}", op)
        nd_shape, nz_shape = nir.memref_shape(nd), nir.memref_shape(nz)
        if len(nd_shape) < 2:
            raise PassError(f"the ND operand needs at least 2 dimensions, got {nd.type}", op)
        R, C = nd_shape[-2:]
        lead = nd_shape[:-2]
        c0 = self.target.fractal_k_int8 if et == "i8" else frac
        R1, C1 = -(-R // frac), -(-C // c0)
        want = lead + [C1, R1, frac, c0]
        if nz_shape != want:
            raise PassError(f"the Nz operand of a {'x'.join(map(str, nd_shape))} matrix must be "
                            f"{'x'.join(map(str, want))}, got {nz.type}", op)
        batch = 1
        for d in lead:
            batch *= d
        if et == "i8":
            # An int8 Nz block row is 32 bytes of an ND row, as an f16 one is:
            # the bytes move as f16 pairs, C/2 of them per row.
            if C % 2 or not forward:
                raise PassError(f"int8 {'' if forward else 'de'}fractalize moves bytes in pairs: "
                                f"it needs an even number of columns and the ND -> Nz "
                                f"direction, got {'x'.join(map(str, nd_shape))}", op)
            return Geometry(batch, R, C // 2, 2, R1, C1, "f16")
        return Geometry(batch, R, C, nir.element_bytes(et), R1, C1, et)

    def byte_pairs(self, flat: ir.Value, op: ir.Operation) -> ir.Value:
        """A flat int8 buffer viewed as f16 (its bytes in pairs)."""
        t = nir.memref_type(flat)
        if nir.memref_layout(t)[1] != 0:
            raise PassError(f"int8 fractalize needs dense operands starting at their buffer, "
                            f"got {nir.memref_type(op.operands[0])}", op)
        view = ir.MemRefType.get([t.shape[0] // 2], ir.F16Type.get(), None, t.memory_space)
        return memref.ViewOp(view, flat, nir.index_const(0), []).result

    def strip_rows_blocks(self, g: Geometry, op: ir.Operation) -> int:
        """Row blocks per strip: 1 (naive) or as many as strip + tmp fit UB."""
        frac = self.target.fractal
        per_block = 2 * frac * g.Cp * g.e  # strip and tmp buffers for one row block
        budget = int(self.target.capacity("ub") * self.ub_fraction)
        whole = (self.target.capacity("ub") - self.scratch_bytes(g)) // per_block
        fit = min(whole, max(1, (budget - self.scratch_bytes(g)) // per_block))
        if whole < 1:
            raise PassError(f"rows of {g.C} elements are too wide: one {frac}-row strip and its "
                            f"transpose need {per_block} bytes of UB, capacity "
                            f"{self.target.capacity('ub')} bytes", op)
        if self.algorithm == "naive":
            return 1
        # vnchwconv repeat strides are 8-bit block counts; pass 2 steps over
        # a column block of the Nz strip: t fractals.
        max_rep_stride = config_field("vector", "dst_rep_stride").max
        stride_per_t = self.target.fractal_bytes(g.e) // self.target.vector_block_bytes
        return max(1, min(fit, g.R1, max_rep_stride // stride_per_t))

    def scratch_bytes(self, g: Geometry) -> int:
        """UB the end-of-tensor window needs beside the strip buffers: the
        broadcast pieces of up to one source piece per lane, the picked
        pieces and the window itself (only for rows of partial blocks)."""
        unit = self.target.vector_block_bytes
        if g.row_bytes % unit == 0:
            return 0
        frac = self.target.fractal
        lanes = unit // g.e
        return (lanes * frac + frac + 1) * unit

    # ------------------------------------------------------------------ lowering

    def lower(self, op: ir.Operation) -> None:
        if (self.target.fractal, self.target.vector_block_bytes) != (VNCHW_ROWS, VNCHW_BLOCK_BYTES):
            raise PassError(f"npu-lower-fractalize is written for {VNCHW_ROWS}x{VNCHW_ROWS} fractals "
                            f"and {VNCHW_BLOCK_BYTES}-byte blocks; target '{self.target.name}' has "
                            f"{self.target.fractal} and {self.target.vector_block_bytes}", op)
        g = self.geometry(op)
        forward = op.name == "ascend.fractalize"
        unit = self.target.vector_block_bytes
        if g.row_bytes % unit and g.batch > 1 and g.R * g.C * g.e < unit:
            # The end-of-tensor window must lie inside the last matrix.
            raise PassError(f"batches of matrices smaller than one {unit}-byte block whose rows "
                            f"are not whole blocks are not supported ({g.R}x{g.C} {g.element}"
                            f" = {g.R * g.C * g.e} bytes)", op)
        src, dst = op.operands
        run = self.row_run(op, g)
        # A single row needs no strip (a classifier's 25088 features would
        # need 1.6 MB of UB for one 16-row strip and its transpose).
        one_row = run is None and ONE_ROW and self.one_row(g, forward)
        t = 1 if one_row else self.strip_rows_blocks(g, op)
        with op.location, ir.InsertionPoint(op):
            nd = nir.flatten_memref(src if forward else dst)
            nz = nir.flatten_memref(dst if forward else src)
            if nir.memref_element(nd) == "i8":
                nd, nz = self.byte_pairs(nd, op), self.byte_pairs(nz, op)
            if run is not None:
                self.emit_run(g, nd, nz, min(t, run[0]), forward, *run)
                op.erase()
                return
            if one_row:
                self.emit_one_row(g, nd, nz, forward)
                op.erase()
                return
            plan = self.strip_plan(g, t, op)
            for p_seg, last_batch in self.batch_segments(g):
                def per_batch(p: ir.Value, last: bool = last_batch) -> None:
                    for rb0, count, tt, is_last in plan:
                        def per_strip(rb: ir.Value, tt: int = tt, is_last: bool = is_last,
                                      rb0: int = rb0):
                            self.emit_strip(g, nd, nz, p, rb, tt, forward,
                                            rb0 if is_last else None, last and is_last)
                        if count == 1 and g.batch > 1 and len(plan) == 1:
                            # one strip a matrix: in the batch loop's own body, whose
                            # buffers npu-double-buffer ping-pongs across the matrices
                            per_strip(nir.index_const(rb0))
                        else:
                            self.emit_range(rb0, count, tt, per_strip)
                if g.batch == 1:
                    per_batch(nir.index_const(0))  # no batch loop for a single matrix
                else:
                    self.emit_range(p_seg[0], p_seg[1], 1, per_batch)
        op.erase()

    def one_row(self, g: Geometry, forward: bool) -> bool:
        """A single row (a classifier's pooled features, its logits): its Nz
        is that row in row 0 of each column block, the other 15 rows zero,
        so it moves with strided copies alone (`emit_one_row`). A fractalize
        needs whole column blocks (its row's last block read whole, not past
        the tensor's end), a defractalize a row of whole 32-byte blocks in UB."""
        if g.batch != 1 or g.R != 1 or g.element == "i8" or g.Cp != g.C1 * self.target.fractal:
            return False
        if not forward:
            # a row of whole 32-byte blocks: with an end-of-tensor window the
            # window's gather waited for the row's store (MobileNetV3-small's
            # f16 logits on 32 cores, +291 cycles); the strips overlap them
            return (g.row_bytes % self.target.vector_block_bytes == 0
                    and g.row_bytes <= self.target.capacity("ub"))
        return g.C == g.Cp

    def emit_one_row(self, g: Geometry, nd: ir.Value, nz: ir.Value, forward: bool) -> None:
        """The row between GM and row 0 of every block of its Nz: a
        defractalize reads those rows (C1 bursts of one block row, 15 block
        rows apart) and stores the row; a fractalize zeroes the Nz in UB,
        loads the row into those rows and stores it whole. No vnchwconv,
        and a defractalize reads 1/16 of the Nz (the 16-row strip read it
        all: ResNet-50's logits, 64 KB of f32, 1,172 MTE2 cycles)."""
        frac = self.target.fractal
        row_blocks = self.target.blocks(frac * g.e)  # one block row: 16 elements
        gap = self.target.blocks((frac - 1) * frac * g.e)  # the other 15 rows of a block
        span = (g.C1 - 1) * frac * frac + frac  # Nz elements from row 0 of block 0 to the last's
        zero = nir.index_const(0)
        if not forward:
            row = nir.alloc([g.Cp], g.element, "ub")
            copy("cce.copy_gm_to_ub", nir.subview(nz, [zero], [span]), self.view(row, 0),
                 g.C1, row_blocks, gap, 0)
            self.store_rows(g, nd, zero, row, 1, True, 0)
            return
        for first, blocks, buf in self.one_row_chunks(g):
            n = blocks * frac  # row elements of this chunk: its Nz is blocks whole fractals
            start = zero if first == 0 else first * frac  # (the first as before the chunks)
            copy("cce.copy_gm_to_ub", nir.subview(nd, [start], [n]),
                 self.view(buf, 0, (blocks - 1) * frac * frac + frac), blocks, row_blocks, 0, gap)
            self.copy_contiguous("cce.copy_ub_to_gm", buf, 0, nz, first * frac * frac,
                                 blocks * self.target.fractal_bytes(g.e), g.e)

    def one_row_chunks(self, g: Geometry) -> list[tuple[int, int, ir.Value]]:
        """(first column block, column blocks, UB buffer) per chunk of a row's
        fractalize: its whole Nz when it fits UB, else runs of column blocks
        of half of UB each, in two buffers taken in turn (a chunk's load
        overlaps the store before it). Each buffer is zeroed once: the loads
        write row 0 of its fractals only."""
        frac_bytes = self.target.fractal_bytes(g.e)
        per_buf = g.C1 if g.C1 * frac_bytes <= self.target.capacity("ub") else \
            self.target.capacity("ub") // 2 // frac_bytes
        bufs = []
        for _ in range(min(2, -(-g.C1 // per_buf))):
            buf = nir.alloc([per_buf * self.target.fractal ** 2], g.element, "ub")
            self.zero(buf, 0, per_buf * frac_bytes, g.e)
            bufs.append(buf)
        return [(first, min(per_buf, g.C1 - first), bufs[i % len(bufs)])
                for i, first in enumerate(range(0, g.C1, per_buf))]

    def row_run(self, op: ir.Operation, g: Geometry) -> tuple[int, ir.Value] | None:
        """(row blocks, first row block) of this core's run when npu-split-cores
        cut the matrix's row blocks over the cores (`nir.CORE_PART_ATTR`)."""
        found = core_part(op, "npu-lower-fractalize")
        if found is None:
            return None
        parts, part = found
        frac = self.target.fractal
        if (g.batch != 1 or g.R1 % parts or g.R != g.R1 * frac
                or g.row_bytes % self.target.vector_block_bytes):
            raise PassError(f"npu-lower-fractalize: {nir.CORE_PART_ATTR}: {parts} runs of row "
                            f"blocks need one matrix of whole 16-row blocks and 32-byte rows, "
                            f"got {g.batch} x {g.R} x {g.C}", op)
        with op.location, ir.InsertionPoint(op):
            return g.R1 // parts, index_mul(part, g.R1 // parts)

    def emit_run(self, g: Geometry, nd: ir.Value, nz: ir.Value, t: int, forward: bool,
                 blocks: int, first: ir.Value) -> None:
        """Strips of `t` row blocks (then the rest) over one core's run of
        `blocks` row blocks from row block `first`: no padding rows, no
        end-of-tensor window (whole row blocks of 32-byte rows)."""
        p = nir.index_const(0)
        full, rest = divmod(blocks, t)
        for start, count, tt in ((0, full, t), (full * t, 1 if rest else 0, rest)):
            if count:
                self.emit_range(start, count, tt, lambda i, tt=tt: self.emit_strip(
                    g, nd, nz, p, arith.AddIOp(first, i).result, tt, forward, None, False))

    def batch_segments(self, g: Geometry) -> list[tuple[tuple[int, int], bool]]:
        """Batch elements before the last (a loop) and the last (peeled: it
        holds the tensor's end)."""
        segs = []
        if self.first_end_row(g) == g.R:  # no end window: no need to peel
            return [((0, g.batch), True)]
        if g.batch > 1:
            segs.append(((0, g.batch - 1), False))
        segs.append(((g.batch - 1, 1), True))
        return segs

    def strip_plan(self, g: Geometry, t: int, op: ir.Operation) -> list[tuple[int, int, int, bool]]:
        """(first row block, strip count, row blocks per strip, is the last strip).

        Full strips, then the tail strip; the last strip is always peeled and
        extended backwards (overlapping) until it holds every row the
        end-of-tensor window touches."""
        full, rest = divmod(g.R1, t)
        strips = [(i * t, t) for i in range(full)]
        if rest:
            strips.append((full * t, rest))
        rb_last = strips[-1][0]
        first_row = self.first_end_row(g)
        frac = self.target.fractal
        while rb_last * frac > first_row and rb_last > 0:
            rb_last -= 1
        # Earlier strips the last one now overlaps are merged into it.
        body = [s for s in strips[:-1] if s[0] + s[1] <= rb_last]
        rb_last = body[-1][0] + body[-1][1] if body else 0
        t_last = g.R1 - rb_last
        if t_last != strips[-1][1]:
            per_block = 2 * frac * g.Cp * g.e
            if t_last * per_block + self.scratch_bytes(g) > self.target.capacity("ub"):
                raise PassError("the last strip cannot hold the rows of the tensor's final "
                                "32-byte window within UB", op)
        plan = []
        if t_last == t and g.R == g.R1 * frac and first_row == g.R:
            # Whole last strip and no end window: it joins the loop.
            return [(0, len(body) + 1, t, False)]
        if body:  # all full strips from row block 0: one loop
            plan.append((0, len(body), t, False))
        plan.append((rb_last, 1, t_last, True))
        return plan

    def first_end_row(self, g: Geometry) -> int:
        """First row (of the last batch element) that needs the end window."""
        unit = self.target.vector_block_bytes
        if g.row_bytes % unit == 0:
            return g.R  # whole-block rows never pass the end
        total = g.R * g.C * g.e
        L = -(-g.row_bytes // unit)
        first = g.R
        for r in range(g.R - 1, -1, -1):
            reads_past = r * g.row_bytes + L * unit > total
            in_window = (r + 1) * g.row_bytes > total - unit
            if reads_past or in_window:
                first = r
            else:
                break
        return first

    # ------------------------------------------------------------------ emission helpers

    def emit_range(self, start: int, count: int, step: int, body: Callable[[ir.Value], None]) -> None:
        """scf.for over `count` steps; one step is a one-trip loop so that its
        body scopes the buffers it allocates (memory planning)."""
        loop = nir.for_loop(start, start + count * step, step)
        with ir.InsertionPoint(loop.body):
            body(loop.induction_variable)
            nir.yield_()

    # ------------------------------------------------------------------ one strip

    def emit_strip(self, g: Geometry, nd: ir.Value, nz: ir.Value, p: ir.Value, rb: ir.Value,
                   t: int, forward: bool, rb_static: int | None, final: bool) -> None:
        """Rows [16*rb, 16*rb + 16t) of batch element p. Only the last strip
        of a matrix may have padding rows; it is peeled and its first row
        block `rb_static` is known. The `final` one (last strip of the last
        batch element) also owns the tensor's end."""
        frac = self.target.fractal
        e, unit = g.e, self.target.vector_block_bytes
        fb = self.target.fractal_bytes(e)
        h = frac * t
        hv = min(h, g.R - rb_static * frac) if rb_static is not None else h
        et = g.element
        strip = nir.alloc([h * g.Cp], et, "ub")
        tmp = nir.alloc([h * g.Cp], et, "ub")
        bufs = {"strip": strip, "tmp": tmp}
        row0 = index_add(index_mul(p, g.R * g.C), 0)
        row0 = arith.AddIOp(row0, index_mul(rb, frac * g.C)).result  # ND element of the first row
        nz0 = arith.AddIOp(index_mul(p, g.C1 * g.R1 * frac * frac),
                           index_mul(rb, frac * frac)).result  # Nz element of block (0, rb)
        aligned_rows = g.row_bytes % unit == 0
        if forward:
            if not aligned_rows or g.C != g.Cp or hv < h:
                self.zero(strip, 0, h * g.Cp * e, e)
            self.load_rows(g, nd, row0, strip, hv, final, rb_static)
            for q in forward_passes(t, g.C1, e)[:1]:
                self.vnchw(q, bufs, e)
            if not aligned_rows:
                self.zero_pad_columns(g, tmp, t)
            for q in forward_passes(t, g.C1, e)[1:]:
                self.vnchw(q, bufs, e)
            # out[c][t*16 rows] -> Nz column block c, row blocks rb..rb+t.
            src = self.view(strip, 0)
            dst = nir.subview(nz, [nz0], [self.nz_span(g, t)])
            copy("cce.copy_ub_to_gm", src, dst, g.C1, self.target.blocks(t * fb), 0,
                      self.target.blocks((g.R1 - t) * fb))
        else:
            src = nir.subview(nz, [nz0], [self.nz_span(g, t)])
            copy("cce.copy_gm_to_ub", src, self.view(strip, 0), g.C1, self.target.blocks(t * fb),
                      self.target.blocks((g.R1 - t) * fb), 0)
            for q in inverse_passes(t, g.C1, e):
                self.vnchw(q, bufs, e)
            self.store_rows(g, nd, row0, strip, hv, final, rb_static)

    def nz_span(self, g: Geometry, t: int) -> int:
        """Elements of the Nz tensor a strip copy touches from block (0, rb):
        C1 bursts of t blocks, R1 blocks apart."""
        frac = self.target.fractal
        return ((g.C1 - 1) * g.R1 + t) * frac * frac
