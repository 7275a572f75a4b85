"""The stem's max pool on its conv's drain (`npu.costmodel.conv.stem_pool`):
each drained tile (n1 Cout blocks of a band's rows, f16, in UB) is pooled
on the vector unit and only the pooled rows are stored.

Along the columns first, every row of the tile at once (its blocks' rows
lie end to end, Wo being whole fractals): out column j is the max of
columns 2j and 2j + 1 (block stride 2), then of column 2j - 1 for j >= 1
(the row's first block is redone from its two columns), into buffers of
a band's rows per Cout block taken band by band in turn (`row_buffers`).
Then each pooled row p whose last row (2p + 1) the band drains is the max
of rows 2p - 1, 2p and 2p + 1, each in its band's buffer, and is stored.
"""

from __future__ import annotations

from functools import partial

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv.stem_pool import BLOCK, BUDGET_ROWS, pooled_rows, row_buffers, ub_bytes
from npu.kernels.cce_build import copy_bursts

PER_REPEAT = 8  # blocks of one vector repeat
FULL = PER_REPEAT * BLOCK  # the mask of a full repeat (f16 lanes)


def _vmax(views: list[tuple[ir.Value, int, int, int, int]], repeat: int, mask: int,
          max_repeat: int) -> None:
    """cce.vmax; each operand (flat buffer, first block, block stride,
    repeat stride, blocks a repeat): dst, src0, src1; in runs of at most
    `max_repeat` repeats (the target's repeat field)."""
    for r0 in range(0, repeat, max_repeat):
        count = min(max_repeat, repeat - r0)
        operands, attrs = [], {"repeat": count, "mask": mask}
        for tag, (buf, at, blk, rep, width) in zip(("dst", "src0", "src1"), views):
            extent = ((count - 1) * rep + (width - 1) * blk + 1) * BLOCK
            operands.append(nir.subview(buf, [(at + r0 * rep) * BLOCK], [extent]))
            attrs[f"{tag}_blk_stride"], attrs[f"{tag}_rep_stride"] = blk, rep
        nir.create_op("cce.vmax", operands, **attrs)


class DrainPool:
    """Mixin of `ConvKernel` (its `target`, `s`, `t`, `dest` and `pool`)."""

    def setup_pool(self) -> int:
        """The pool's buffers, live for the whole conv; returns the bytes
        beyond those the conv's budget set aside (`stem_pool.BUDGET_ROWS`)."""
        s, rows = self.s, self.t.rows
        self.half = s.wo // 2
        self.col_rows = [nir.alloc([s.co1 * rows * self.half * BLOCK], "f16", "ub")
                         for _ in range(row_buffers(rows))]
        self.pooled = [nir.alloc([s.co1, pooled_rows(rows) * self.half * BLOCK], "f16", "ub")
                       for _ in range(2)]
        return ub_bytes(s.co1, rows, s.wo) - ub_bytes(s.co1, BUDGET_ROWS, s.wo)

    def pool_store(self, ub: ir.Value, n: int, co0: int, n1: int, ho0: int, rows: int,
                   m1: int) -> None:
        """Pool the drained tile `ub` (blocks co0..co0+n1 of output rows
        ho0..ho0+rows) and store the pooled rows it completes."""
        assert isinstance(ho0, int), "the pool's bands are straight code (`emit_rows`)"
        half, big = self.half, self.t.rows
        vmax = partial(_vmax, max_repeat=self.target.max_repeat)
        band = ho0 // big
        ring = self.col_rows
        cols = ring[band % len(ring)]
        x = nir.flatten_memref(ub)
        # the tile's rows are end to end across its blocks; the buffer's too when the band is whole
        runs = [(0, co0 * big * half, n1 * rows)] if rows == big else \
            [(j * m1 * BLOCK, (co0 + j) * big * half, rows) for j in range(n1)]
        for xo, co, count in runs:
            total = count * half
            vmax([(cols, co, 1, PER_REPEAT, PER_REPEAT), (x, xo, 2, 2 * PER_REPEAT, PER_REPEAT),
                  (x, xo + 1, 2, 2 * PER_REPEAT, PER_REPEAT)], total // PER_REPEAT, FULL)
            full, rest = divmod(total - 1, PER_REPEAT)
            for first, repeat, width in ((0, full, PER_REPEAT), (full, 1 if rest else 0, rest)):
                if repeat:
                    at = co + 1 + first * PER_REPEAT
                    vmax([(cols, at, 1, PER_REPEAT, width), (cols, at, 1, PER_REPEAT, width),
                          (x, xo + 1 + 2 * first * PER_REPEAT, 2, 2 * PER_REPEAT, width)],
                         repeat, width * BLOCK)
            # each row's first column: the max of its columns 0 and 1 only
            vmax([(cols, co, 1, half, 1), (x, xo, 1, 2 * half, 1), (x, xo + 1, 1, 2 * half, 1)],
                 count, BLOCK)
        done = [p for p in range(self.s.ho // 2) if ho0 <= 2 * p + 1 < ho0 + rows]
        if not done:
            return
        out2 = self.pooled[band % 2]
        out = nir.flatten_memref(out2)
        per_co = pooled_rows(big)

        def row(co: int, r: int) -> tuple[ir.Value, int]:  # (every band before is whole)
            return ring[r // big % len(ring)], (co * big + r % big) * half

        for k, p in enumerate(done):
            for co in range(co0, co0 + n1):
                srcs = [row(co, r) for r in (2 * p - 1, 2 * p, 2 * p + 1) if r >= 0]
                dst = (out, (co * per_co + k) * half, 1, PER_REPEAT, PER_REPEAT)
                step = lambda src: (*src, 1, PER_REPEAT, PER_REPEAT)  # noqa: E731
                vmax([dst, step(srcs[0]), step(srcs[1])], half // PER_REPEAT, FULL)
                if len(srcs) == 3:
                    vmax([dst, dst, step(srcs[2])], half // PER_REPEAT, FULL)
        ho2, count = self.s.ho // 2, len(done)
        dst = nir.subview(self.dest, [n, co0, done[0], 0, 0], [1, n1, count, half, BLOCK])
        src = nir.subview(out2, [co0, 0], [n1, count * half * BLOCK])
        copy_bursts("cce.copy_ub_to_gm", src, dst, n1, count * half,
                    src_gap=(per_co - count) * half, dst_gap=(ho2 - count) * half)
