"""The pipelined output-stationary schedule of `npu-lower-matmul`
(`schedule=pipelined`): one flat loop over (C tile, L1 chunk) pairs, L0
ping-pong sub-steps and C drained in pieces; see `emit_pipelined` (the plan
it follows is `plan.PipelinedPlan`)."""

from __future__ import annotations

from typing import Callable

from mlir import ir
from mlir.dialects import arith, scf

from npu import ir as nir
from npu.costmodel.matmul.fitting import TilingChoice
from npu.costmodel.matmul.pipelined import l0_turns
from npu.passes.lower_matmul.blocks import Operands
from npu.passes.base import B_AHEAD_ATTR, LIGHT_DRAIN_ATTR
from npu.passes.lower_matmul.plan import PipelinedPlan
from npu.passes.matmul_epilogue import Piece


class PipelinedSchedule:
    """Mixed into `LowerMatmul` (its options, target, `MatmulBlocks` and
    `PipelinedPlanning`)."""


    def drain_staged(self, ops: Operands, c_piece: ir.Value, staged: ir.Value, last: ir.Value,
                     x: ir.Value, y: ir.Value, h: int, plan: "PipelinedPlan") -> None:
        """Piece h of the C tile: L0C -> `staged` under one scf.if, then the
        epilogue over it in parts under another (its temporaries live
        there, from their first to their last use)."""
        frac = self.target.fractal
        mb, khb = plan.piece_rows, plan.piece_cols
        r0, c0h = plan.piece_at(h)
        move = self.drain_if(last, plan)
        with ir.InsertionPoint(move.then_block):
            self.move_to_ub(self.flat_blocks(c_piece, khb * mb), staged, khb * mb)
            scf.YieldOp([])
        staged_bytes = khb * mb * self.target.fractal_bytes(
            nir.element_bytes(nir.memref_element(staged)))
        part = min(khb, self.epilogue_part_columns(mb, staged_bytes))
        drain = self.drain_if(last, plan)
        with ir.InsertionPoint(drain.then_block):
            for c0 in range(0, khb, part):
                cols = min(part, khb - c0)
                view = staged if cols == khb else nir.subview(
                    staged, [c0, 0, 0, 0], [cols, mb, frac, frac])
                col = arith.AddIOp(y, nir.index_const(c0h + c0)).result if c0h + c0 else y
                row = arith.AddIOp(x, nir.index_const(r0)).result if r0 else x
                self.epilogue.emit(view, Piece(ops.prefix, col, row, cols, mb))
            scf.YieldOp([])

    @staticmethod
    def drain_if(last: ir.Value, plan: "PipelinedPlan") -> scf.IfOp:
        """An scf.if on `last` for a piece's drain, marked when the plan's
        drain is light (`PipelinedPlanning.light_drain`)."""
        op = scf.IfOp(last, [], has_else=False)
        if plan.light_drain:
            op.operation.attributes[LIGHT_DRAIN_ATTR] = ir.UnitAttr.get()
        return op

    def landing_slots(self, staged: ir.Value | None, mb: int, khb: int) -> list | None:
        """Two UB buffers the pieces land in by turns (piece h in h % 2), or
        None. With drain-convert the move rounds C to f16 and the epilogue
        works in place in that buffer, then stores it: in one shared buffer
        (the staged one) or in a fresh one per piece, which npu-plan-memory
        may place on the previous piece's (its temporaries come too late in
        program order for its pipe-aware window), V waits for that store
        each piece. Taking turns, a piece's store overlaps the next piece's
        move and vector work (BERT seq 128 398.5k -> 392.2k, seq 512
        1.678M -> 1.673M cycles against drain-convert=false). Only when
        one epilogue part still fits beside the second buffer (a whole
        piece when not staged)."""
        if self.epilogue is None or self.epilogue.drain_type != "f16":
            return None
        frac = self.target.fractal
        piece_bytes = khb * mb * self.target.fractal_bytes(2)
        if staged is not None:
            if not self.epilogue_part_columns(mb, 2 * piece_bytes):
                return None
            return [staged, nir.alloc([khb, mb, frac, frac], "f16", "ub")]
        if self.epilogue_part_columns(mb, piece_bytes) < khb:
            return None
        return [nir.alloc([khb, mb, frac, frac], "f16", "ub") for _ in range(2)]

    def drain_piece(self, ops: Operands, plan: "PipelinedPlan", c_piece: ir.Value,
                    staged: ir.Value | None, last: ir.Value, x: ir.Value, y: ir.Value, h: int,
                    ub_budget: int, landing: ir.Value | None = None) -> None:
        """Piece h of the C tile L0C -> UB -> GM when `last` (the tile's last
        chunk): staged (`drain_staged`, in `landing` if given) or straight
        (into `landing` if given), with the epilogue if any."""
        if staged is not None:
            self.drain_staged(ops, c_piece, landing if landing is not None else staged, last, x,
                              y, h, plan)
            return
        # Always an scf.if (taken every time with one chunk): its UB buffers
        # then live from their first to their last use, not for the whole
        # loop body, and the pieces' parts can share UB.
        r0, c0 = plan.piece_at(h)
        drain = self.drain_if(last, plan)
        with ir.InsertionPoint(drain.then_block):
            y_h = y if c0 == 0 else arith.AddIOp(y, nir.index_const(c0)).result
            x_h = x if r0 == 0 else arith.AddIOp(x, nir.index_const(r0)).result
            self.write_back(ops, c_piece, x_h, y_h, plan.piece_rows, plan.piece_cols, ub_budget,
                            landing)
            scf.YieldOp([])

    def emit_pipelined(self, ops: Operands, choice: TilingChoice, plan: "PipelinedPlan",
                       batch: int = 0) -> None:
        """One flat scf.for over (C tile, L1 chunk) pairs, tile-major:

          C pieces in L0C (live across the loop)
          for i in 0 .. [batch *] tiles * chunks:
            [matrix,] x, y, c = tile row, tile column, chunk of iteration i
            A chunk (m x chunk), B chunk (chunk x k): GM -> L1
            for each C piece h (k/pieces columns):
              for each sub-step s of the chunk: A sub-tile, B sub-tile of piece h
                -> the L0A / L0B slot (s alternating); mad into piece h
                (accumulate=false on the first sub-step of chunk 0)
            for each C piece h, if c is the last chunk:
              drain piece h L0C -> UB -> GM  (drain-order=per-piece: right
              after piece h's mads instead)

        With `plan.a_resident` (one row of C tiles) all of A is copied
        GM -> L1 before the loop, whose L0A loads read it in place at each
        chunk's offset; the loop copies only B chunks.

        Why: every (tile, chunk) is one iteration of one loop, so
        npu-double-buffer's ping-pong of the L1 chunks crosses tile
        boundaries (the next tile's first chunk loads while this tile's last
        chunk computes) and npu-insert-sync sees the pieces, slots and drains
        as siblings of one block (precise flags, no coarse loop-boundary
        dependencies). Pieces are the outer order within a chunk so that a
        piece gets its last mad half a chunk before the next, and its drain
        overlaps the other piece's mads and the next tile's first ones: the
        drain waits for its piece's flag, not for its place in the body.
        The drains sit side by side after the mads because npu-plan-memory
        refuses a cross-pipe reuse of UB only between lifetimes close in
        program order once a function's UB is tight (its windows): after
        their own pieces' mads, piece h+1's L0C -> UB move (V) and piece h's
        store (MTE3) lay far apart, got the same bytes in the BERT layer,
        and the drain of the last C tile, which nothing hides, ran its
        pieces' moves, vector work and stores back to back (BERT seq 128
        out_proj loop 41.0k -> 36.6k, ffn_out 116.2k -> 114.3k cycles with
        them side by side)."""
        frac = self.target.fractal
        mb, kb, pieces = plan.mb, plan.kb, plan.pieces
        chunks = ops.N1 // plan.chunk
        cols = ops.K1 // kb
        per_matrix = (ops.M1 // mb) * cols * chunks
        c_pieces = [nir.alloc([plan.piece_cols, plan.piece_rows, frac, frac], self.acc_type,
                              "l0c") for _ in range(pieces)]
        if plan.a_resident:
            # A (its one row strip, `resident_a_chunks`) is copied before the
            # loop: loop-invariant there, its load needs no "first column
            # tile" scf.if in the loop (whose wait npu-insert-sync would put
            # before the if, holding MTE2 every iteration), and its one
            # MTE2 -> MTE1 flag is waited for before the loop. The loop stays
            # a top-level op, which npu-prefetch looks for.
            if batch:  # a batch of one matrix
                ops.prefix = [nir.index_const(0)]
            # A chained A operand already is the strip (npu-fuse chains).
            strip = self.chained_l1(ops.a) or self.stage_a(ops, 0, 0, mb, ops.N1)
            self.pipelined_loop(ops, plan, per_matrix, c_pieces, strip=strip)
        elif plan.row_strips:
            self.row_strips_loop(ops, plan, c_pieces)
        elif plan.col_strips:
            self.col_strips_loop(ops, plan, c_pieces)
        elif plan.part_blocks:
            self.last_chunk_loops(ops, plan, c_pieces)
        else:
            self.pipelined_loop(ops, plan, per_matrix * max(batch, 1), c_pieces,
                                per_matrix=per_matrix if batch else 0)

    def pipelined_loop(self, ops: Operands, plan: "PipelinedPlan", trips: int,
                       c_pieces: list[ir.Value], per_matrix: int = 0,
                       strip: ir.Value | None = None) -> None:
        """The flat loop of `emit_pipelined` over `trips` (tile, chunk)
        iterations, per_matrix of them per matrix of a batch; with `strip`
        (all of A, resident in L1: one row of C tiles) it loads only B
        chunks."""
        frac = self.target.fractal
        mb, kb, chunk, pieces = plan.mb, plan.kb, plan.chunk, plan.pieces
        mbp, khb = plan.piece_rows, plan.piece_cols
        chunks = ops.N1 // chunk
        cols = ops.K1 // kb
        # Each piece leaves through UB in two parts, so that the GM write of
        # one part overlaps the L0C -> UB move of the next and the last
        # piece's drain (not hidden behind any mad) is short.
        ub_budget = self.target.capacity("ub") // (2 * pieces)
        loop = nir.for_loop(0, trips, 1)
        with ir.InsertionPoint(loop.body):
            i = loop.induction_variable
            if per_matrix:
                # batch_matmul: iteration i is (matrix, tile, chunk), matrix-major.
                ops.prefix = [arith.DivUIOp(i, nir.index_const(per_matrix)).result]
                i = arith.RemUIOp(i, nir.index_const(per_matrix)).result
            c = arith.RemUIOp(i, nir.index_const(chunks)).result
            tile = arith.DivUIOp(i, nir.index_const(chunks)).result
            if strip is not None:
                x = nir.index_const(0)
                y = arith.MulIOp(tile, nir.index_const(kb)).result
            else:
                x = arith.MulIOp(arith.DivUIOp(tile, nir.index_const(cols)).result,
                                 nir.index_const(mb)).result
                y = arith.MulIOp(arith.RemUIOp(tile, nir.index_const(cols)).result,
                                 nir.index_const(kb)).result
            s0 = arith.MulIOp(c, nir.index_const(chunk)).result
            first = arith.CmpIOp(arith.CmpIPredicate.eq, c, nir.index_const(0)).result
            last = arith.CmpIOp(arith.CmpIPredicate.eq, c, nir.index_const(chunks - 1)).result
            if strip is None:
                a1, a_base = self.stage_a(ops, x, s0, mb, chunk), None
            else:
                # This chunk's columns of the strip: from block s0 * mb on.
                a1, a_base = strip, arith.MulIOp(s0, nir.index_const(mb)).result
            b1 = self.stage_b(ops, s0, y, chunk, kb)
            a_slots, b_slots = self.l0_slots(ops, plan, a1, b1)
            # With an epilogue, each piece may move to one UB buffer (shared
            # by the pieces: V runs them in order) in its own scf.if, so that
            # its L0C is released to the next tile's mads right after the
            # move, not after the epilogue's vector work (`stages_drain`).
            staged = (nir.alloc([khb, mbp, frac, frac], self.epilogue.drain_type, "ub")
                      if self.stages_drain(trips // chunks, trips * mb * kb * chunk, mbp, khb)
                      else None)
            landings = self.landing_slots(staged, mbp, khb)

            def drain(h: int) -> None:
                self.drain_piece(ops, plan, c_pieces[h], staged, last, x, y, h, ub_budget,
                                 landings[h % 2] if landings else None)
            b_ahead = self.b_ahead and strip is None and self.b_before_loop(ops, trips, chunks)
            if b_ahead:
                loop.operation.attributes[B_AHEAD_ATTR] = ir.UnitAttr.get()
            self.chunk_mads(plan, a1, a_base, b1, chunk, a_slots, b_slots, c_pieces, 0,
                            first if chunks > 1 else False, drain, b_ahead=b_ahead)
            nir.yield_()

    @staticmethod
    def b_before_loop(ops: Operands, trips: int, chunks: int) -> bool:
        """Whether B is in L1 before the loop's A lands, so that each
        sub-step's L0B loads go ahead of its L0A load (`chunk_mads`'
        `b_ahead`): one trip of one chunk (a core's one C tile over the
        whole reduction) with B a host constant on a chip, whose copies
        npu-prefetch loads before the chip barrier. With A's first, MTE1
        waited for A's copy (98 KB in BERT's ffn_in, 32 cores, seq 128) and
        then loaded B's first sub-tiles: the first mad started ~180 cycles
        after A landed, ~85 with B's first (the phase 6,615 -> 6,519)."""
        if trips != 1 or chunks != 1:
            return False
        root = nir.view_root(ops.b)
        if nir.constant_attr(root) is None or not nir.is_block_argument(root):
            return False
        return nir.block_dim(root.owner.owner) > 1

    def l0_slots(self, ops: Operands, plan: "PipelinedPlan", a1: ir.Value, b1: ir.Value
                 ) -> tuple[list[ir.Value], list[ir.Value]]:
        """The L0A and L0B slots the sub-steps take turns in: four where four
        fit (`l0_turns`; `chunk_mads` then runs two sub-steps' mads back to
        back, one slot release a pair), else two."""
        a_blk, b_blk = self.l0_blocks(a1, False), self.l0_blocks(b1, True)
        n = l0_turns(plan.piece_rows, plan.sub, plan.group * plan.piece_cols, self.target)
        a_slots = [nir.alloc([plan.piece_rows, plan.sub] + a_blk, ops.in_type, "l0a")
                   for _ in range(n)]
        b_slots = [nir.alloc([plan.group * plan.sub, plan.piece_cols] + b_blk, ops.in_type, "l0b")
                   for _ in range(n)]
        return a_slots, b_slots

    def chunk_mads(self, plan: "PipelinedPlan", a1: ir.Value, a_base: ir.Value | None,
                   b1: ir.Value, chunk: int, a_slots: list[ir.Value], b_slots: list[ir.Value],
                   c_pieces: list[ir.Value], step: int, accumulate_first: bool | ir.Value,
                   drain: Callable[[int], None], b_first: int = 0, b_stride: int = 0,
                   b_ahead: bool = False, drain_each: bool = False) -> int:
        """The mads of one L1 chunk (A `a1` from block `a_base`, B `b1`, each
        `chunk` reduction blocks): for each group of C pieces, each sub-step's
        A and B sub-tiles -> the L0 slots (taking turns from `step` on) and
        the pieces' mads; `accumulate_first` for the chunk's first sub-step
        (an i1 "first chunk" flag, or static). `drain(h)` drains piece h
        (after its group with drain-order=per-piece, else after all mads).
        With four slots the mads wait in `pending` until a second sub-step's
        loads are out: one run of M between slot releases, and those loads
        ahead of it. `b_first`, `b_stride`: the chunk's first reduction
        block in `b1` and `b1`'s column stride (0: `chunk`); `b_ahead`:
        each sub-step's L0B loads before its L0A load (B is in L1 already,
        A's copy may still be landing: MTE1 loads B while it waits). Returns
        the next slot turn. With `drain_each` every piece drains right after
        its mad of the chunk's last sub-step (between the group's mads: its
        drain then waits for that mad alone, not for the group's run)."""
        mbp, khb, sub, group = plan.piece_rows, plan.piece_cols, plan.sub, plan.group
        mb = plan.mb
        b_blk = self.l0_blocks(b1, True)
        slot_blocks = sub * khb
        turns = len(a_slots)
        run = turns // 2
        # (A slot, first piece, B views, accumulate, the chunk's last sub-step)
        pending: list[tuple] = []
        drained: set[int] = set()

        def flush() -> None:
            for a0, g, b_views, accumulate, last_sub in pending:
                for h, b_h in zip(range(g, g + group), b_views):
                    self.mad(a0, b_h, c_pieces[h], mbp, sub, khb, accumulate)
                    if drain_each and last_sub:
                        drain(h)
                        drained.add(h)
            pending.clear()

        for g in range(0, plan.pieces, group):
            for j0 in range(0, chunk, sub):
                a0, b0 = a_slots[step % turns], b_slots[step % turns]
                step += 1
                r0 = plan.piece_at(g)[0]  # the group's pieces share their rows

                def load_a() -> None:
                    self.reorder_blocks(a1, a0, rows=mbp, cols=sub, transpose=False,
                                        op_name="cce.load_l1_to_l0a", src_first=j0 * mb + r0,
                                        src_col_stride=mb, src_base=a_base)
                if not b_ahead:
                    load_a()
                accumulate = True if j0 > 0 else accumulate_first
                flat_b = self.flat_blocks(b0, group * slot_blocks)
                # The group's pieces share the A sub-tile: their mads run
                # back to back and release the slots with one flag.
                b_views = [b0 if group == 1 else nir.subview(
                    flat_b, [(h - g) * slot_blocks, 0, 0], [slot_blocks] + b_blk)
                    for h in range(g, g + group)]
                for h, b_h in zip(range(g, g + group), b_views):
                    self.reorder_blocks(b1, b_h, rows=sub, cols=khb, transpose=True,
                                        op_name="cce.load_l1_to_l0b",
                                        src_first=b_first + j0 + plan.piece_at(h)[1] * (
                                            b_stride or chunk),
                                        src_col_stride=b_stride or chunk)
                if b_ahead:
                    load_a()
                pending.append((a0, g, b_views, accumulate, j0 + sub >= chunk))
                if len(pending) == run:
                    flush()
            flush()
            if self.drain_order == "per-piece":
                for h in range(g, g + group):
                    if h not in drained:
                        drain(h)
        if self.drain_order == "after-mads":
            for h in range(plan.pieces):
                if h not in drained:
                    drain(h)
        return step
