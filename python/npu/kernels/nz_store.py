"""Writing a chunk of rows held in UB (row-major, `n` columns) to a GM
tensor in the cube's Nz layout [n/16, R1, 16, 16]: the Nz stores of fused
row groups (`npu-fuse` absorbs a fractalize of a group's result), emitted
by `npu-lower-fused`.

In Nz, the rows of one column block are contiguous whatever row a chunk
starts on: rows [row0, row0 + h) of column block j are h * 16 elements from
(j * R1 * 16 + row0) * 16. So a chunk is gathered in UB into that order,
[n/16][h][16], by vector copies whose blocks step down the rows (block
stride: the row pitch) and whose repeats step across the column blocks (8
rows per instruction, n/16 repeats; f32 rows of a column block are two
blocks, copied as two halves), then leaves as one copy of n/16 bursts of h
rows each. No alignment of the chunk to 16-row blocks is needed, so the
group keeps its chunk size. The padding rows of the last row block are
written with zeros once (`zero_padding`), as the fractalize does."""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.vector.recipes import Compute
from npu.kernels.cce_build import View, copy, lin, sub
from npu.kernels.vector_compute import emit
from npu.target import Target

ROWS_PER_GATHER = 8  # blocks of one vector repeat


class NzStore:
    """Stores of rows of one [rows, n] result into the flat Nz tensor `nz`."""

    def __init__(self, target: Target, nz: ir.Value, rows: int, n: int, elem: str,
                 block_rows: int | None = None, base=0, pads: bool = False):
        """`block_rows`, `base`: the rows are a run of whole row blocks (or
        of rows of one row block) of a taller Nz tensor (one core's,
        npu-split-cores) whose column blocks are `block_rows` row blocks
        long; `base`: the run's first element. `pads`: the run's last row
        block ends the tensor (a peeled group's rest, `split_cores.peel`):
        its rows past `rows` are padding, not another core's."""
        self.t, self.nz, self.rows, self.n, self.elem = target, nz, rows, n, elem
        self.e = nir.element_bytes(elem)
        f = target.fractal
        self.r1, self.c1 = -(-rows // f), n // f
        self.pitch = block_rows or self.r1  # row blocks between column blocks
        self.base = base
        self.run = block_rows is not None and not pads  # its padding rows are other cores' rows
        self.per_piece = f * self.e // target.vector_block_bytes  # blocks of a row's 16 columns
        # Rows per gather: the destination's repeat stride is the rows' blocks.
        most = target.vector_max_stride // self.per_piece
        self.most_rows = max(ROWS_PER_GATHER, most - most % ROWS_PER_GATHER)

    def blocks(self, elements: int) -> int:
        return elements * self.e // self.t.vector_block_bytes

    def zero_padding(self) -> None:
        """Zeros in the rows past `rows` of the last row block, every column block."""
        f = self.t.fractal
        pad = self.r1 * f - self.rows
        if not pad or self.run:  # a tensor cut by rows has whole row blocks: no padding
            return
        lanes = self.t.vector_bytes // self.e
        repeat = -(-pad * f // lanes)
        zeros = nir.alloc([repeat * lanes], self.elem, "ub")
        nir.create_op("cce.vdup", [zeros], repeat=repeat, mask=lanes, dst_blk_stride=1,
                      dst_rep_stride=self.t.vector_bytes // self.t.vector_block_bytes, scalar=0.0)
        for j in range(self.c1):
            copy("cce.copy_ub_to_gm", sub(zeros, 0, pad * f),
                 sub(self.nz, lin((self.base, 1), ((j * self.pitch * f + self.rows) * f, 1)),
                     pad * f), 1, self.blocks(pad * f))

    def store(self, buf: ir.Value, row0: int | ir.Value, valid: int,
              pending: list | None = None, cast: tuple[Compute, int] | None = None,
              into: ir.Value | None = None) -> None:
        """Rows [row0, row0 + valid) held in `buf` (valid * n elements).
        With `pending`, the gathers are emitted here and the copies to GM
        appended to it (as callables) for the caller to emit later.
        `cast` = (one vconv, the element bytes of `buf`): `buf` holds the
        rows before a cast to this tensor's type
        (`npu.costmodel.vector.nz_limits.cast_gather_limits`), which is done
        by the gather itself: one vconv per repeat of columns writes each
        lane straight to its Nz place (the rows' blocks of a column block
        `h` apart), so the cast costs no pass of its own and no row-major
        buffer. `into`: the buffer of the gathered rows (at
        least `valid * n` elements; by default one of their own)."""
        f, n = self.t.fractal, self.n
        step = min(valid, self.most_rows)
        out = nir.alloc([step * n], self.elem, "ub") if into is None else into
        for r0 in range(0, valid, step):
            h = min(step, valid - r0)
            if into is not None:
                out = sub(into, r0 * n, h * n)
            elif pending is not None and r0:  # each piece its own buffer: its copy comes later
                out = nir.alloc([step * n], self.elem, "ub")
            if cast is not None:
                self.cast_gather(buf, out, r0, h, *cast)
            else:
                self.gather(buf, out, r0, h)
            first = lin((row0, f), (r0 * f, 1), (self.base, 1))
            span = ((self.c1 - 1) * self.pitch * f + h) * f

            def leave(out=out, h=h, first=first, span=span) -> None:
                copy("cce.copy_ub_to_gm", sub(out, 0, self.c1 * h * f), sub(self.nz, first, span),
                     self.c1, self.blocks(h * f), 0, self.blocks((self.pitch * f - h) * f))

            if pending is None:
                leave()
            else:
                pending.append(leave)

    def gather(self, buf: ir.Value, out: ir.Value, r0: int, h: int) -> None:
        """Rows [r0, r0 + h) of `buf` copied into `out` in Nz order."""
        f, n, pp = self.t.fractal, self.n, self.per_piece
        lanes_per_block = self.t.vector_block_bytes // self.e
        gather = Compute("copy")
        for g0 in range(0, h, ROWS_PER_GATHER):
            k = min(ROWS_PER_GATHER, h - g0)
            for half in range(pp):
                src = sub(buf, (r0 + g0) * n + half * lanes_per_block,
                          (k - 1) * n + (self.c1 - 1) * f + lanes_per_block)
                dst = sub(out, g0 * f + half * lanes_per_block,
                          ((self.c1 - 1) * h + k - 1) * f + lanes_per_block)
                emit(gather, View(dst, pp, h * pp), [View(src, self.blocks(n), pp)],
                             self.c1, k * lanes_per_block)

    def cast_gather(self, buf: ir.Value, out: ir.Value, r0: int, h: int, compute: Compute,
                    src_es: int) -> None:
        """Rows [r0, r0 + h) of `buf` (elements of `src_es` bytes) converted
        into `out` in Nz order [n/16][h][16]: repeat r is row r0 + r (source
        repeat stride the row pitch), lane e of a repeat lands in column
        block e // 16 of its group (destination block stride h)."""
        f, n, g = self.t.fractal, self.n, self.t.vector_block_bytes
        lanes = self.t.vector_bytes // src_es
        for j0 in range(0, n, lanes):
            mask = min(lanes, n - j0)
            src = sub(buf, (r0 * n) + j0, (h - 1) * n + mask)
            dst = sub(out, (j0 // f) * h * f, ((mask // f - 1) * h + h - 1) * f + f)
            emit(compute, View(dst, h, 1), [View(src, 1, n * src_es // g)], h, mask)
