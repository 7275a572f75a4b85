"""The pipelined output-stationary schedule of `npu-lower-matmul`
(`schedule=pipelined`): one flat loop over (C tile, L1 chunk) pairs, L0
ping-pong sub-steps and C drained in pieces; see `emit_pipelined`."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, scf

from npu import ir as nir
from npu.matmul_tiling import MatmulShape, TilingChoice, resident_a_chunks
from npu.passes.base import PassError
from npu.passes.lower_matmul.blocks import Operands
from npu.passes.matmul_epilogue import Piece


# A vector-bound epilogue stages its drain from this many C tiles on
# (`stages_drain`).
VECTOR_BOUND_TILES = 4


@dataclass(frozen=True)
class PipelinedPlan:
    """Block counts of the pipelined OS schedule: C tile mb x kb, L1 chunk
    and L0 sub-step along the reduction, C pieces in L0C (along k);
    `a_resident`: A (one row strip: m = M) is loaded once and stays in L1
    (only B streams in chunks); `group`: C pieces whose mads share one L0A
    sub-tile (`piece_group`)."""

    mb: int
    kb: int
    chunk: int
    sub: int
    pieces: int
    a_resident: bool = False
    group: int = 1

    def describe(self, frac: int) -> str:
        return (f"; pipelined schedule: L1 chunk n={self.chunk * frac}"
                f"{' (B only: the A row strip stays in L1)' if self.a_resident else ''}, "
                f"L0 sub-step n={self.sub * frac}, {self.pieces} C piece(s) in L0C"
                f"{f', {self.group} per L0A sub-tile' if self.group > 1 else ''}")



class PipelinedSchedule:
    """Mixed into `LowerMatmul` (its options, target and `MatmulBlocks`)."""

    def plan_pipelined(self, shape: MatmulShape, choice: TilingChoice,
                       op: ir.Operation) -> "PipelinedPlan | None":
        """Block sizes of the pipelined schedule, or None (fall back to
        'simple') when the C tiles do not divide the shape or nothing fits.

        GM traffic is the cost model's (one A and one B copy per C tile and
        reduction element); only how that traffic is cut up changes: L1 chunks
        (several reduction steps per copy, two chunks resident for the
        ping-pong), L0 sub-steps small enough for two slots in L0A and L0B,
        and the C tile in L0C pieces of whole column blocks that are drained
        while the other pieces still accumulate."""
        t = self.target
        frac = t.fractal
        blk = t.fractal_bytes(2)
        acc_blk = t.fractal_bytes(4)
        M1, N1, K1 = shape.M // frac, shape.N // frac, shape.K // frac
        mb, kb = choice.tiles.m // frac, choice.tiles.k // frac
        nb_fixed = choice.tiles.n // frac if self.n else 0  # an explicit n (clamped to N)
        if M1 % mb or K1 % kb:
            return self.fall_back(f"the C tile ({choice.tiles.m}x{choice.tiles.k}) does not "
                                  f"divide M x K ({shape.M}x{shape.K})")
        if self.c_pieces < 0 or self.l1_chunk < 0:
            raise PassError(f"c-pieces and l1-chunk must not be negative, got "
                            f"{self.c_pieces} and {self.l1_chunk}", op)
        # An epilogue's vector work holds its piece of L0C while it drains
        # (unless staged, below): smaller pieces let the cube refill sooner
        # (BERT's ffn_in + GELU 295k -> 281k cycles with 4). 8 need more
        # carried event ids than npu-insert-sync leaves a loop inside the
        # BERT layer (it merges them into one: ffn_in 217k -> 256k there,
        # although alone it runs 239k -> 209k).
        split = 4 if self.epilogue is not None and kb % 4 == 0 else 2
        pieces = self.c_pieces or (split if kb % split == 0 else 1)
        if kb % pieces:
            raise PassError(f"c-pieces={pieces} must divide the C tile's {kb} column blocks", op)
        khb = kb // pieces
        if mb * kb * acc_blk > t.capacity("l0c"):
            return self.fall_back(f"the C tile needs {mb * kb * acc_blk} bytes of L0C, "
                                  f"capacity {t.capacity('l0c')}")
        if self.l1_chunk:
            if self.l1_chunk % frac or N1 % (self.l1_chunk // frac):
                raise PassError(f"l1-chunk={self.l1_chunk} must be a multiple of {frac} "
                                f"dividing N={shape.N}", op)
            chunks = [self.l1_chunk // frac]
        else:
            chunks = [d for d in range(N1, 0, -1) if N1 % d == 0]
        l1_cap = t.capacity("l1")
        # A resident row strip (the cost model's choice): B alone streams, in
        # the chunks `resident_a_chunks` allows; else A and B chunks both do.
        resident = [d for d in resident_a_chunks(shape, choice.tiles, l1_cap, frac,
                                                 self.chained_l1(op.operands[0]) is not None)
                    if d in chunks and (not nb_fixed or d % nb_fixed == 0)
                    ] if choice.a_resident else []
        a_chunk = 0 if resident else mb
        fitting = resident or [d for d in chunks if 2 * (mb + kb) * d * blk <= l1_cap
                               and (not nb_fixed or d % nb_fixed == 0)]
        # The chunk trades the GM path's per-copy latency (paid once per
        # chunk: one flag per chunk) against the pipeline's fill and drain
        # (the first chunk's copy before the first mad, the last chunk's mads
        # after the last copy). Estimate both from the target, keep the best.
        tiles = (M1 // mb) * (K1 // kb)
        path = t.path("gm_to_l1")

        def estimate(d: int) -> float:
            trips = tiles * (N1 // d)
            copy = (a_chunk + kb) * d * blk / path.bytes_per_cycle + path.latency
            cube = t.cube_cycles(float(mb * kb * d))
            return max(copy + cube * trips, copy * trips + cube)
        chunk = min(fitting, key=lambda d: (estimate(d), -d)) if fitting else None
        if chunk is None:
            if self.l1_chunk:
                need = 2 * (mb + kb) * chunks[0] * blk
                raise PassError(f"l1-chunk={self.l1_chunk}: two A and B chunks need {need} "
                                f"bytes of L1, capacity {l1_cap} bytes (overflow "
                                f"{need - l1_cap} bytes)", op)
            return self.fall_back(f"no L1 chunk of the reduction fits two A and B chunks "
                                  f"({2 * (mb + kb) * (nb_fixed or 1) * blk} bytes at least"
                                  f", L1 capacity {l1_cap})")
        # L0 sub-step: the largest divisor of the requested n (else of the
        # chunk) with two slots in L0A (m x n) and in L0B (n x k/pieces): a
        # tile n that fills L0 once (the simple schedule's) is halved.
        top = nb_fixed or chunk
        subs = [d for d in range(top, 0, -1) if top % d == 0]
        sub = next((d for d in subs if chunk % d == 0
                    and 2 * mb * d * blk <= t.capacity("l0a")
                    and 2 * d * khb * blk <= t.capacity("l0b")), None)
        if sub is None:
            return self.fall_back(f"two L0 slots of one reduction block do not fit L0A/L0B "
                                  f"(m={choice.tiles.m}, k/pieces={khb * frac})")
        group = self.piece_group(shape, choice, tiles * max(shape.batch, 1), mb * sub * khb,
                                 pieces, sub * khb * blk)
        return PipelinedPlan(mb, kb, chunk, sub, pieces, bool(resident), group)

    def piece_group(self, shape: MatmulShape, choice: TilingChoice, tiles: int,
                    mad_blocks: int, pieces: int, b_slot_bytes: int) -> int:
        """C pieces whose mads share one L0A sub-tile (`pipelined_loop`).

        A set_flag after a mad waits for its completion (`mad_latency`), and
        M issues nothing behind it: one slot release per mad stalls the cube
        that long every mad (seq 512 ffn_out: 1152 mads x 20 = 23k cycles).
        Half the pieces share each A sub-tile (its L0B slot holds their B
        sub-tiles), so one flag releases the slots after that many mads,
        and the two halves still finish half a chunk apart for the drains.
        Only where the stalls make the cube the busiest pipe (its work plus
        one `mad_latency` per mad exceeds the GM reads of the cost model's
        traffic: elsewhere M has slack to absorb them) and the drain (L0C ->
        UB with the epilogue's vector work, or the GM write) is under a
        quarter of the cube's work (the GM write's rate is the path's, which
        row-major stores of one fractal row per burst reach about half of):
        a heavy drain releases its pieces one by one to the next tile's
        mads, and pairs stall M on it instead (seq 512 ffn_in + GELU 414.7k
        -> 466.9k; matmul_512x768x768.mlir, f32 stores modelled at 24.6k
        against 73.7k of cube, 208,142 -> 217,300). Not with one C tile: its drain, which nothing hides,
        then starts later (the pinned 256x512x256 + bias + relu: 56,355 ->
        56,899).
        Measured (BERT seq 512): ffn_out's loop 326.3k -> 319.1k, the layer
        1,682,365 -> 1,672,453; all pieces in one group: 1,769,685."""
        group = pieces // 2
        if group < 2 or tiles < 2 or 2 * group * b_slot_bytes > self.target.capacity("l0b"):
            return 1
        t = self.target
        blocks = shape.M * shape.N * shape.K * max(shape.batch, 1) // t.fractal ** 3
        cube = t.cube_cycles(blocks)
        traffic = choice.traffic
        reads = traffic.read_bytes(shape) / t.path("gm_to_l1").bytes_per_cycle
        drain = max(traffic.c_writes * shape.acc_bytes / t.path("l0c_to_ub").bytes_per_cycle
                    + (self.epilogue.vector_cycles if self.epilogue is not None else 0),
                    traffic.write_bytes(shape) / t.path("ub_to_gm").bytes_per_cycle)
        if cube + blocks // mad_blocks * t.mad_latency <= reads or 4 * drain > cube:
            return 1
        return group

    def stages_drain(self, tiles: int, blocks: int, mb: int, khb: int) -> bool:
        """Whether the pipelined loop over `tiles` C tiles (`blocks` fractal
        products, pieces of mb x khb blocks) moves each piece to UB before
        its epilogue (never when an epilogue part would not fit beside it).

        The staged buffer lives for the whole loop and shrinks the
        epilogue's parts, which npu-plan-memory then packs without its
        pipe-aware gaps (the vector unit waits for the previous part's
        store); the early release pays for that only over enough tile
        hand-offs: at `staged-drain` tiles (default 7) for any epilogue,
        at 4 for one whose vector work exceeds half the cube's (a piece held
        during its work stalls the cube that feeds it), unless it stores
        f32 (each part's store is then twice as long to wait for). Measured
        (cycles, ascend910): BERT seq 128 ffn_in with GELU in f16 (49k of
        modelled vector work against 74k of cube), 6 tiles, loop 102.2k ->
        100.3k (before the f16 epilogue, GELU in f32: 216.8k -> 201.2k);
        seq 512 ffn_in 24 tiles 822.8k -> 797.9k, q_proj 257.7k -> 250.5k;
        staged regardless, 128x768x1536 + GELU (3 tiles) 140.2k -> 153.9k,
        Q/K/V + bias to f32 (6 tiles) 98.8k -> 100.4k, 128x768x3072 + GELU
        to f32 (6 tiles) 239.6k -> 270.3k. (Staging the row-major f16
        stores of q_proj's Q/K/V too, 73.9k -> 69.3k with the f32 epilogue,
        makes no difference with the f16 one: 67.8k either way.)"""
        if self.epilogue is None or not self.staged_drain or not self.epilogue_part_columns(
                mb, khb * mb * self.target.fractal_bytes(
                    nir.element_bytes(self.epilogue.drain_type))):
            return False
        vector_heavy = 2 * self.epilogue.vector_cycles > self.target.cube_cycles(blocks)
        narrow = self.epilogue.stored_bytes_per_element <= 2
        return tiles >= self.staged_drain or (
            vector_heavy and narrow and tiles >= VECTOR_BOUND_TILES)

    def drain_staged(self, ops: Operands, c_piece: ir.Value, staged: ir.Value, last: ir.Value,
                     x: ir.Value, y: ir.Value, h: int, plan: "PipelinedPlan") -> None:
        """Piece h of the C tile: L0C -> `staged` under one scf.if, then the
        epilogue over it in parts under another (its temporaries live
        there, from their first to their last use)."""
        frac = self.target.fractal
        mb, khb = plan.mb, plan.kb // plan.pieces
        move = scf.IfOp(last, [], has_else=False)
        with ir.InsertionPoint(move.then_block):
            self.move_to_ub(self.flat_blocks(c_piece, khb * mb), staged, khb * mb)
            scf.YieldOp([])
        staged_bytes = khb * mb * self.target.fractal_bytes(
            nir.element_bytes(nir.memref_element(staged)))
        part = min(khb, self.epilogue_part_columns(mb, staged_bytes))
        drain = scf.IfOp(last, [], has_else=False)
        with ir.InsertionPoint(drain.then_block):
            for c0 in range(0, khb, part):
                cols = min(part, khb - c0)
                view = staged if cols == khb else nir.subview(
                    staged, [c0, 0, 0, 0], [cols, mb, frac, frac])
                col = arith.AddIOp(y, nir.index_const(h * khb + c0)).result \
                    if h * khb + c0 else y
                self.epilogue.emit(view, Piece(ops.prefix, col, x, cols, mb))
            scf.YieldOp([])

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
        khb = plan.kb // plan.pieces
        drain = scf.IfOp(last, [], has_else=False)
        with ir.InsertionPoint(drain.then_block):
            y_h = y if h == 0 else arith.AddIOp(y, nir.index_const(h * khb)).result
            self.write_back(ops, c_piece, x, y_h, plan.mb, khb, ub_budget, landing)
            scf.YieldOp([])

    def fall_back(self, reason: str) -> None:
        """No pipelined plan: the remark says why (the simple schedule runs)."""
        self.why_simple = reason
        return None

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
        khb = kb // pieces
        chunks = ops.N1 // plan.chunk
        cols = ops.K1 // kb
        per_matrix = (ops.M1 // mb) * cols * chunks
        c_pieces = [nir.alloc([khb, mb, frac, frac], "f32", "l0c") for _ in range(pieces)]
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
        mb, kb, chunk, sub, pieces = plan.mb, plan.kb, plan.chunk, plan.sub, plan.pieces
        khb = kb // pieces
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
            in_t = ops.in_type
            a_slots = [nir.alloc([mb, sub, frac, frac], in_t, "l0a") for _ in range(2)]
            b_slots = [nir.alloc([plan.group * sub, khb, frac, frac], in_t, "l0b")
                       for _ in range(2)]
            # With an epilogue, each piece may move to one UB buffer (shared
            # by the pieces: V runs them in order) in its own scf.if, so that
            # its L0C is released to the next tile's mads right after the
            # move, not after the epilogue's vector work (`stages_drain`).
            staged = (nir.alloc([khb, mb, frac, frac], self.epilogue.drain_type, "ub")
                      if self.stages_drain(trips // chunks, trips * mb * kb * chunk, mb, khb)
                      else None)
            landings = self.landing_slots(staged, mb, khb)
            group = plan.group
            slot_blocks = sub * khb
            step = 0
            for g in range(0, pieces, group):
                for j0 in range(0, chunk, sub):
                    a0, b0 = a_slots[step % 2], b_slots[step % 2]
                    step += 1
                    self.reorder_blocks(a1, a0, rows=mb, cols=sub, transpose=False,
                                        op_name="cce.load_l1_to_l0a", src_first=j0 * mb,
                                        src_col_stride=mb, src_base=a_base)
                    if j0 > 0:
                        accumulate: bool | ir.Value = True
                    else:
                        accumulate = first if chunks > 1 else False
                    flat_b = self.flat_blocks(b0, group * slot_blocks)
                    # The group's pieces share the A sub-tile: their mads run
                    # back to back and release the slots with one flag.
                    for h in range(g, g + group):
                        b_h = b0 if group == 1 else nir.subview(
                            flat_b, [(h - g) * slot_blocks, 0, 0], [slot_blocks, frac, frac])
                        self.reorder_blocks(b1, b_h, rows=sub, cols=khb, transpose=True,
                                            op_name="cce.load_l1_to_l0b",
                                            src_first=j0 + h * khb * chunk, src_col_stride=chunk)
                    for h in range(g, g + group):
                        b_h = b0 if group == 1 else nir.subview(
                            flat_b, [(h - g) * slot_blocks, 0, 0], [slot_blocks, frac, frac])
                        self.mad(a0, b_h, c_pieces[h], mb, sub, khb, accumulate)
                if self.drain_order == "per-piece":
                    for h in range(g, g + group):
                        self.drain_piece(ops, plan, c_pieces[h], staged, last, x, y, h,
                                         ub_budget, landings[h % 2] if landings else None)
            if self.drain_order == "after-mads":
                for h in range(pieces):
                    self.drain_piece(ops, plan, c_pieces[h], staged, last, x, y, h, ub_budget,
                                     landings[h % 2] if landings else None)
            nir.yield_()
