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

from dataclasses import dataclass
from typing import Callable

from mlir import ir
from mlir.dialects import arith

from npu import ir as nir
from npu.cce_build import copy, index_add, index_mul
from npu.dialects.hivm import config_field
from npu.passes.base import Option, Pass, PassError, ub_fraction_option

# The plans below are written for the vnchwconv of dialects/README.md: 16 row
# pointers of one 32-byte block each (16 fp16 / 8 fp32), i.e. the target's
# fractal edge and block size; `lower` checks the target agrees.
ALGORITHMS = ("naive", "fill-ub")
VNCHW_ROWS = 16
VNCHW_BLOCK_BYTES = 32


@dataclass(frozen=True)
class Vnchw:
    """One vnchwconv: buffers are "strip" or "tmp", positions in 32-byte blocks."""

    src_buf: str
    src_block: int
    dst_buf: str
    dst_block: int
    repeat: int
    src_offsets: tuple[int, ...]
    dst_offsets: tuple[int, ...]
    src_rep: int
    dst_rep: int

    def inverted(self) -> "Vnchw":
        return Vnchw(self.dst_buf, self.dst_block, self.src_buf, self.src_block, self.repeat,
                     self.dst_offsets, self.src_offsets, self.dst_rep, self.src_rep)


def forward_passes(t: int, C1: int, elem_bytes: int) -> list[Vnchw]:
    """strip rows (pitch 16*C1 elements) -> Nz strip out[c][row][16] in the strip buffer."""
    if elem_bytes == 2:
        p1 = Vnchw("strip", 0, "tmp", 0, t * C1, tuple(a * t * C1 for a in range(16)),
                   tuple(range(16)), 1, 16)
        p2 = [Vnchw("tmp", b * C1 * 16, "strip", b, C1, tuple(range(16)),
                    tuple(a * t for a in range(16)), 16, 16 * t) for b in range(t)]
        return [p1] + p2
    H = 2 * C1  # 8-element pieces per row
    p1 = Vnchw("strip", 0, "tmp", 0, t * H, tuple(a * t * H for a in range(16)),
               tuple(range(16)), 1, 16)
    p2 = []
    for b in range(t):
        for half in (0, 1):
            dst = []
            for a in range(8):
                row = (half * 8 + a) * t
                dst += [2 * row, 2 * row + 1]
            p2.append(Vnchw("tmp", b * C1 * 32 + half, "strip", 2 * b, C1,
                            tuple(2 * i for i in range(16)), tuple(dst), 32, 32 * t))
    return [p1] + p2


def inverse_passes(t: int, C1: int, elem_bytes: int) -> list[Vnchw]:
    """Nz strip out[c][row][16] in the strip buffer -> strip rows."""
    if elem_bytes == 2:
        # The 2-byte vnchwconv is a plain transpose: swap roles, reverse order.
        return [p.inverted() for p in reversed(forward_passes(t, C1, 2))]
    q2, q1 = [], []
    for b in range(t):
        for half in (0, 1):
            # Rows a*t+b of column block c, elements half*8.. -> tmp[b][c][d][a].
            q2.append(Vnchw("strip", 2 * b + half, "tmp", b * C1 * 32 + half * 16, C1,
                            tuple(2 * a * t for a in range(16)), tuple(range(16)), 32 * t, 32))
            # tmp rows d, lanes a = half*8.. -> strip row a*t+b, column block c.
            dst = []
            for a in range(8):
                row = (half * 8 + a) * t * 2 * C1
                dst += [row, row + 1]
            q1.append(Vnchw("tmp", b * C1 * 32 + half, "strip", b * 2 * C1, C1,
                            tuple(2 * i for i in range(16)), tuple(dst), 32, 2))
    return q2 + q1


def split_repeats(p: Vnchw, max_repeat: int, max_rep_stride: int) -> list[Vnchw]:
    """`p` as instructions whose fields fit: at most `max_repeat` repeats,
    and repeat strides within their field; a stride that does not fit (a
    tall strip of narrow columns: 16 rows of t fractals) is replaced by one
    instruction per repeat, whose strides are then unused (0)."""
    if max(p.src_rep, p.dst_rep) > max_rep_stride:
        return [Vnchw(p.src_buf, p.src_block + r * p.src_rep, p.dst_buf,
                      p.dst_block + r * p.dst_rep, 1, p.src_offsets, p.dst_offsets, 0, 0)
                for r in range(p.repeat)]
    out = []
    for first in range(0, p.repeat, max_repeat):
        out.append(Vnchw(p.src_buf, p.src_block + first * p.src_rep, p.dst_buf,
                         p.dst_block + first * p.dst_rep, min(max_repeat, p.repeat - first),
                         p.src_offsets, p.dst_offsets, p.src_rep, p.dst_rep))
    return out


@dataclass(frozen=True)
class Geometry:
    """One fractalize/defractalize problem in elements and bytes."""

    batch: int
    R: int
    C: int
    e: int  # element bytes
    R1: int
    C1: int

    @property
    def Cp(self) -> int:  # UB row pitch in elements (whole column blocks)
        return self.C1 * VNCHW_ROWS

    @property
    def row_bytes(self) -> int:
        return self.C * self.e

    @property
    def total_bytes(self) -> int:
        return self.batch * self.R * self.C * self.e


class LowerFractalize(Pass):
    name = "npu-lower-fractalize"
    summary = "Lower ascend.fractalize/defractalize to cce (UB strips + vnchwconv)"
    handles = ("ascend.fractalize", "ascend.defractalize")
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
        if et not in ("f16", "f32") or nir.memref_element(nz) != et:
            raise PassError(f"fractalize needs f16 or f32 operands of one type, got "
                            f"{nir.memref_element(op.operands[0])} and "
                            f"{nir.memref_element(op.operands[1])}", op)
        nd_shape, nz_shape = nir.memref_shape(nd), nir.memref_shape(nz)
        if len(nd_shape) < 2:
            raise PassError(f"the ND operand needs at least 2 dimensions, got {nd.type}", op)
        R, C = nd_shape[-2:]
        lead = nd_shape[:-2]
        R1, C1 = -(-R // frac), -(-C // frac)
        want = lead + [C1, R1, frac, frac]
        if nz_shape != want:
            raise PassError(f"the Nz operand of a {'x'.join(map(str, nd_shape))} matrix must be "
                            f"{'x'.join(map(str, want))}, got {nz.type}", op)
        batch = 1
        for d in lead:
            batch *= d
        return Geometry(batch, R, C, nir.element_bytes(et), R1, C1)

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
        t = self.strip_rows_blocks(g, op)
        forward = op.name == "ascend.fractalize"
        unit = self.target.vector_block_bytes
        if g.row_bytes % unit and g.batch > 1 and g.R * g.C * g.e < unit:
            # The end-of-tensor window must lie inside the last matrix.
            raise PassError(f"batches of matrices smaller than one {unit}-byte block whose rows "
                            f"are not whole blocks are not supported ({g.R}x{g.C} {'f16' if g.e == 2 else 'f32'}"
                            f" = {g.R * g.C * g.e} bytes)", op)
        src, dst = op.operands
        with op.location, ir.InsertionPoint(op):
            nd = nir.flatten_memref(src if forward else dst)
            nz = nir.flatten_memref(dst if forward else src)
            plan = self.strip_plan(g, t, op)
            for p_seg, last_batch in self.batch_segments(g):
                def per_batch(p: ir.Value, last: bool = last_batch) -> None:
                    for rb0, count, tt, is_last in plan:
                        def per_strip(rb: ir.Value, tt: int = tt, is_last: bool = is_last,
                                      rb0: int = rb0):
                            self.emit_strip(g, nd, nz, p, rb, tt, forward,
                                            rb0 if is_last else None, last and is_last)
                        self.emit_range(rb0, count, tt, per_strip)
                if g.batch == 1:
                    per_batch(nir.index_const(0))  # no batch loop for a single matrix
                else:
                    self.emit_range(p_seg[0], p_seg[1], 1, per_batch)
        op.erase()

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

    def view(self, flat: ir.Value, offset: int | ir.Value, length: int | None = None) -> ir.Value:
        """From element `offset` to the end of the flat buffer (or `length`)."""
        size = nir.memref_shape(flat)[0]
        if length is None:
            if not isinstance(offset, int):
                raise AssertionError("dynamic offsets need an explicit length")
            length = size - offset
        return nir.subview(flat, [offset], [length])

    def zero(self, buf: ir.Value, first_byte: int, nbytes: int, e: int) -> None:
        """vdup 0 over [first_byte, first_byte + nbytes) of a UB buffer (whole blocks)."""
        t = self.target
        rep_bytes = t.vector_bytes
        full, rest = divmod(nbytes, rep_bytes)
        pos = first_byte
        for first in range(0, full, t.max_repeat):
            rep = min(t.max_repeat, full - first)
            nir.create_op("cce.vdup", [self.view(buf, pos // e)], repeat=rep, mask=rep_bytes // e,
                          dst_blk_stride=1, dst_rep_stride=rep_bytes // t.vector_block_bytes,
                          scalar=0.0)
            pos += rep * rep_bytes
        if rest:
            nir.create_op("cce.vdup", [self.view(buf, pos // e)], repeat=1, mask=rest // e,
                          dst_blk_stride=1, dst_rep_stride=rep_bytes // t.vector_block_bytes,
                          scalar=0.0)

    def vnchw(self, p: Vnchw, bufs: dict[str, ir.Value], e: int) -> None:
        unit = self.target.vector_block_bytes // e  # elements per 32-byte block
        max_stride = min(config_field("vector", f).max
                         for f in ("src0_rep_stride", "dst_rep_stride"))
        for q in split_repeats(p, self.target.max_repeat, max_stride):
            nir.create_op("cce.vnchwconv",
                          [self.view(bufs[q.dst_buf], q.dst_block * unit),
                           self.view(bufs[q.src_buf], q.src_block * unit)],
                          repeat=q.repeat, src_offsets=list(q.src_offsets),
                          dst_offsets=list(q.dst_offsets), src_rep_stride=q.src_rep,
                          dst_rep_stride=q.dst_rep)

    def copy_contiguous(self, name: str, src: ir.Value, src_off, dst: ir.Value, dst_off,
                        nbytes: int, e: int) -> None:
        """One or more single-burst copies of `nbytes` (whole blocks)."""
        max_len = config_field("copy", "burst_len").max
        total = self.target.blocks(nbytes)
        unit = self.target.vector_block_bytes // e
        done = 0
        while done < total:
            n = min(max_len, total - done)
            s = self.view(src, index_add(src_off, done * unit) if not isinstance(src_off, int)
                          else src_off + done * unit, n * unit)
            d = self.view(dst, index_add(dst_off, done * unit) if not isinstance(dst_off, int)
                          else dst_off + done * unit, n * unit)
            copy(name, s, d, 1, n)
            done += n

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
        et = "f16" if e == 2 else "f32"
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

    # ------------------------------------------------------------------ rows

    def load_rows(self, g: Geometry, nd: ir.Value, row0: ir.Value, strip: ir.Value, hv: int,
                  final: bool, rb_static: int | None) -> None:
        e, unit = g.e, self.target.vector_block_bytes
        if g.row_bytes % unit == 0:
            if g.C == g.Cp:
                self.copy_contiguous("cce.copy_gm_to_ub", nd, row0, strip, 0, hv * g.row_bytes, e)
            else:
                src = nir.subview(nd, [row0], [hv * g.C])
                copy("cce.copy_gm_to_ub", src, self.view(strip, 0), hv,
                          self.target.blocks(g.row_bytes), 0, self.target.blocks((g.Cp - g.C) * e))
            return
        L = -(-g.row_bytes // unit)
        per_block = unit // e
        first_end = self.first_end_row(g) if final else g.R
        base_row = rb_static * VNCHW_ROWS if final else 0
        for i in range(hv):
            if final and base_row + i >= first_end:
                continue  # near the end: load_end_rows
            src = nir.subview(nd, [index_add(row0, i * g.C)], [L * per_block])
            copy("cce.copy_gm_to_ub", src, self.view(strip, i * g.Cp, L * per_block), 1, L)
        if final:
            self.load_end_rows(g, nd, strip, base_row, hv, first_end)

    def load_end_rows(self, g: Geometry, nd: ir.Value, strip: ir.Value, base_row: int, hv: int,
                      first_end: int) -> None:
        """Rows from `first_end` on: whole blocks that stay inside the tensor,
        then each row's remainder shifted out of the tensor's last 32 bytes."""
        e, unit = g.e, self.target.vector_block_bytes
        W = unit // e
        nd_len = nir.memref_shape(nd)[0]
        et = "f16" if e == 2 else "f32"
        window = nir.alloc([W], et, "ub")
        if nd_len >= W:
            copy("cce.copy_gm_to_ub", nir.subview(nd, [nd_len - W], [W]), window, 1, 1)
        else:
            # A tensor under one block: the read runs into its last granule's
            # padding (in bounds, uninitialised); a masked x1.0 keeps only the
            # tensor's own lanes (exact, -0.0 and NaN included) over zeros.
            raw = nir.alloc([W], et, "ub")
            copy("cce.copy_gm_to_ub", nd, raw, 1, 1)
            self.zero(window, 0, unit, e)
            rep_blocks = self.target.vector_bytes // unit
            nir.create_op("cce.vmuls", [window, raw], repeat=1, mask=nd_len, dst_blk_stride=1,
                          dst_rep_stride=rep_blocks, src_blk_stride=1, src_rep_stride=rep_blocks,
                          scalar=1.0)
        window_first = max(nd_len - W, 0)  # element index of the window in the flat tensor
        last_p = (g.batch - 1) * g.R * g.C
        for r in range(first_end, base_row + hv):
            i = r - base_row
            row_start = last_p + r * g.C
            inside = (nd_len - row_start) // W  # whole blocks of this row inside the tensor
            whole = min(inside, -(-g.C // W))
            if whole:
                copy("cce.copy_gm_to_ub", nir.subview(nd, [row_start], [whole * W]),
                          self.view(strip, i * g.Cp), 1, whole)
            if whole * W >= g.C:
                continue
            first_elem = row_start + whole * W
            count = min(W, row_start + g.C - first_elem)
            sources = [(window, first_elem - window_first + j) for j in range(count)]
            self.gather_piece(sources, W, et, self.view(strip, i * g.Cp + whole * W, W))

    def gather_piece(self, sources: list[tuple[ir.Value, int]], W: int, et: str,
                     dst: ir.Value) -> None:
        """dst[j] = sources[j] (buffer, element index) for j < len(sources):
        vnchwconv with all 16 row pointers on one piece broadcasts each of its
        elements to a piece of its own; a second vnchwconv picks one
        broadcast piece per lane; one block copy puts the result in place."""
        e = nir.element_bytes(et)
        frac = self.target.fractal
        per_piece_bcast = 1 if e == 2 else 2  # f32 broadcasts element u to pieces 2u, 2u+1
        pieces: dict[tuple[int, int], int] = {}
        order: list[tuple[ir.Value, int]] = []
        for buf, idx in sources:
            key = (id(buf), idx // W)
            if key not in pieces:
                pieces[key] = len(order)
                order.append((buf, idx // W))
        bcast = nir.alloc([len(order) * frac * W], et, "ub")
        for n, (buf, piece) in enumerate(order):
            nir.create_op("cce.vnchwconv", [self.view(bcast, n * frac * W), self.view(buf, piece * W, W)],
                          repeat=1, src_offsets=[0] * frac, dst_offsets=list(range(frac)),
                          src_rep_stride=0, dst_rep_stride=0)
        ptrs = []
        for j in range(frac):
            buf, idx = sources[j] if j < len(sources) else sources[0]
            n = pieces[(id(buf), idx // W)]
            ptrs.append(n * frac + (idx % W) * per_piece_bcast)
        picked = nir.alloc([frac * W], et, "ub")
        nir.create_op("cce.vnchwconv", [picked, self.view(bcast, 0)], repeat=1,
                      src_offsets=ptrs, dst_offsets=list(range(frac)), src_rep_stride=0,
                      dst_rep_stride=0)
        copy("cce.copy_ub_to_ub", self.view(picked, 0, W), dst, 1, 1)

    def zero_pad_columns(self, g: Geometry, tmp: ir.Value, t: int) -> None:
        """After pass 1 the columns C.. of the last column block are rows of
        tmp[b][C1-1]: overwrite them with zeros (they may hold the next row)."""
        rem = g.C % VNCHW_ROWS
        if rem == 0:
            return
        row_bytes = VNCHW_ROWS * g.e  # one tmp row: the 16 lanes a
        unit_bytes = VNCHW_ROWS * row_bytes  # one (b, c) unit
        for b in range(t):
            first = (b * g.C1 + g.C1 - 1) * unit_bytes + rem * row_bytes
            self.zero(tmp, first, (VNCHW_ROWS - rem) * row_bytes, g.e)

    def store_rows(self, g: Geometry, nd: ir.Value, row0: ir.Value, strip: ir.Value, hv: int,
                   final: bool, rb_static: int | None) -> None:
        e, unit = g.e, self.target.vector_block_bytes
        if g.row_bytes % unit == 0:
            if g.C == g.Cp:
                self.copy_contiguous("cce.copy_ub_to_gm", strip, 0, nd, row0, hv * g.row_bytes, e)
            else:
                dst = nir.subview(nd, [row0], [hv * g.C])
                copy("cce.copy_ub_to_gm", self.view(strip, 0), dst, hv,
                          self.target.blocks(g.row_bytes), self.target.blocks((g.Cp - g.C) * e), 0)
            return
        L = -(-g.row_bytes // unit)
        W = unit // e
        first_end = self.first_end_row(g) if final else g.R
        base_row = rb_static * VNCHW_ROWS if final else 0
        nd_len = nir.memref_shape(nd)[0]
        last_p = (g.batch - 1) * g.R * g.C
        for i in range(hv):
            r = base_row + i
            if final and r >= first_end:
                # Whole blocks that stay inside the tensor; the rest goes with the window.
                row_start = last_p + r * g.C
                whole = min((nd_len - row_start) // W, L)
                if whole:
                    copy("cce.copy_ub_to_gm", self.view(strip, i * g.Cp, whole * W),
                              nir.subview(nd, [row_start], [whole * W]), 1, whole)
                continue
            dst = nir.subview(nd, [index_add(row0, i * g.C)], [L * W])
            copy("cce.copy_ub_to_gm", self.view(strip, i * g.Cp, L * W), dst, 1, L)
        if final and first_end < g.R:
            et = "f16" if e == 2 else "f32"
            sources = []
            first = max(nd_len - W, 0)
            for f in range(first, min(first + W, nd_len)):
                r, col = divmod(f - last_p, g.C)
                sources.append((strip, (r - base_row) * g.Cp + col))
            window = nir.alloc([W], et, "ub")
            self.gather_piece(sources, W, et, window)
            # A tensor under one block is written whole, into its last
            # granule's padding (in bounds; padding is not part of the value).
            dst = nir.subview(nd, [first], [W]) if nd_len >= W else nd
            copy("cce.copy_ub_to_gm", window, dst, 1, 1)
