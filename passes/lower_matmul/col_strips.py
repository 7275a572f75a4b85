"""The column-strips variant of `npu-lower-matmul`'s pipelined schedule
(`PipelinedPlan.col_strips`; why and when: `npu.costmodel.matmul.col_strips`),
the mirror of `row_strips`:

  B's strip in parts b_0 .. b_P-1, A's parts in turns a_0 .. a_T-1 (L1,
  live across the loop); C pieces in L0C
  for t in 0 .. tiles (column-major: x = t % rows, y = t / rows):
    for each part p (unrolled):
      if x == 0: B part p of column y GM -> b_p
      A part p of row x GM -> a_(p % T)
      the part's mads (`chunk_mads`; the first part overwrites C)
    drain the C pieces (with the epilogue, staged as `pipelined_loop` does)

Each C element still sums its reduction in the one tile's order, so the
result is bit for bit the same. The parts are static buffers, so
npu-insert-sync's flags are per part: a tile's first mads wait for its
first parts only, and its drain overlaps the next tile's copies and mads."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, scf

from npu import ir as nir
from npu.costmodel.matmul.col_strips import a_turns
from npu.passes.lower_matmul.blocks import Operands
from npu.passes.lower_matmul.plan import PipelinedPlan


class ColStripsSchedule:
    """Mixed into `LowerMatmul` with `PipelinedSchedule` (its drains and
    `chunk_mads`)."""

    def col_strips_loop(self, ops: Operands, plan: PipelinedPlan,
                        c_pieces: list[ir.Value]) -> None:
        frac = self.target.fractal
        mb, kb, chunk = plan.mb, plan.kb, plan.chunk
        mbp, khb = plan.piece_rows, plan.piece_cols
        parts = ops.N1 // chunk
        rows = ops.M1 // mb
        tiles = rows * (ops.K1 // kb)
        inner_a = nir.memref_shape(ops.a)[-2:]
        inner_b = nir.memref_shape(ops.b)[-2:]
        # The strip's parts at the function's entry (an alloc lives from its
        # first to its last use wherever it sits): npu-prefetch may then clone
        # their first copies into the previous op without moving them.
        with ir.InsertionPoint.at_block_begin(_function_block()):
            b_parts = [nir.alloc([kb, chunk] + inner_b, ops.in_type, "l1")
                       for _ in range(parts)]
        a_slots_l1 = [nir.alloc([chunk, mb] + inner_a, ops.in_type, "l1")
                      for _ in range(a_turns(mb, kb, ops.N1, chunk, self.target))]
        ub_budget = self.target.capacity("ub") // (2 * plan.pieces)
        loop = nir.for_loop(0, tiles, 1)
        with ir.InsertionPoint(loop.body):
            tile = loop.induction_variable
            row = arith.RemUIOp(tile, nir.index_const(rows)).result
            x = arith.MulIOp(row, nir.index_const(mb)).result
            y = arith.MulIOp(arith.DivUIOp(tile, nir.index_const(rows)).result,
                             nir.index_const(kb)).result
            col_start = arith.CmpIOp(arith.CmpIPredicate.eq, row, nir.index_const(0)).result
            last = arith.ConstantOp(ir.IntegerType.get_signless(1), 1).result
            a_slots, b_slots = self.l0_slots(ops, plan, a_slots_l1[0], b_parts[0])
            staged = (nir.alloc([khb, mbp, frac, frac], self.epilogue.drain_type, "ub")
                      if self.stages_drain(tiles, tiles * mb * kb * ops.N1, mbp, khb)
                      else None)
            landings = self.landing_slots(staged, mbp, khb)

            def drain(h: int) -> None:
                self.drain_piece(ops, plan, c_pieces[h], staged, last, x, y, h, ub_budget,
                                 landings[h % 2] if landings else None)

            def no_drain(_h: int) -> None:
                pass

            step = 0
            for p in range(parts):
                s0 = nir.index_const(p * chunk)
                # The GM view in the loop body, the copy alone under the if
                # (the form npu-prefetch clones from).
                source = self.nz_source(ops, ops.b, y, s0, kb, chunk)
                copy = scf.IfOp(col_start, [], has_else=False)
                with ir.InsertionPoint(copy.then_block):
                    self.copy_nz(source, ops.b_pitch, b_parts[p])
                    scf.YieldOp([])
                a1 = a_slots_l1[p % len(a_slots_l1)]
                self.copy_nz(self.nz_source(ops, ops.a, s0, x, chunk, mb), ops.a_pitch, a1)
                step = self.chunk_mads(plan, a1, None, b_parts[p], chunk, a_slots, b_slots,
                                       c_pieces, step, p > 0,
                                       drain if p == parts - 1 else no_drain)
            nir.yield_()


def _function_block() -> ir.Block:
    """The body of the function around the insertion point."""
    op = ir.InsertionPoint.current.block.owner.operation
    func = op if op.name == "func.func" else nir.enclosing_function(op)
    return func.regions[0].blocks[0]
