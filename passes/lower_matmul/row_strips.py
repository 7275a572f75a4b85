"""The row-strips variant of `npu-lower-matmul`'s pipelined schedule
(`PipelinedPlan.row_strips`; why and when: `npu.costmodel.matmul.row_strips`):

  A's strip in parts a_0 .. a_P-1, B's parts in turns b_0 .. b_T-1 (L1,
  live across the loop); C pieces in L0C
  for t in 0 .. tiles (row-major: x = t / cols, y = t % cols):
    for each part p (unrolled):
      if y == 0: A part p of row x GM -> a_p
      B part p of column y GM -> b_(p % T)
      the part's mads (`chunk_mads`; the first part overwrites C)
    drain the C pieces

The parts are static buffers, so npu-insert-sync's flags are per part: the
first mads of a tile wait for its first part only, and the copy of the next
row's part p waits only for this row's L0A loads of part p."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, scf

from npu import ir as nir
from npu.costmodel.matmul.row_strips import b_turns
from npu.passes.lower_matmul.blocks import Operands
from npu.passes.lower_matmul.plan import PipelinedPlan


class RowStripsSchedule:
    """Mixed into `LowerMatmul` with `PipelinedSchedule` (its drains and
    `chunk_mads`)."""

    def row_strips_loop(self, ops: Operands, plan: PipelinedPlan,
                        c_pieces: list[ir.Value]) -> None:
        mb, kb, chunk = plan.mb, plan.kb, plan.chunk
        parts = ops.N1 // chunk
        cols = ops.K1 // kb
        tiles = (ops.M1 // mb) * cols
        inner_a = nir.memref_shape(ops.a)[-2:]
        inner_b = nir.memref_shape(ops.b)[-2:]
        a_parts = [nir.alloc([chunk, mb] + inner_a, ops.in_type, "l1") for _ in range(parts)]
        b_slots_l1 = [nir.alloc([kb, chunk] + inner_b, ops.in_type, "l1")
                      for _ in range(b_turns(mb, kb, ops.N1, chunk, self.target))]
        ub_budget = self.target.capacity("ub") // (2 * plan.pieces)
        loop = nir.for_loop(0, tiles, 1)
        with ir.InsertionPoint(loop.body):
            tile = loop.induction_variable
            col = arith.RemUIOp(tile, nir.index_const(cols)).result
            x = arith.MulIOp(arith.DivUIOp(tile, nir.index_const(cols)).result,
                             nir.index_const(mb)).result
            y = arith.MulIOp(col, nir.index_const(kb)).result
            row_start = arith.CmpIOp(arith.CmpIPredicate.eq, col, nir.index_const(0)).result
            last = arith.ConstantOp(ir.IntegerType.get_signless(1), 1).result
            a_slots, b_slots = self.l0_slots(ops, plan, a_parts[0], b_slots_l1[0])

            # Row strips are chosen only for matmuls without an epilogue
            # (`consider_row_strips`): each piece drains straight, unstaged.
            def drain(h: int) -> None:
                self.drain_piece(ops, plan, c_pieces[h], None, last, x, y, h, ub_budget)

            def no_drain(_h: int) -> None:
                pass

            step = 0
            for p in range(parts):
                s0 = nir.index_const(p * chunk)
                copy = scf.IfOp(row_start, [], has_else=False)
                with ir.InsertionPoint(copy.then_block):
                    self.copy_nz(self.nz_source(ops, ops.a, s0, x, chunk, mb), ops.a_pitch,
                                 a_parts[p])
                    scf.YieldOp([])
                b1 = b_slots_l1[p % len(b_slots_l1)]
                self.copy_nz(self.nz_source(ops, ops.b, y, s0, kb, chunk), ops.b_pitch, b1)
                step = self.chunk_mads(plan, a_parts[p], None, b1, chunk, a_slots, b_slots,
                                       c_pieces, step, p > 0,
                                       drain if p == parts - 1 else no_drain)
            nir.yield_()
