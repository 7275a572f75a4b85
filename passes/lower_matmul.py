"""npu-lower-matmul: ascend.matmul / ascend.batch_matmul -> cce loops (thesis 6.4.1).

A: M x N (Nz in GM as [N1, M1, 16, 16]), B: N x K ([K1, N1, 16, 16]),
C = A x B: M x K ([K1, M1, 16, 16]); N is the reduction, tiles are (m, n, k)
and chosen by the cost model in `npu.matmul_tiling` unless given.

Data path of one step: A tile GM -> L1 (one copy reading the Nz tile with
burst/gap) -> L0A (loads reordering blocks to Zz); B tile GM -> L1 -> L0B
(loads reordering to Zn and transposing each block); `mad` into L0C with
accumulate=false on the first reduction step and true afterwards (an scf.if
on the induction variable, or with `first-step=peel` a separate first
step); C: L0C -> UB -> (vconv to f16 if C is f16) -> GM, in chunks of whole
column blocks that fit UB. `l1-steps=s` (OS) stages s reduction steps per
GM -> L1 copy: same traffic, fewer and longer transfers.

Loop orders:
  os: for x (M tiles) { for y (K tiles) { C tile; for s (N steps) {A, B, mad}; write C } }
  is: for x { [C row strip]; for s { A tile stationary; for y {B, mad} }; write strip }
  ws: for y { [C col strip]; for s { B tile stationary; for x {A, mad} }; write strip }
With a single reduction step IS/WS need no strip: each C tile is written as
soon as its one mad is done.

`schedule=pipelined` (OS; the default of `npu-lower` with double buffering)
keeps the cost model's tiles and GM traffic but streams them differently:
one flat loop over (C tile, L1 chunk) pairs (several reduction steps per GM
copy), L0A/L0B sub-steps in two alternating slots, and the C tile in L0C
pieces (along k) each drained as soon as its last mad is done; see
`emit_pipelined`. Tiles that do not divide the shape use the nest above.

Edge tiles (a dimension that is not a multiple of its tile) get their own
copy of the loop body with smaller static sizes, since instruction
attributes are static; every tile, even a single one, is an scf.for (a
one-trip loop for an edge tile) because memory planning scopes a buffer's
lifetime by the loop body it is allocated in. No synchronisation is emitted
(npu-insert-sync) and no addresses (npu-plan-memory); buffers streamed by a
loop are allocated in its body, buffers live across a loop (the L0C tile or
strip, a stationary A/B tile) in the enclosing scope.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith, memref, scf

from npu import ir as nir
from npu.cce_build import copy_bursts
from npu.fusion import FUSED_UB_FRACTION
from npu.matmul_tiling import STRATEGIES, MatmulShape, TilingChoice, TilingError, choose_tiling
from npu.passes.base import Option, Pass, PassError
from npu.passes.matmul_epilogue import MatmulEpilogue, Piece, group_of

STRATEGY_CHOICES = STRATEGIES + ("auto",)

IndexValue = ir.Value


@dataclass(frozen=True)
class Segment:
    """`count` tiles of `size` blocks starting at block `start` of a dimension."""

    start: int
    count: int
    size: int


def segments(total_blocks: int, tile_blocks: int) -> list[Segment]:
    """Full tiles, then the edge tile if the dimension is not a multiple."""
    full, rest = divmod(total_blocks, tile_blocks)
    segs = []
    if full:
        segs.append(Segment(0, full, tile_blocks))
    if rest:
        segs.append(Segment(full * tile_blocks, 1, rest))
    return segs


@dataclass(frozen=True)
class PipelinedPlan:
    """Block counts of the pipelined OS schedule: C tile mb x kb, L1 chunk
    and L0 sub-step along the reduction, C pieces in L0C (along k)."""

    mb: int
    kb: int
    chunk: int
    sub: int
    pieces: int

    def describe(self, frac: int) -> str:
        return (f"; pipelined schedule: L1 chunk n={self.chunk * frac}, L0 sub-step "
                f"n={self.sub * frac}, {self.pieces} C piece(s) in L0C")


@dataclass
class Operands:
    """The three GM operands and the batch prefix of their indices."""

    a: ir.Value
    b: ir.Value
    c: ir.Value
    prefix: list  # [] or [batch index value]
    M1: int
    N1: int
    K1: int
    in_type: ir.Type
    out_type: ir.Type
    # Fractals from one block column (A, C) or row (B) to the next in GM: M1,
    # N1 and M1 for dense operands, more for a slice of a larger tensor
    # (npu-split-cores gives each core one).
    a_pitch: int = 0
    b_pitch: int = 0
    c_pitch: int = 0


def block_pitch(value: ir.Value, frac: int, op: ir.Operation) -> int:
    """Fractals between consecutive outer blocks of an Nz GM operand; its
    fractals themselves must be dense (strides [.., frac*frac, frac, 1])."""
    strides, _ = nir.memref_layout(value.type)
    if strides[-3:] != [frac * frac, frac, 1] or strides[-4] % (frac * frac):
        raise PassError(f"Nz operand {value.type} must hold whole dense fractals", op)
    return strides[-4] // (frac * frac)


class LowerMatmul(Pass):
    name = "npu-lower-matmul"
    summary = "Lower ascend.matmul/batch_matmul to tiled cce loops (OS/IS/WS, cost-model tiles)"
    handles = ("ascend.matmul", "ascend.batch_matmul")
    options = (
        Option("strategy", str, "os", "loop order: output-, input- or weight-stationary, or "
               "auto (cheapest by the cost model)", STRATEGY_CHOICES),
        Option("m", int, 0, "tile rows of A and C (0: cost model)", low=0),
        Option("n", int, 0, "tile of the reduction dimension (0: cost model)", low=0),
        Option("k", int, 0, "tile columns of B and C (0: cost model)", low=0),
        Option("l1-steps", int, 1, "OS only: reduction steps per GM -> L1 copy (longer "
               "transfers; L1 must hold that many A and B tiles)", low=1),
        Option("first-step", str, "if", "how the first reduction step gets accumulate=false: "
               "an scf.if in the reduction loop, or peeled into its own one-trip loop",
               ("if", "peel")),
        Option("schedule", str, "simple", "OS only: 'simple' nests the tile loops as above; "
               "'pipelined' streams (tile, L1 chunk) pairs through one flat loop with L0 "
               "ping-pong sub-steps and C drained in pieces (same GM traffic; falls back to "
               "'simple' when the tiles do not divide the shape or with l1-steps > 1)",
               ("simple", "pipelined")),
        Option("l1-chunk", int, 0, "schedule=pipelined: reduction elements per GM -> L1 copy "
               "(0: the largest divisor of N whose A and B chunks fit L1 twice)", low=0),
        Option("c-pieces", int, 0, "schedule=pipelined: L0C pieces the C tile is split into "
               "along k, each drained as soon as its last mad is done (0: auto)", low=0),
    )

    def run(self, module: ir.Operation) -> None:
        self.lower_each(module)

    # ------------------------------------------------------------------ analysis

    def shape_of(self, op: ir.Operation) -> tuple[MatmulShape, int, int, int, int]:
        """Checks the operands (PassError at the op) and returns the model's shape."""
        batched = op.name == "ascend.batch_matmul"
        rank = 5 if batched else 4
        frac = self.target.fractal
        if len(op.operands) != 3:
            raise PassError(f"expects 3 operands (A, B, C), got {len(op.operands)}", op)
        names = ("A", "B", "C")
        shapes = []
        for name, v in zip(names, op.operands):
            if not nir.is_memref(v.type):
                raise PassError(f"operand {name} must be a memref, got {v.type}", op)
            if nir.memory_space(v) != "gm":
                raise PassError(f"operand {name} must be in 'gm', got '{nir.memory_space(v)}'", op)
            shape = nir.memref_shape(v)
            if len(shape) != rank or shape[-2:] != [frac, frac]:
                kind = "batch " if batched else ""
                raise PassError(f"operand {name} of {kind}matmul must be a fractal (Nz) memref "
                                f"[{'batch, ' if batched else ''}blocks, blocks, {frac}, {frac}], "
                                f"got {v.type}", op)
            shapes.append(shape)
        a_t, b_t, c_t = (nir.memref_element(v) for v in op.operands)
        if a_t != "f16" or b_t != "f16":
            raise PassError(f"A and B must be f16, got {a_t} and {b_t}", op)
        if c_t not in ("f16", "f32"):
            raise PassError(f"C must be f32 or f16, got {c_t}", op)
        a, b, c = shapes
        off = 1 if batched else 0
        N1, M1 = a[off], a[off + 1]
        K1, NB1 = b[off], b[off + 1]
        batch = a[0] if batched else 1
        if batched and not (a[0] == b[0] == c[0]):
            raise PassError(f"batch sizes differ: A {a[0]}, B {b[0]}, C {c[0]}", op)
        if NB1 != N1:
            raise PassError(f"reduction mismatch: A is {M1 * frac}x{N1 * frac} but B is "
                            f"{NB1 * frac}x{K1 * frac} (Nz blocks A [N1={N1}, M1={M1}], "
                            f"B [K1={K1}, N1={NB1}])", op)
        if c[off:off + 2] != [K1, M1]:
            raise PassError(f"C must be Nz [{K1}, {M1}, {frac}, {frac}] for a {M1 * frac}x"
                            f"{K1 * frac} result, got {op.operands[2].type}", op)
        acc = self.target.fractal_bytes(4) // (frac * frac)
        shape = MatmulShape(M1 * frac, N1 * frac, K1 * frac, batch, in_bytes=2, acc_bytes=acc,
                            out_bytes=nir.element_bytes(c_t))
        return shape, batch, M1, N1, K1

    # ------------------------------------------------------------------ lowering

    def lower(self, op: ir.Operation) -> None:
        shape, batch, M1, N1, K1 = self.shape_of(op)
        try:
            choice = choose_tiling(shape, self.target, self.strategy, self.m, self.n, self.k)
        except TilingError as e:
            raise PassError(str(e), op) from None
        if self.l1_steps < 1:
            raise PassError(f"l1-steps must be at least 1, got {self.l1_steps}", op)
        if self.l1_steps > 1:
            if choice.strategy != "os":
                raise PassError(f"l1-steps applies to the output-stationary loop order only "
                                f"(strategy is '{choice.strategy}')", op)
            t = choice.tiles
            chunk = min(self.l1_steps * t.n, shape.N)
            need = (t.m + t.k) * chunk * shape.in_bytes
            if need > self.target.capacity("l1"):
                raise PassError(f"l1-steps={self.l1_steps}: the staged A and B tiles "
                                f"({t.m}+{t.k}) x {chunk} need {need} bytes of L1, capacity "
                                f"{self.target.capacity('l1')} bytes (overflow "
                                f"{need - self.target.capacity('l1')} bytes)", op)
        self.pipelined = None
        self.why_simple = ""
        group = group_of(op)
        self.epilogue = MatmulEpilogue(self, group, op) if group is not None else None
        if self.schedule == "pipelined" and choice.strategy == "os" and self.l1_steps == 1:
            self.pipelined = self.plan_pipelined(shape, choice, op)
        elif self.schedule == "pipelined":
            self.why_simple = (f"strategy={choice.strategy} (the pipelined schedule is "
                               "output-stationary)" if choice.strategy != "os" else
                               f"l1-steps={self.l1_steps}")
        self.remark(op, choice.describe(shape)
                    + (f"; {self.l1_steps} reduction steps per L1 copy" if self.l1_steps > 1 else "")
                    + (self.pipelined.describe(self.target.fractal) if self.pipelined is not None else "")
                    + (f"; simple schedule: no pipelined plan because {self.why_simple}"
                       if self.why_simple else "")
                    + (f"; epilogue ({self.epilogue.e.short}) on each drained piece, "
                       f"{self.epilogue.bytes_per_fractal} bytes of UB per C fractal"
                       if self.epilogue is not None else ""))
        a, b, c = op.operands
        with op.location, ir.InsertionPoint(op):
            frac = self.target.fractal
            ops = Operands(a, b, c, [], M1, N1, K1, ir.MemRefType(a.type).element_type,
                           ir.MemRefType(c.type).element_type, block_pitch(a, frac, op),
                           block_pitch(b, frac, op), block_pitch(c, frac, op))
            if op.name == "ascend.batch_matmul" and self.pipelined is not None:
                # The batch joins the flat loop: no loop boundary between batches.
                self.emit_pipelined(ops, choice, self.pipelined, batch)
            elif op.name == "ascend.batch_matmul":
                def per_batch(bi: IndexValue, _size: int) -> None:
                    ops.prefix = [bi]
                    self.emit_strategy(ops, choice)
                self.emit_tiles(segments(batch, 1), per_batch)
            else:
                self.emit_strategy(ops, choice)
        op.erase()
        if self.epilogue is not None:
            self.epilogue.finish()

    def emit_strategy(self, ops: Operands, choice: TilingChoice) -> None:
        frac = self.target.fractal
        mb, nb, kb = choice.tiles.m // frac, choice.tiles.n // frac, choice.tiles.k // frac
        xs, ss, ys = segments(ops.M1, mb), segments(ops.N1, nb), segments(ops.K1, kb)
        single_step = len(ss) == 1 and ss[0].count == 1
        if choice.strategy == "os" and self.pipelined is not None:
            self.emit_pipelined(ops, choice, self.pipelined)
        elif choice.strategy == "os":
            def os_x(x: IndexValue, m: int) -> None:
                def os_y(y: IndexValue, k: int) -> None:
                    c_tile = nir.alloc([k, m, frac, frac], "f32", "l0c")
                    if self.l1_steps > 1:
                        self.staged_reduction(ops, x, y, m, nb, k, c_tile)
                    else:
                        def step(s: IndexValue, n: int, accumulate: bool) -> None:
                            a0 = self.load_a(ops, x, s, m, n)
                            b0 = self.load_b(ops, s, y, n, k)
                            self.mad(a0, b0, c_tile, m, n, k, accumulate)
                        self.emit_reduction(ss, step)
                    self.write_back(ops, c_tile, x, y, m, k)
                self.emit_tiles(ys, os_y)
            self.emit_tiles(xs, os_x)
        elif choice.strategy == "is":
            def is_x(x: IndexValue, m: int) -> None:
                if single_step:
                    a0 = self.load_a(ops, x, nir.index_const(0), m, ss[0].size)

                    def is_y1(y: IndexValue, k: int) -> None:
                        c_tile = nir.alloc([k, m, frac, frac], "f32", "l0c")
                        b0 = self.load_b(ops, nir.index_const(0), y, ss[0].size, k)
                        self.mad(a0, b0, c_tile, m, ss[0].size, k, False)
                        self.write_back(ops, c_tile, x, y, m, k)
                    self.emit_tiles(ys, is_y1)
                    return
                # The C row strip: tile y (k column blocks x m rows) at block y*m.
                strip = nir.alloc([ops.K1 * m, frac, frac], "f32", "l0c")

                def step(s: IndexValue, n: int, accumulate: bool) -> None:
                    a0 = self.load_a(ops, x, s, m, n)

                    def is_y(y: IndexValue, k: int) -> None:
                        b0 = self.load_b(ops, s, y, n, k)
                        self.mad(a0, b0, self.strip_tile(strip, y, m, k * m), m, n, k, accumulate)
                    self.emit_tiles(ys, is_y)
                self.emit_reduction(ss, step)

                def is_write(y: IndexValue, k: int) -> None:
                    self.write_back(ops, self.strip_tile(strip, y, m, k * m), x, y, m, k)
                self.emit_tiles(ys, is_write)
            self.emit_tiles(xs, is_x)
        else:  # ws
            def ws_y(y: IndexValue, k: int) -> None:
                if single_step:
                    b0 = self.load_b(ops, nir.index_const(0), y, ss[0].size, k)

                    def ws_x1(x: IndexValue, m: int) -> None:
                        c_tile = nir.alloc([k, m, frac, frac], "f32", "l0c")
                        a0 = self.load_a(ops, x, nir.index_const(0), m, ss[0].size)
                        self.mad(a0, b0, c_tile, m, ss[0].size, k, False)
                        self.write_back(ops, c_tile, x, y, m, k)
                    self.emit_tiles(xs, ws_x1)
                    return
                # The C column strip: tile x (k column blocks x m rows) at block x*k.
                strip = nir.alloc([ops.M1 * k, frac, frac], "f32", "l0c")

                def step(s: IndexValue, n: int, accumulate: bool) -> None:
                    b0 = self.load_b(ops, s, y, n, k)

                    def ws_x(x: IndexValue, m: int) -> None:
                        a0 = self.load_a(ops, x, s, m, n)
                        self.mad(a0, b0, self.strip_tile(strip, x, k, k * m), m, n, k, accumulate)
                    self.emit_tiles(xs, ws_x)
                self.emit_reduction(ss, step)

                def ws_write(x: IndexValue, m: int) -> None:
                    self.write_back(ops, self.strip_tile(strip, x, k, k * m), x, y, m, k)
                self.emit_tiles(xs, ws_write)
            self.emit_tiles(ys, ws_y)

    # ------------------------------------------------------------------ pipelined OS

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
        pieces = self.c_pieces or (2 if kb % 2 == 0 else 1)
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
        fitting = [d for d in chunks if 2 * (mb + kb) * d * blk <= l1_cap
                   and (not nb_fixed or d % nb_fixed == 0)]
        # The chunk trades the GM path's per-copy latency (paid once per
        # chunk: one flag per chunk) against the pipeline's fill and drain
        # (the first chunk's copy before the first mad, the last chunk's mads
        # after the last copy). Estimate both from the target, keep the best.
        tiles = (M1 // mb) * (K1 // kb)
        path = t.path("gm_to_l1")

        def estimate(d: int) -> float:
            trips = tiles * (N1 // d)
            copy = (mb + kb) * d * blk / path.bytes_per_cycle + path.latency
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
        return PipelinedPlan(mb, kb, chunk, sub, pieces)

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
              if c is the last chunk: drain piece h L0C -> UB -> GM

        Why: every (tile, chunk) is one iteration of one loop, so
        npu-double-buffer's ping-pong of the L1 chunks crosses tile
        boundaries (the next tile's first chunk loads while this tile's last
        chunk computes) and npu-insert-sync sees the pieces, slots and drains
        as siblings of one block (precise flags, no coarse loop-boundary
        dependencies). Pieces are the outer order within a chunk so that a
        piece gets its last mad half a chunk before the next, and its drain
        overlaps the other piece's mads and the next tile's first ones."""
        frac = self.target.fractal
        mb, kb, chunk, sub, pieces = plan.mb, plan.kb, plan.chunk, plan.sub, plan.pieces
        khb = kb // pieces
        chunks = ops.N1 // chunk
        cols = ops.K1 // kb
        per_matrix = (ops.M1 // mb) * cols * chunks
        trips = per_matrix * max(batch, 1)
        c_pieces = [nir.alloc([khb, mb, frac, frac], "f32", "l0c") for _ in range(pieces)]
        # Each piece leaves through UB in two parts, so that the GM write of
        # one part overlaps the L0C -> UB move of the next and the last
        # piece's drain (not hidden behind any mad) is short.
        ub_budget = self.target.capacity("ub") // (2 * pieces)
        loop = nir.for_loop(0, trips, 1)
        with ir.InsertionPoint(loop.body):
            i = loop.induction_variable
            if batch:
                # batch_matmul: iteration i is (matrix, tile, chunk), matrix-major.
                ops.prefix = [arith.DivUIOp(i, nir.index_const(per_matrix)).result]
                i = arith.RemUIOp(i, nir.index_const(per_matrix)).result
            c = arith.RemUIOp(i, nir.index_const(chunks)).result
            tile = arith.DivUIOp(i, nir.index_const(chunks)).result
            x = arith.MulIOp(arith.DivUIOp(tile, nir.index_const(cols)).result, nir.index_const(mb)).result
            y = arith.MulIOp(arith.RemUIOp(tile, nir.index_const(cols)).result, nir.index_const(kb)).result
            s0 = arith.MulIOp(c, nir.index_const(chunk)).result
            first = arith.CmpIOp(arith.CmpIPredicate.eq, c, nir.index_const(0)).result
            last = arith.CmpIOp(arith.CmpIPredicate.eq, c, nir.index_const(chunks - 1)).result
            a1 = self.stage_a(ops, x, s0, mb, chunk)
            b1 = self.stage_b(ops, s0, y, chunk, kb)
            in_t = ops.in_type
            a_slots = [nir.alloc([mb, sub, frac, frac], in_t, "l0a") for _ in range(2)]
            b_slots = [nir.alloc([sub, khb, frac, frac], in_t, "l0b") for _ in range(2)]
            step = 0
            for h in range(pieces):
                for j0 in range(0, chunk, sub):
                    a0, b0 = a_slots[step % 2], b_slots[step % 2]
                    step += 1
                    self.reorder_blocks(a1, a0, rows=mb, cols=sub, transpose=False,
                                        op_name="cce.load_l1_to_l0a", src_first=j0 * mb,
                                        src_col_stride=mb)
                    self.reorder_blocks(b1, b0, rows=sub, cols=khb, transpose=True,
                                        op_name="cce.load_l1_to_l0b",
                                        src_first=j0 + h * khb * chunk, src_col_stride=chunk)
                    if j0 > 0:
                        accumulate: bool | ir.Value = True
                    else:
                        accumulate = first if chunks > 1 else False
                    self.mad(a0, b0, c_pieces[h], mb, sub, khb, accumulate)
                # Always an scf.if (taken every time with one chunk): its UB
                # buffers then live from their first to their last use, not
                # for the whole loop body, and the pieces' parts can share UB.
                drain = scf.IfOp(last, [], has_else=False)
                with ir.InsertionPoint(drain.then_block):
                    y_h = y if h == 0 else arith.AddIOp(y, nir.index_const(h * khb)).result
                    self.write_back(ops, c_pieces[h], x, y_h, mb, khb, ub_budget)
                    scf.YieldOp([])
            nir.yield_()

    # ------------------------------------------------------------------ loops

    def emit_tiles(self, segs: Sequence[Segment], body: Callable[[IndexValue, int], None]) -> None:
        """One scf.for per segment (iv = first block of the tile). A single
        tile (an edge tile, the peeled first reduction step) gets a one-trip
        loop too: its body is the scope of the buffers it streams, so memory
        planning sees them die at its end (an alloc in a loop body lives for
        that body)."""
        for seg in segs:
            loop = nir.for_loop(seg.start, seg.start + seg.count * seg.size, seg.size)
            with ir.InsertionPoint(loop.body):
                body(loop.induction_variable, seg.size)
                nir.yield_()

    def emit_reduction(self, segs: Sequence[Segment],
                       body: Callable[[IndexValue, int, bool], None]) -> None:
        """The reduction loop: mad overwrites C on the first step
        (accumulate=false) and accumulates on every later one. `first-step=if`
        keeps one loop over the full steps and selects the flag with an
        scf.if on the induction variable (one copy of the body, and an even
        trip count stays even for double buffering); `first-step=peel`
        emits the first step as its own one-trip loop."""
        first = segs[0]
        if self.first_step == "if" and first.count > 1:
            def step(s: IndexValue, n: int) -> None:
                is_first = arith.CmpIOp(arith.CmpIPredicate.eq, s, nir.index_const(first.start)).result
                body(s, n, is_first)
            self.emit_tiles([first], step)
            self.emit_tiles(segs[1:], lambda s, n: body(s, n, True))
            return
        self.emit_tiles([Segment(first.start, 1, first.size)], lambda s, n: body(s, n, False))
        rest = list(segs[1:])
        if first.count > 1:
            rest.insert(0, Segment(first.start + first.size, first.count - 1, first.size))
        self.emit_tiles(rest, lambda s, n: body(s, n, True))

    def strip_tile(self, strip: ir.Value, index: IndexValue, scale: int, blocks: int) -> ir.Value:
        """The tile of an L0C strip starting at block `index * scale`."""
        offset = arith.MulIOp(index, nir.index_const(scale)).result
        frac = self.target.fractal
        return nir.subview(strip, [offset, 0, 0], [blocks, frac, frac])

    # ------------------------------------------------------------------ data movement

    def stage_a(self, ops: Operands, x: IndexValue, s: IndexValue, m: int, n: int) -> ir.Value:
        """A tile (m x n blocks) GM -> L1, kept in Nz; returns the L1 buffer."""
        frac = self.target.fractal
        blk = self.target.fractal_bytes(2)
        src = nir.subview(ops.a, ops.prefix + [s, x, 0, 0],
                          [1] * len(ops.prefix) + [n, m, frac, frac])
        l1 = nir.alloc([n, m, frac, frac], ops.in_type, "l1")
        # One burst per column block: its m row blocks are contiguous in GM.
        copy_bursts("cce.copy_gm_to_l1", src, l1, n, self.target.blocks(m * blk),
                    src_gap=self.target.blocks((ops.a_pitch - m) * blk))
        return l1

    def stage_b(self, ops: Operands, s: IndexValue, y: IndexValue, n: int, k: int) -> ir.Value:
        """B tile (n x k blocks) GM -> L1, kept in Nz; returns the L1 buffer."""
        frac = self.target.fractal
        blk = self.target.fractal_bytes(2)
        src = nir.subview(ops.b, ops.prefix + [y, s, 0, 0],
                          [1] * len(ops.prefix) + [k, n, frac, frac])
        l1 = nir.alloc([k, n, frac, frac], ops.in_type, "l1")
        copy_bursts("cce.copy_gm_to_l1", src, l1, k, self.target.blocks(n * blk),
                    src_gap=self.target.blocks((ops.b_pitch - n) * blk))
        return l1

    def to_l0a(self, l1: ir.Value, m: int, n: int, first_col: int = 0) -> ir.Value:
        """Columns first_col.. (n blocks) of an L1 A tile -> L0A (Zz).
        Nz block (i, j) is at j*m + i in L1, Zz wants it at i*n + j."""
        frac = self.target.fractal
        l0a = nir.alloc([m, n, frac, frac], nir.memref_type(l1).element_type, "l0a")
        self.reorder_blocks(l1, l0a, rows=m, cols=n, transpose=False, op_name="cce.load_l1_to_l0a",
                            src_first=first_col * m, src_col_stride=m)
        return l0a

    def to_l0b(self, l1: ir.Value, n: int, k: int, first_row: int = 0) -> ir.Value:
        """Rows first_row.. (n blocks) of an L1 B tile -> L0B (Zn). Nz block
        (j, l) is at l*ld + j in L1 (ld: the L1 tile's row blocks), Zn wants
        it at j*k + l, transposed."""
        frac = self.target.fractal
        ld = nir.memref_shape(l1)[1]
        l0b = nir.alloc([n, k, frac, frac], nir.memref_type(l1).element_type, "l0b")
        self.reorder_blocks(l1, l0b, rows=n, cols=k, transpose=True, op_name="cce.load_l1_to_l0b",
                            src_first=first_row, src_col_stride=ld)
        return l0b

    def load_a(self, ops: Operands, x: IndexValue, s: IndexValue, m: int, n: int) -> ir.Value:
        """A tile (m x n blocks) GM -> L1 (Nz) -> L0A (Zz); returns the L0A buffer."""
        return self.to_l0a(self.stage_a(ops, x, s, m, n), m, n)

    def load_b(self, ops: Operands, s: IndexValue, y: IndexValue, n: int, k: int) -> ir.Value:
        """B tile (n x k blocks) GM -> L1 (Nz) -> L0B (Zn); returns the L0B buffer."""
        return self.to_l0b(self.stage_b(ops, s, y, n, k), n, k)

    def staged_reduction(self, ops: Operands, x: IndexValue, y: IndexValue, m: int, nb: int,
                         k: int, c_tile: ir.Value) -> None:
        """OS reduction with `l1-steps` reduction steps per GM -> L1 copy:
        fewer, longer transfers (each pays the path latency once); the L0
        tiles and mads stay per step. Each step is a one-trip loop (scope of
        its L0 buffers); the first step of the first chunk overwrites C."""
        chunk = nb * self.l1_steps

        def per_chunk(sc: IndexValue, ncb: int, accumulate: bool | ir.Value) -> None:
            a1 = self.stage_a(ops, x, sc, m, ncb)
            b1 = self.stage_b(ops, sc, y, ncb, k)
            for seg in segments(ncb, nb):
                for t in range(seg.count):
                    j0 = seg.start + t * seg.size

                    def sub(_iv: IndexValue, n: int, j0: int = j0) -> None:
                        a0 = self.to_l0a(a1, m, n, first_col=j0)
                        b0 = self.to_l0b(b1, n, k, first_row=j0)
                        self.mad(a0, b0, c_tile, m, n, k, accumulate if j0 == 0 else True)
                    self.emit_tiles([Segment(j0, 1, seg.size)], sub)
        self.emit_reduction(segments(ops.N1, chunk), per_chunk)

    def reorder_blocks(self, src: ir.Value, dst: ir.Value, rows: int, cols: int,
                       transpose: bool, op_name: str, src_first: int = 0,
                       src_col_stride: int | None = None) -> None:
        """Copy a rows x cols grid of fractals from column-major block order
        (Nz: block (i, j) at src_first + j*src_col_stride + i) to row-major
        block order (Zz/Zn) with as few loads as possible: one load per row
        (repeat over columns) or per column (repeat over rows)."""
        max_rep = self.target.max_repeat
        ld = rows if src_col_stride is None else src_col_stride
        src_blocks = 1
        for d in nir.memref_shape(src)[:-2]:
            src_blocks *= d
        flat_src = self.flat_blocks(src, src_blocks)
        flat_dst = self.flat_blocks(dst, rows * cols)
        if rows <= cols:
            # Per block row i: src blocks i, i+ld, ...; dst blocks i*cols + j.
            lines = [(src_first + i, i * cols, cols, ld, 1) for i in range(rows)]
        else:
            # Per block column j: src blocks j*ld + i; dst blocks i*cols + j.
            lines = [(src_first + j * ld, j, rows, 1, cols) for j in range(cols)]
        for src0, dst0, count, src_stride, dst_stride in lines:
            for first in range(0, count, max_rep):
                rep = min(max_rep, count - first)
                s = self.block_view(flat_src, src0 + first * src_stride, src_blocks)
                d = self.block_view(flat_dst, dst0 + first * dst_stride, rows * cols)
                nir.create_op(op_name, [s, d], repeat=rep, src_stride=src_stride,
                              dst_stride=dst_stride, transpose=transpose)

    def flat_blocks(self, buf: ir.Value, blocks: int) -> ir.Value:
        """The buffer viewed as [blocks, 16, 16] (static shapes collapse freely)."""
        shape = nir.memref_shape(buf)
        if len(shape) == 3:
            return buf
        t = nir.memref_type(buf)
        frac = self.target.fractal
        result = ir.MemRefType.get([blocks, frac, frac], t.element_type, None, t.memory_space)
        return memref.CollapseShapeOp(result, buf, [[0, 1], [2], [3]]).result

    def block_view(self, flat: ir.Value, first: int, total: int) -> ir.Value:
        """From block `first` to the end of the buffer: the operand address is
        the first block, the view covers everything the instruction may touch."""
        frac = self.target.fractal
        return nir.subview(flat, [first, 0, 0], [total - first, frac, frac])

    def mad(self, a0: ir.Value, b0: ir.Value, c: ir.Value, m: int, n: int, k: int,
            accumulate: bool | ir.Value) -> None:
        """`accumulate` is static, or an i1 "first step" flag: then an scf.if
        holds the overwriting mad and its else branch the accumulating one."""
        frac = self.target.fractal
        if isinstance(accumulate, ir.Value):
            branch = scf.IfOp(accumulate, [], has_else=True)
            for block, acc in ((branch.then_block, False), (branch.else_block, True)):
                with ir.InsertionPoint(block):
                    self.mad(a0, b0, c, m, n, k, acc)
                    scf.YieldOp([])
            return
        nir.create_op("cce.mad", [a0, b0, c], m=m * frac, n=n * frac, k=k * frac,
                      accumulate=accumulate)

    def write_back(self, ops: Operands, c_l0c: ir.Value, x: IndexValue, y: IndexValue,
                   m: int, k: int, ub_budget: int | None = None) -> None:
        """C tile (k column blocks x m row blocks, Nz, f32) L0C -> UB -> GM, in
        chunks of whole column blocks that fit UB, or `ub_budget` bytes of it
        (with the f16 copy if C is f16)."""
        acc_blk = self.target.fractal_bytes(4)
        out_name = str(ops.out_type)
        out_blk = self.target.fractal_bytes(nir.element_bytes(out_name))
        convert = out_name != "f32"
        per_column = m * (acc_blk + (out_blk if convert else 0))
        budget = self.target.capacity("ub") if ub_budget is None else ub_budget
        if self.epilogue is not None:
            # npu-fuse's share sizes the epilogue's parts: the pipelined
            # drain gets at least that (longer vector runs); the simple one
            # all of UB at the default share, as its plain drain, and less
            # when npu-lower retries fusion at a smaller share.
            per_column = m * self.epilogue.bytes_per_fractal
            share = self.epilogue.ub_budget
            budget = max(budget, share) if ub_budget is not None else min(
                budget, int(share / FUSED_UB_FRACTION) + self.target.granule("ub"))
        chunk = min(k, max(1, budget // per_column))
        assert chunk >= 1, "the cost model guarantees one column block fits UB"
        flat = self.flat_blocks(c_l0c, k * m)
        # Several chunks in one loop body would all live for the whole body
        # (memory planning scopes a buffer by the loop it is allocated in) and
        # together overflow UB: each chunk then gets its own one-trip loop.
        # The pipelined schedule drains inside an scf.if, where lifetimes are
        # the uses, and passes `ub_budget`.
        scoped = ub_budget is None and chunk < k
        for c0 in range(0, k, chunk):
            cols = min(chunk, k - c0)
            if scoped:
                part = nir.for_loop(0, 1, 1)
                with ir.InsertionPoint(part.body):
                    self.drain_chunk(ops, flat, x, y, m, k, c0, cols, convert)
                    nir.yield_()
            else:
                self.drain_chunk(ops, flat, x, y, m, k, c0, cols, convert)

    def drain_chunk(self, ops: Operands, flat: ir.Value, x: IndexValue, y: IndexValue, m: int,
                    k: int, c0: int, cols: int, convert: bool) -> None:
        """Column blocks c0 .. c0+cols of a C tile: L0C -> UB (-> f16) -> GM."""
        frac = self.target.fractal
        acc_blk = self.target.fractal_bytes(4)
        out_blk = self.target.fractal_bytes(nir.element_bytes(str(ops.out_type)))
        src = self.block_view(flat, c0 * m, k * m)
        ub32 = nir.alloc([cols, m, frac, frac], "f32", "ub")
        nir.create_op("cce.copy_l0c_to_ub", [src, ub32], n_burst=1,
                      burst_len=self.target.blocks(cols * m * acc_blk), src_gap=0, dst_gap=0)
        col = y if c0 == 0 else arith.AddIOp(y, nir.index_const(c0)).result
        if self.epilogue is not None:
            self.epilogue.emit(ub32, Piece(ops.prefix, col, x, cols, m))
            return
        out = ub32
        if convert:
            out = nir.alloc([cols, m, frac, frac], ops.out_type, "ub")
            self.convert(ub32, out, cols * m * frac * frac)
        dst = nir.subview(ops.c, ops.prefix + [col, x, 0, 0],
                          [1] * len(ops.prefix) + [cols, m, frac, frac])
        copy_bursts("cce.copy_ub_to_gm", out, dst, cols, self.target.blocks(m * out_blk),
                    dst_gap=self.target.blocks((ops.c_pitch - m) * out_blk))

    def convert(self, src: ir.Value, dst: ir.Value, elements: int) -> None:
        """f32 -> f16 with vconv over whole repeats (elements is a multiple of 256)."""
        t = self.target
        lanes = t.lanes(4)
        unit = t.vector_block_bytes
        repeats = elements // lanes
        assert repeats * lanes == elements
        flat_src = memref.CollapseShapeOp(
            ir.MemRefType.get([elements], nir.memref_type(src).element_type, None,
                              nir.memref_type(src).memory_space), src, [[0, 1, 2, 3]]).result
        flat_dst = memref.CollapseShapeOp(
            ir.MemRefType.get([elements], nir.memref_type(dst).element_type, None,
                              nir.memref_type(dst).memory_space), dst, [[0, 1, 2, 3]]).result
        for first in range(0, repeats, t.max_repeat):
            rep = min(t.max_repeat, repeats - first)
            e0 = first * lanes
            s = nir.subview(flat_src, [e0], [elements - e0])
            d = nir.subview(flat_dst, [e0], [elements - e0])
            nir.create_op("cce.vconv", [d, s], repeat=rep, mask=lanes, dst_blk_stride=1,
                          dst_rep_stride=lanes * 2 // unit, src_blk_stride=1,
                          src_rep_stride=lanes * 4 // unit, round_mode="rint")
