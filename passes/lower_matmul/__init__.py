"""npu-lower-matmul: ascend.matmul / ascend.batch_matmul -> cce loops (thesis 6.4.1).

A: M x N (Nz in GM as [N1, M1, 16, 16]), B: N x K ([K1, N1, 16, 16]),
C = A x B: M x K ([K1, M1, 16, 16]); N is the reduction, tiles are (m, n, k)
and chosen by the cost model in `npu.costmodel.matmul.tiling` unless given.

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

Modules: this one holds the pass (options, checks, dispatch); `simple` the
loop nests above, `pipelined` the pipelined OS schedule and `plan` its
plan (chunks, sub-steps, C pieces), `blocks` the tile loops and GM/L1/L0/UB
builders both use (and `npu-lower-attention` reuses).
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.dialects.ascend_int8 import is_int8_matmul, matmul_blocks
from npu.costmodel.matmul.fitting import MatmulShape
from npu.costmodel.matmul.residency import make_choice
from npu.costmodel.matmul.tiling import STRATEGIES, TilingError, choose_tiling
from npu.passes.applies import MANY_CORES, MATMULS
from npu.passes.base import Option, Pass, PassError
from npu.costmodel.matmul.pipelined import STAGED_DRAIN_TILES, Drain
from npu.target import Target
from npu.passes.lower_matmul.chain import ChainedTensors
from npu.passes.lower_matmul.blocks import (IndexValue, MatmulBlocks, Operands, Segment,
                                            block_pitch, segments)
from npu.passes.lower_matmul.pipelined import PipelinedSchedule
from npu.passes.lower_matmul.row_strips import RowStripsSchedule
from npu.passes.lower_matmul.col_strips import ColStripsSchedule
from npu.passes.lower_matmul.last_chunk import LastChunkSchedule
from npu.passes.lower_matmul.plan import PipelinedPlan, PipelinedPlanning
from npu.passes.lower_matmul.simple import SimpleSchedule
from npu.passes.matmul_epilogue import MatmulEpilogue, group_of

STRATEGY_CHOICES = STRATEGIES + ("auto",)

__all__ = ["STRATEGY_CHOICES", "LowerMatmul", "MatmulBlocks", "Operands", "PipelinedPlan",
           "Segment", "block_pitch", "segments"]


def _many_cores(op: ir.Operation) -> bool:
    """The op is in a kernel launched on several cores, where a matmul is
    one C tile a core and column strips overlap its drain with the next
    row tile's loads. On one core the estimate's 5% did not hold (a 256 x
    512 x 256 matmul: 56,355 cycles as one tile, 56,581 in strips)."""
    func = nir.enclosing_function(op)
    return func is not None and nir.block_dim(func) > 1


class LowerMatmul(SimpleSchedule, RowStripsSchedule, ColStripsSchedule, LastChunkSchedule,
                  PipelinedSchedule,
                  PipelinedPlanning, MatmulBlocks, ChainedTensors, Pass):
    name = "npu-lower-matmul"
    summary = "Lower ascend.matmul/batch_matmul to tiled cce loops (OS/IS/WS, cost-model tiles)"
    handles = MATMULS.ops
    acts_on = MATMULS  # every option: the program has one
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
               "(0: the largest divisor of N whose A and B chunks fit L1 twice)", low=0,
               needs=(("schedule", "pipelined"),)),
        Option("c-pieces", int, 0, "schedule=pipelined: L0C pieces the C tile is split into "
               "along k, each drained as soon as its last mad is done (0: auto)", low=0,
               needs=(("schedule", "pipelined"),)),
        Option("c-piece-rows", int, 0, "schedule=pipelined: rows of the grid of C pieces "
               "(c-pieces / c-piece-rows along k); 0: the split with the largest mads "
               "(square pieces of a tall tile: 2 x 2 of a 256x256 one), 1: whole-height "
               "column slabs", low=0, needs=(("schedule", "pipelined"),)),
        Option("staged-drain", int, STAGED_DRAIN_TILES, "schedule=pipelined with an "
               "epilogue: with at least this many C tiles, each piece moves L0C -> UB on its "
               "own before the "
               "epilogue, so the next tile's mads refill it during the vector work (0: never)",
               low=0, needs=(("schedule", "pipelined"),)),
        Option("resident-a", bool, True, "schedule=pipelined: keep A's row strip in L1 "
               "across the column tiles when the cost model finds room (A read once; only "
               "B streams)", needs=(("schedule", "pipelined"),)),
        Option("timed-residency", bool, True, "schedule=pipelined with resident-a: choose "
               "between A's strip resident and streamed, and the strip's C tile width, by the "
               "schedule's time estimate "
               "(`npu.costmodel.matmul.residency.resident_or_streamed`: narrower tiles "
               "of a resident strip drain less after the last mad; a strip that leaves less "
               "than (m + k) x N of L1 streams B in smaller chunks); false: the streaming "
               "search's tiles with the strip resident where (m + k) x N fits L1",
               needs=(("schedule", "pipelined"), ("resident-a", True))),
        Option("col-strips", str, "auto", "schedule=pipelined: a C of one tile may run as row "
               "tiles with B's column strip resident (`npu.costmodel.matmul.col_strips`), when "
               "estimated 5% faster: auto = in kernels launched on several cores (one C tile a "
               "core, whose drain the strips overlap), true = on one core too, false = never",
               choices=("auto", "true", "false"),
               needs=(("schedule", "pipelined"),)),
        Option("drain-convert", bool, True, "with an epilogue whose C is f16: the L0C -> "
               "UB move rounds the accumulator to f16 itself (cce.copy_l0c_to_ub convert = "
               "\"f32_to_f16\") instead of a vconv after it, and the pieces land in two UB "
               "buffers by turns (`landing_slots`): BERT layer 398.5k -> 392.2k cycles at "
               "seq 128, 1.678M -> 1.673M at 512 (one shared or fresh buffer per piece "
               "was slower than the vconv: V waited for each piece's store)"),
        Option("last-chunk-parts", bool, True, "schedule=pipelined: a core's one C tile on "
               "a chip with a light drain and host-constant B streams A as every chunk but "
               "the last in one copy, then the last chunk in shrinking parts "
               "(`npu.costmodel.matmul.col_strips.last_chunk_parts`), each waited for on its "
               "own: the mads after the last copy lands are one sub-step's (BERT seq 128 on "
               "32 cores, ffn_out's phase 10,094 -> 9,390 cycles)",
               needs=(("schedule", "pipelined"), MANY_CORES)),
        Option("b-ahead", bool, True, "schedule=pipelined: a core's one C tile over the "
               "whole reduction with host-constant B (npu-prefetch loads it before the "
               "barrier) loads each sub-step's B into L0B ahead of its A, and npu-prefetch "
               "drops the loop's guarded later-iteration copies (`npu.b_ahead`): the first "
               "mad waits for A's copy alone (BERT seq 128 on 32 cores, ffn_in + GELU's "
               "phase 6,615 -> 6,519 cycles)",
               needs=(("schedule", "pipelined"), MANY_CORES)),
        Option("drain-order", str, "after-mads", "schedule=pipelined: where each C piece's "
               "drain sits in the loop body: after every piece's mads of the chunk (drains "
               "side by side: npu-plan-memory keeps consecutive pieces' UB apart) or right "
               "after its own piece's mads", ("after-mads", "per-piece"),
               needs=(("schedule", "pipelined"),)),
    )

    def run(self, module: ir.Operation) -> None:
        chained = self.bind_chains(module)
        self.lower_each(module)
        self.release_chains(chained)

    # ------------------------------------------------------------------ analysis

    def shape_of(self, op: ir.Operation) -> tuple[MatmulShape, int, int, int, int]:
        """Checks the operands (PassError at the op) and returns the model's
        shape. Sets the cube types (`reduction_block`, `acc_type`): an int8
        matmul (i8 x i8 -> i32) has 16 x 32 A and 32 x 16 B fractals.

        The cost model sees an int8 matmul as the f16 one with the same
        fractal grid: an int8 fractal holds 512 bytes like an f16 one and a
        16x16x32 int8 block product takes the cycles of a 16x16x16 f16 one
        (`Target.cube_cycles_int8`), so bytes moved, buffer sizes and cube
        cycles are the same block for block; its N counts 16 per reduction
        block."""
        batched = op.name == "ascend.batch_matmul"
        rank = 5 if batched else 4
        frac = self.target.fractal
        if len(op.operands) != 3:
            raise PassError(f"expects 3 operands (A, B, C), got {len(op.operands)}", op)
        names = ("A", "B", "C")
        for name, v in zip(names, op.operands):
            if not nir.is_memref(v.type):
                raise PassError(f"operand {name} must be a memref, got {v.type}", op)
            if nir.memory_space(v) != "gm":
                raise PassError(f"operand {name} must be in 'gm', got '{nir.memory_space(v)}'", op)
        types = [nir.memref_element(v) for v in op.operands]
        a_t, b_t, c_t = types
        if is_int8_matmul(types):
            self.reduction_block, self.acc_type = self.target.fractal_k_int8, "i32"
        elif a_t != "f16" or b_t != "f16":
            raise PassError(f"A and B must be f16 (C f32 or f16), or i8 (C i32), got {a_t} and "
                            f"{b_t}", op)
        elif c_t not in ("f16", "f32"):
            raise PassError(f"C must be f32 or f16, got {c_t}", op)
        else:
            self.reduction_block, self.acc_type = 0, "f32"
        shapes = []
        for name, v, block in zip(names, op.operands, matmul_blocks(types, self.target)):
            shape = nir.memref_shape(v)
            if len(shape) != rank or shape[-2:] != list(block):
                kind = "batch " if batched else ""
                raise PassError(f"operand {name} of {kind}matmul must be a fractal (Nz) memref "
                                f"[{'batch, ' if batched else ''}blocks, blocks, {block[0]}, "
                                f"{block[1]}], got {v.type}", op)
            shapes.append(shape)
        a, b, c = shapes
        off = 1 if batched else 0
        N1, M1 = a[off], a[off + 1]
        K1, NB1 = b[off], b[off + 1]
        batch = a[0] if batched else 1
        if batched and not (a[0] == b[0] == c[0]):
            raise PassError(f"batch sizes differ: A {a[0]}, B {b[0]}, C {c[0]}", op)
        if NB1 != N1:
            k0 = self.reduction_step()
            raise PassError(f"reduction mismatch: A is {M1 * frac}x{N1 * k0} but B is "
                            f"{NB1 * k0}x{K1 * frac} (Nz blocks A [N1={N1}, M1={M1}], "
                            f"B [K1={K1}, N1={NB1}])", op)
        if c[off:off + 2] != [K1, M1]:
            raise PassError(f"C must be Nz [{K1}, {M1}, {frac}, {frac}] for a {M1 * frac}x"
                            f"{K1 * frac} result, got {op.operands[2].type}", op)
        acc = self.target.fractal_bytes(4) // (frac * frac)
        shape = MatmulShape(M1 * frac, N1 * frac, K1 * frac, batch, in_bytes=2, acc_bytes=acc,
                            out_bytes=nir.element_bytes(c_t))
        return shape, batch, M1, N1, K1

    def model_reduction(self, elements: int, option: str, op: ir.Operation) -> int:
        """An option counting reduction elements (`n`, `l1-chunk`) in the cost
        model's units (see `shape_of`): whole int8 reduction blocks become 16
        each."""
        k0 = self.reduction_block
        if not k0 or not elements:
            return elements
        if elements % k0:
            raise PassError(f"{option}={elements} must be a multiple of {k0} (the int8 "
                            f"reduction block)", op)
        return elements // k0 * self.target.fractal

    def plan_cycles(self, shape: MatmulShape, choice) -> float:
        """The pipelined schedule's time estimate of this plan with its drain."""
        from npu.costmodel.matmul.pipelined import pipelined_time
        from npu.costmodel.matmul.col_strips import col_strips_time
        from npu.costmodel.matmul.row_strips import row_strips_time

        p, t = self.pipelined, choice.traffic
        if p.row_strips:
            return row_strips_time(shape, choice.tiles, p.chunk, self.target,
                                   self.drain_cost(shape))
        if p.col_strips:
            return col_strips_time(shape, p.mb, p.kb, p.chunk, self.target,
                                   self.drain_cost(shape), pieces=p.pieces)
        return pipelined_time(shape.M, shape.N, shape.K, shape.batch, p.mb, p.kb, p.chunk,
                              p.a_resident, t.read_bytes(shape), t.c_writes * shape.acc_bytes,
                              t.write_bytes(shape), self.target, self.drain_cost(shape))

    def drain_cost(self, shape: MatmulShape) -> Drain:
        """What the pipelined schedule's time estimate knows of C's way out
        (`npu.costmodel.matmul.pipelined.Drain`): the epilogue's vector work and stores."""
        if self.epilogue is None:
            return Drain()
        return Drain(self.epilogue.vector_cycles,
                     self.epilogue.store_cycles(shape.M * shape.K * shape.batch), True)

    # ------------------------------------------------------------------ lowering

    def lower(self, op: ir.Operation) -> None:
        group = group_of(op)
        results = [op.operands[2]] + ([] if group is None else [
            o.operands[-1] for o in nir.walk_held(group, lambda o: o.name.startswith("ascend."))])
        target = self.target
        self.target = self.l1_left_target(op, results)
        try:
            self.lower_with_target(op, group, target)
        finally:
            self.target = target

    def lower_with_target(self, op: ir.Operation, group: ir.Operation | None,
                          target_of_op: Target) -> None:
        """`lower` with `self.target` the L1 left beside chained results
        (`target_of_op`: the pass's own target)."""
        shape, batch, M1, N1, K1 = self.shape_of(op)
        chained_a = self.chained_l1(op.operands[0]) is not None
        n_tile = self.model_reduction(self.n, "n", op)
        self.epilogue = MatmulEpilogue(self, group, op) if group is not None else None
        # Tiles are ranked by the pipelined schedule's time unless the drains
        # load operand pieces from GM: those queue in the in-order MTE2 between
        # the A and B chunks, waiting for the previous piece's vector work,
        # which the time estimate does not model (measured on BERT with
        # full-size bias tiles: q_proj 182k pipelined at k=384 vs 162k simple
        # at k=512). Broadcast bias rows are read once, before the loops.
        pipelined = self.schedule == "pipelined" and self.l1_steps == 1 and (
            self.epilogue is None or not self.epilogue.loads_pieces)
        try:
            # A chained A operand is the resident strip: one row of C tiles.
            # With npu-fuse's k: the tiles whose plan it checked.
            choice = choose_tiling(shape, self.target, self.strategy,
                                   shape.M if chained_a else self.m, n_tile,
                                   self.chained_k(op.operands[0]) or self.k,
                                   pipelined=pipelined, epilogue_cycles=(
                                       0 if self.epilogue is None else self.epilogue.vector_cycles),
                                   resident_a=chained_a or (self.resident_a and self.l1_steps == 1),
                                   a_in_l1=chained_a, drain=self.drain_cost(shape),
                                   timed_residency=self.timed_residency,
                                   col_strips=self.col_strips == "true" or (
                                       self.col_strips == "auto" and _many_cores(op)))
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
        if self.schedule == "pipelined" and choice.strategy == "os" and self.l1_steps == 1:
            self.pipelined = self.plan_pipelined(shape, choice, op)
        elif self.schedule == "pipelined":
            self.why_simple = (f"strategy={choice.strategy} (the pipelined schedule is "
                               "output-stationary)" if choice.strategy != "os" else
                               f"l1-steps={self.l1_steps}")
        if chained_a and (self.pipelined is None or not self.pipelined.a_resident):
            raise PassError("its A operand is a chained tensor in L1 (npu.chain), which needs "
                            "the pipelined schedule with A's row strip resident; got "
                            + (self.why_simple or "a plan that streams A")
                            + " (run npu-fuse with chains=false)", op)
        if (choice.a_resident and (self.pipelined is None or not self.pipelined.a_resident)
                or choice.row_strips and (self.pipelined is None
                                          or not self.pipelined.row_strips)
                or choice.col_strips and (self.pipelined is None
                                          or not self.pipelined.col_strips)):
            # No plan keeps the strip (e.g. an explicit l1-chunk it cannot
            # use): A streams, and the traffic says so.
            choice = make_choice(choice.strategy, shape, choice.tiles, self.target)
        self.remark(op, choice.describe(shape)
                    + (f"; {self.l1_steps} reduction steps per L1 copy" if self.l1_steps > 1 else "")
                    + ("; A is a chained tensor already in L1 (its GM read above is not made)"
                       if chained_a else "")
                    + ("; C leaves to L1 (a chained tensor: its write-back above is not to GM)"
                       if self.target is not target_of_op else "")
                    + (self.pipelined.describe(self.target.fractal) if self.pipelined is not None else "")
                    + (f"; simple schedule: no pipelined plan because {self.why_simple}"
                       if self.why_simple else "")
                    + (f"; epilogue ({self.epilogue.e.short}) on each drained piece, "
                       f"{self.epilogue.bytes_per_fractal} bytes of UB per C fractal"
                       if self.epilogue is not None else "")
                    + (f"; estimated {self.plan_cycles(shape, choice):.0f} cycles"
                       if self.pipelined is not None else "")
                    + (f"; int8: the tiles' n and the element counts above count "
                       f"{self.target.fractal} per {self.reduction_block}-element reduction "
                       f"block (bytes are exact)" if self.reduction_block else ""))
        a, b, c = op.operands
        with op.location, ir.InsertionPoint(op):
            if self.epilogue is not None:
                self.epilogue.load_broadcast([0] if op.name == "ascend.batch_matmul" else [])
            ops = Operands(a, b, c, [], M1, N1, K1, ir.MemRefType(a.type).element_type,
                           ir.MemRefType(c.type).element_type, block_pitch(a, op),
                           block_pitch(b, op), block_pitch(c, op))
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
