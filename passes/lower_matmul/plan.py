"""Planning the pipelined output-stationary schedule of `npu-lower-matmul`
(`schedule=pipelined`, emitted by `pipelined`): L1 chunks, L0 sub-steps,
the C pieces in L0C (their grid and grouping) and whether drains are
staged, from the cost model's tiles and the target."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from npu import ir as nir
from npu.costmodel.matmul.fitting import MatmulShape, TilingChoice
from npu.costmodel.matmul.residency import resident_a_chunks
from npu.costmodel.matmul.row_strips import row_strip_chunks
from npu.costmodel.matmul.col_strips import col_strip_chunks, last_chunk_parts, one_tile_sub
from npu.costmodel.matmul.pipelined import best_chunk, default_pieces, piece_grid
from npu.passes.base import PassError


# A vector-bound epilogue stages its drain from this many C tiles on
# (`stages_drain`).
VECTOR_BOUND_TILES = 4


@dataclass(frozen=True)
class PipelinedPlan:
    """Block counts of the pipelined OS schedule: C tile mb x kb, L1 chunk
    and L0 sub-step along the reduction, C pieces in L0C (`row_pieces` along
    m times pieces / row_pieces along k, row-major: piece h is row h //
    cols, column h % cols of that grid, `piece_grid`); `a_resident`: A
    (one row strip: m = M) is loaded once and stays in L1 (only B streams in
    chunks); `group`: C pieces whose mads share one L0A sub-tile
    (`piece_group`)."""

    mb: int
    kb: int
    chunk: int
    sub: int
    pieces: int
    a_resident: bool = False
    group: int = 1
    row_pieces: int = 1
    # A's strips resident row by row (`row_strips`): `chunk` is the parts' size.
    row_strips: bool = False
    # B's column strip resident across row tiles (`col_strips`): `chunk` is
    # the parts' size.
    col_strips: bool = False
    # The drain is light beside the cube (`light_drain`): its scf.ifs get
    # `LIGHT_DRAIN_ATTR`, past which npu-insert-sync sinks the stores' sets.
    light_drain: bool = False
    # One C tile, its A in parts (blocks, first to last): every chunk but the
    # last, then the last chunk's shrinking parts (`last_chunk_parts`).
    part_blocks: tuple[int, ...] = ()

    @property
    def piece_rows(self) -> int:
        """Row blocks of one C piece."""
        return self.mb // self.row_pieces

    @property
    def piece_cols(self) -> int:
        """Column blocks of one C piece."""
        return self.kb * self.row_pieces // self.pieces

    def piece_at(self, h: int) -> tuple[int, int]:
        """First row block and first column block of piece h in the C tile."""
        r, c = divmod(h, self.pieces // self.row_pieces)
        return r * self.piece_rows, c * self.piece_cols

    def describe(self, frac: int) -> str:
        grid = (f" ({self.row_pieces} x {self.pieces // self.row_pieces}: "
                f"{self.piece_rows * frac}x{self.piece_cols * frac} each)"
                if self.row_pieces > 1 else "")
        return (f"; pipelined schedule: L1 chunk n={self.chunk * frac}"
                f"{' (B only: the A row strip stays in L1)' if self.a_resident else ''}"
                f"{' (A row strips in parts, each kept in L1 for its row)' if self.row_strips else ''}"
                f"{' (B column strip in parts, kept in L1 across the row tiles)' if self.col_strips else ''}"
                f"{f' (A in parts of {self.part_blocks} blocks)' if self.part_blocks else ''}, "
                f"L0 sub-step n={self.sub * frac}, {self.pieces} C piece(s) in L0C{grid}"
                f"{f', {self.group} per L0A sub-tile' if self.group > 1 else ''}")


class PipelinedPlanning:
    """Mixed into `LowerMatmul` (its options, target and epilogue): makes the
    `PipelinedPlan` of a matmul."""

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
        # Column strips take the cost model's piece count (`col_strips_or`).
        pieces = self.c_pieces or (choice.pieces if choice.col_strips else 0) or default_pieces(
            kb, self.epilogue is not None)
        if self.c_piece_rows and (pieces % self.c_piece_rows or mb % self.c_piece_rows):
            raise PassError(f"c-piece-rows={self.c_piece_rows} must divide c-pieces={pieces} "
                            f"and the C tile's {mb} row blocks", op)
        if kb % (pieces // (self.c_piece_rows or 1)):
            raise PassError(f"c-pieces={pieces} must divide the C tile's {kb} column blocks"
                            + (f" (by {pieces // self.c_piece_rows} with c-piece-rows="
                               f"{self.c_piece_rows})" if self.c_piece_rows > 1 else ""), op)
        if mb * kb * acc_blk > t.capacity("l0c"):
            return self.fall_back(f"the C tile needs {mb * kb * acc_blk} bytes of L0C, "
                                  f"capacity {t.capacity('l0c')}")
        l1_chunk = self.model_reduction(self.l1_chunk, "l1-chunk", op)
        if l1_chunk:
            step = self.reduction_step()
            if l1_chunk % frac or N1 % (l1_chunk // frac):
                raise PassError(f"l1-chunk={self.l1_chunk} must be a multiple of {step} "
                                f"dividing N={N1 * step}", op)
            chunks = [l1_chunk // frac]
        else:
            chunks = [d for d in range(N1, 0, -1) if N1 % d == 0]
        l1_cap = t.capacity("l1")
        # A resident row strip (the cost model's choice): B alone streams, in
        # the chunks `resident_a_chunks` allows; else A and B chunks both do.
        resident = [d for d in resident_a_chunks(shape, choice.tiles, l1_cap, frac,
                                                 self.chained_l1(op.operands[0]) is not None)
                    if d in chunks and (not nb_fixed or d % nb_fixed == 0)
                    ] if choice.a_resident else []
        strips = [d for d in row_strip_chunks(shape, choice.tiles, t)
                  if d in chunks and (not nb_fixed or d % nb_fixed == 0)
                  ] if choice.row_strips else []
        # Column strips keep the one tile's L0 sub-step (its mads' reduction
        # boundaries, hence its bits: a mad rounds its sum once).
        one_sub = self.one_tile_sub(M1, kb, N1, pieces, chunks) if choice.col_strips else 0
        cstrips = [d for d in col_strip_chunks(shape, mb, kb, t)
                   if d in chunks and one_sub and d % one_sub == 0
                   and (not nb_fixed or d % nb_fixed == 0)] if choice.col_strips else []
        fitting = resident or [d for d in chunks if 2 * (mb + kb) * d * blk <= l1_cap
                               and (not nb_fixed or d % nb_fixed == 0)]
        tiles = (M1 // mb) * (K1 // kb)
        if strips:
            chunk = choice.chunk // frac if choice.chunk // frac in strips else strips[0]
        elif cstrips:
            chunk = choice.chunk // frac if choice.chunk // frac in cstrips else cstrips[0]
        elif resident and choice.chunk // frac in resident:
            chunk = choice.chunk // frac  # the one the cost model timed these tiles with
        elif self.whole_reduction(shape, choice, op, tiles) and N1 in fitting:
            chunk = N1
        else:
            chunk = best_chunk(fitting, mb, kb, N1, tiles, not resident, t)
        if chunk is None:
            if self.l1_chunk:
                need = 2 * (mb + kb) * chunks[0] * blk
                raise PassError(f"l1-chunk={self.l1_chunk}: two A and B chunks need {need} "
                                f"bytes of L1, capacity {l1_cap} bytes (overflow "
                                f"{need - l1_cap} bytes)", op)
            return self.fall_back(f"no L1 chunk of the reduction fits two A and B chunks "
                                  f"({2 * (mb + kb) * (nb_fixed or 1) * blk} bytes at least"
                                  f", L1 capacity {l1_cap})")
        rows, sub = piece_grid(
            mb, kb, pieces, nb_fixed or (one_sub if cstrips else chunk), chunk, t,
            self.c_piece_rows,
            lambda mad_blocks: tiles * max(shape.batch, 1) > 1 and self.stalls_bind(
                shape, choice, mad_blocks))
        if sub is None:
            return self.fall_back(f"two L0 slots of one reduction block do not fit L0A/L0B "
                                  f"(m={choice.tiles.m}, k/pieces={kb // pieces * frac})")
        mbp, khb = mb // rows, kb * rows // pieces
        group = self.piece_group(shape, choice, tiles * max(shape.batch, 1), mbp * sub * khb,
                                 pieces // rows, sub * khb * blk)
        light = self.light_drain(shape, choice)
        parts = () if resident or strips or cstrips or nb_fixed or self.l1_chunk else \
            self.last_chunk(shape, choice, op, tiles, chunk, sub, light)
        if parts and pieces == 1 and rows == 1 and not self.c_pieces:
            pieces = group = self.drained_pieces(mb, kb, chunk, sub)
        return PipelinedPlan(mb, kb, chunk, sub, pieces, bool(resident), group, rows,
                             bool(strips), bool(cstrips), light, parts)

    def drained_pieces(self, mb: int, kb: int, chunk: int, sub: int) -> int:
        """C pieces (column slabs, all sharing each A sub-tile) for a plan
        whose A streams in shrinking parts (`last_chunk`) and whose C tile is
        one piece: the fewest above one that keep its L0 sub-step (hence
        its mads' sums: the bits), else 1.

        Why: the mads after the last A part lands are one sub-step's, and in
        one piece the whole drain (L0C -> UB, the epilogue, the tile's store
        and its GM latency) waits for the last of them. In pieces, each
        drains right after its own mad of that sub-step
        (`LastChunkSchedule`), while the later pieces' mads run, and the
        stores leave piece by piece. Sharing the A sub-tile (one group), the
        earlier sub-steps load and mad as the one piece did (one L0A load, one
        slot release per sub-step). BERT seq 128 on 32 cores, ffn_out
        (64x3072x48 a core, bias; three pieces of one column block): its
        phase 9,398 -> 9,142 cycles."""
        for p in range(2, kb + 1):
            if kb % p:
                continue
            rows, s = piece_grid(mb, kb, p, chunk, chunk, self.target, 1)
            if rows == 1 and s == sub:
                return p
        return 1

    def last_chunk(self, shape: MatmulShape, choice: TilingChoice, op: ir.Operation,
                   tiles: int, chunk: int, sub: int, light: bool) -> tuple[int, ...]:
        """A's parts (`last_chunk_parts`) for a core's one C tile on a chip
        (nothing after it on the core hides its tail) with a light drain (a
        heavy one takes `whole_reduction`) and B a host constant (npu-prefetch
        loads its chunks before the chip barrier, so A alone is left to
        stream), or (). Not for an op on a share of the cores (in its guard,
        beside other shares' ops in one phase): BERT seq 128's V projection
        (8 of 32 cores) took (32, 8, 8) of its 48 blocks, and npu-prefetch
        placed the slots of it and of the ops after it otherwise: the layer
        41,087 -> 41,215 cycles against ffn_out's parts alone."""
        frac = self.target.fractal
        func = nir.enclosing_function(op)
        if (not self.last_chunk_parts or op.name != "ascend.matmul" or tiles != 1
                or max(shape.batch, 1) != 1 or not light or func is None or _in_share(op, func)
                or nir.block_dim(func) <= 1 or self.chained_l1(op.operands[0]) is not None
                or nir.constant_attr(nir.view_root(op.operands[1])) is None):
            return ()
        return last_chunk_parts(shape.M // frac, shape.K // frac, shape.N // frac, chunk, sub,
                                self.target)

    def whole_reduction(self, shape: MatmulShape, choice: TilingChoice, op: ir.Operation,
                        tiles: int) -> bool:
        """Whether the plan takes the whole reduction as its one L1 chunk:
        a core's one C tile on a chip (nothing after it on the core hides
        its drain) whose drain is heavy (not `light_drain`: a GELU
        epilogue) and whose B is a host constant (npu-prefetch may load it
        before the chip barrier).

        In chunks (`best_chunk`, drain-blind) every C piece gets its last
        mads in the last chunk, so all of the epilogue's vector work waits
        for the last copy; with one chunk each piece reduces all of N and
        drains while the next ones' mads run, MTE2 holds one GM latency
        instead of one per chunk, and the one weight slot is the first,
        which npu-prefetch fills with the whole bursts that fit the gaps
        before the barrier (a second slot goes there only whole). BERT seq
        128 on 32 cores, ffn_in + GELU (64x768x192 a core; 256 -> 768):
        its phase 9,959 -> 8,531 cycles, 172 KB of its 295 KB of weights
        loaded before the barrier instead of 98 KB (without npu-prefetch
        11,706 -> 11,514; chunks of 384: 8,909, but ffn_out's phase after
        it 11,654 -> 12,129)."""
        if tiles != 1 or max(shape.batch, 1) != 1 or self.light_drain(shape, choice):
            return False
        func = nir.enclosing_function(op)
        return (self.epilogue is not None and func is not None and nir.block_dim(func) > 1
                and nir.constant_attr(nir.view_root(op.operands[1])) is not None)

    def one_tile_sub(self, m1: int, kb: int, n1: int, pieces: int, chunks: list[int]) -> int:
        """The L0 sub-step (reduction blocks) the plan of one m1 x kb C tile
        takes (its chunk by `best_chunk`), 0 if none."""
        return one_tile_sub(m1, kb, n1, pieces, chunks, self.target, self.c_piece_rows)

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
        1,682,365 -> 1,672,453; all pieces in one group: 1,769,685.
        The GM write counts the bytes the drain stores (an epilogue's cast
        to f16 halves C's f32): seq 512's V projection on 8 of 32 cores
        (256x768x192 with bias and cast, 4 row tiles) has 1,920 cycles of
        drain against 9,216 of cube, not 3,072; paired, its phase 20,280 ->
        19,578 cycles, the layer 106,084 -> 105,380 (bench/chip_phases.py)."""
        group = pieces // 2
        if group < 2 or tiles < 2 or 2 * group * b_slot_bytes > self.target.capacity("l0b"):
            return 1
        if not self.stalls_bind(shape, choice, mad_blocks) or not self.light_drain(shape, choice):
            return 1
        return group

    def light_drain(self, shape: MatmulShape, choice: TilingChoice) -> bool:
        """Whether the drain (L0C -> UB with the epilogue's vector work, or
        the GM write, whichever is longer) is under a quarter of the cube's
        work. Then a piece's buffers are next written long after its stores
        (a C tile's mads later), and the flag releasing them may wait for
        the next pieces' stores too: MTE3 streams the pieces' stores with
        one GM latency (BERT seq 512 on 32 cores, the last C tiles: 101,893
        -> 101,412 cycles). Not for heavy drains: the README's
        512x768x768 matmul, f32 stores at 24.6k cycles against 73.7k of
        cube, stores back to back and its V then waited for all four pieces'
        stores (190,288 -> 191,975)."""
        t = self.target
        traffic = choice.traffic
        # The GM write is of the bytes the drain stores: an epilogue that
        # casts C to f16 stores half of C's f32 (`stored_bytes_per_element`).
        stored = (traffic.c_writes * self.epilogue.stored_bytes_per_element
                  if self.epilogue is not None else traffic.write_bytes(shape))
        drain = max(traffic.c_writes * shape.acc_bytes / t.path("l0c_to_ub").bytes_per_cycle
                    + (self.epilogue.vector_cycles if self.epilogue is not None else 0),
                    stored / t.path("ub_to_gm").bytes_per_cycle)
        cube = t.cube_cycles(shape.M * shape.N * shape.K * max(shape.batch, 1) // t.fractal ** 3)
        return 4 * drain <= cube

    def stalls_bind(self, shape: MatmulShape, choice: TilingChoice, mad_blocks: int) -> bool:
        """Whether the cube's work plus one `mad_latency` per mad of
        `mad_blocks` exceeds the GM reads of the cost model's traffic (else
        M has slack to absorb the stalls)."""
        t = self.target
        blocks = shape.M * shape.N * shape.K * max(shape.batch, 1) // t.fractal ** 3
        reads = choice.traffic.read_bytes(shape) / t.path("gm_to_l1").bytes_per_cycle
        return t.cube_cycles(blocks) + blocks // mad_blocks * t.mad_latency > reads

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

    def fall_back(self, reason: str) -> None:
        """No pipelined plan: the remark says why (the simple schedule runs)."""
        self.why_simple = reason
        return None


def _in_share(op: ir.Operation, func: ir.Operation) -> bool:
    """Whether `op` sits in an `scf.if` of `func` (npu-split-cores' guard of
    a share of the cores)."""
    parent = op.parent
    while parent is not None and parent.operation != func.operation:
        if parent.name == "scf.if":
            return True
        parent = parent.parent
    return False
