"""The pipelined schedule of one C tile whose last L1 chunk's A comes in
shrinking parts (`PipelinedPlan.part_blocks`, from
`npu.costmodel.matmul.col_strips.last_chunk_parts`):

  C pieces in L0C
  one-trip loop:  A's first part (every chunk but the last) GM -> L1
                  for each chunk c but the last: B chunk c GM -> L1 (its own
                  buffer), its mads
  one-trip loop:  B's last chunk GM -> L1
                  for each of A's later parts (shrinking): GM -> L1, its mads
                  drain the C pieces

Why: a core's one C tile streamed in even chunks waits one GM latency per
chunk (the flag after each copy holds MTE2 until it lands) and then runs
the whole last chunk's mads after its copy lands, the tail nothing hides
(BERT seq 128 on 32 cores, ffn_out: 1,010 cycles of mads after the last
load). Here the chunks before the last land with one flag, and the mads
after the last copy are one sub-step's. B keeps the streamed loop's form
for npu-prefetch: the first loop's chunks are its two slots (cloned before
the chip barrier), the second loop its remainder (its chunk spread over
earlier phases), as npu-double-buffer would have left them. The mads keep
the even plan's sub-steps, so every C element sums in the same order: the
bits are the even chunks'."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from npu import ir as nir
from npu.passes.lower_matmul.blocks import Operands
from npu.passes.lower_matmul.plan import PipelinedPlan


class LastChunkSchedule:
    """Mixed into `LowerMatmul` with `PipelinedSchedule` (its `chunk_mads`,
    `l0_slots` and drains)."""

    def last_chunk_loops(self, ops: Operands, plan: PipelinedPlan,
                         c_pieces: list[ir.Value]) -> None:
        mb, kb, chunk = plan.mb, plan.kb, plan.chunk
        chunks = ops.N1 // chunk
        zero = nir.index_const(0)
        ub_budget = self.target.capacity("ub") // (2 * plan.pieces)

        def drain(h: int) -> None:
            self.drain_piece(ops, plan, c_pieces[h], None, last, zero, zero, h, ub_budget)

        def no_drain(_h: int) -> None:
            pass

        step = 0
        first = plan.part_blocks[0]
        loop = nir.for_loop(0, 1, 1)
        with ir.InsertionPoint(loop.body):
            a1 = self.stage_a(ops, zero, zero, mb, first)
            a_slots = b_slots = None
            for c in range(chunks - 1):
                b1 = self.stage_b(ops, nir.index_const(c * chunk), zero, chunk, kb)
                if a_slots is None:
                    a_slots, b_slots = self.l0_slots(ops, plan, a1, b1)
                base = nir.index_const(c * chunk * mb) if c else None
                step = self.chunk_mads(plan, a1, base, b1, chunk, a_slots, b_slots, c_pieces,
                                       step, c > 0, no_drain)
            nir.yield_()
        loop = nir.for_loop(0, 1, 1)
        with ir.InsertionPoint(loop.body):
            last = arith_true()
            start = (chunks - 1) * chunk
            b1 = self.stage_b(ops, nir.index_const(start), zero, chunk, kb)
            a_slots = b_slots = None
            for size in plan.part_blocks[1:]:
                a1 = self.stage_a(ops, zero, nir.index_const(start), mb, size)
                if a_slots is None:
                    a_slots, b_slots = self.l0_slots(ops, plan, a1, b1)
                offset = start - (chunks - 1) * chunk
                end = start + size == ops.N1
                step = self.chunk_mads(plan, a1, None, b1, size, a_slots, b_slots, c_pieces,
                                       step, True, drain if end else no_drain,
                                       b_first=offset, b_stride=chunk, b_ahead=True,
                                       drain_each=end)
                start += size
            nir.yield_()


def arith_true() -> ir.Value:
    """An i1 true (a drain's scf.if condition: every piece drains here)."""
    return arith.ConstantOp(ir.IntegerType.get_signless(1), 1).result
