"""`npu-lower-attention` on a core's flat run of (head, query block) units
(`npu.costmodel.attention.flat_runs`): npu-split-cores cut the heads' row
blocks, in order, into equal runs over the cores, so a run may end one head
and start the next.

The core's first unit g0 = run x n gives its first head (g0 / S1) and block
(g0 mod S1); the shape of its run (`flat_runs.variants`) is picked at run
time by that block (`scf.if`): one segment from it, or the head's last
blocks then the next head's first. Each segment is `head_tiles` on one head
(its tile the tallest that divides the segment): its K and V loaded once.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, scf

from npu import ir as nir
from npu.costmodel.attention import flat_runs as flat
from npu.kernels.cce_build import index_mul, lin


class FlatRuns:
    """Mixed into the kernel with `HeadTiles` (the same attributes)."""

    def flat_runs(self, runs: int, run: ir.Value) -> None:
        """This core's run (`run` of `runs`), segment by segment."""
        s1 = self.a.seq_blocks
        n = self.a.heads * s1 // runs
        first = index_mul(run, n)
        head = arith.DivUIOp(first, nir.index_const(s1)).result
        block = arith.RemUIOp(first, nir.index_const(s1)).result
        tile = self.qb

        def emit(v: flat.Variant) -> None:
            start = block if v.first is None else v.first
            for i, blocks in enumerate(v.lengths):
                self.qb = flat.segment_tile(tile, blocks)
                self.head_tiles(blocks, start if i == 0 else 0, heads=1,
                                head0=lin((head, 1), (i, 1)))
            self.qb = tile

        def chain(shapes: list[flat.Variant]) -> None:
            if len(shapes) == 1:
                emit(shapes[0])
                return
            is_first = arith.CmpIOp(arith.CmpIPredicate.eq, block,
                                    nir.index_const(shapes[0].first)).result
            branch = scf.IfOp(is_first, [], has_else=True)
            with ir.InsertionPoint(branch.then_block):
                emit(shapes[0])
                scf.YieldOp([])
            with ir.InsertionPoint(branch.else_block):
                chain(shapes[1:])
                scf.YieldOp([])

        chain(flat.variants(self.a.heads, s1, runs))
