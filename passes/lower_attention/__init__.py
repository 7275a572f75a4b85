"""npu-lower-attention: each `npu.attention` group (from `npu-fuse-attention`)
-> one cce kernel in which the scores never leave the chip.

A step is one (query tile, key tile) pair (`query_rows` x `key_rows` of the
group's plan). Each step has four stages:
  load: K^T tile GM -> L1 -> L0B (and the Q tile -> L0A on a query tile's
    first step; the next query tile's Q -> L1 on its last), mad: scores ->
    L0C (a slot); V's tile -> L1 (a slot) with a column block of ones (one
    tile per head: V first, and on to L0B with Q and K);
  soft: scores L0C -> UB (Nz: one [rows, 16] f32 slab per 16 keys, so row
    operations are slab-wise); padded keys of the last tile get -inf (a
    bias slab; f16 softmax: -65504); row max: slabs folded with vmax onto up to four slabs at
    once, one vcmax per row; online softmax: m' = max(m, tile max),
    alpha = exp(scale * (m - m')); -scale * max broadcast over 16 lanes by
    vnchwconv, then scale * s - scale * max per slab in f32 (one vmadd
    with the scale's constant block); P = exp(shifted) in f16 (vconv,
    vexp: half the repeats of f32) -> L1 (a slot);
  pv: V -> L0B (unless there already), P -> L0A, mad: P.V -> L0C (a
    slot); the ones column makes its last column block the row sums of
    the f16 P, in f32; a key tile whose K^T and V do not fit L0B together
    runs Q.K^T and P.V in chunks of keys (`key_scores`, `chunked_pv`);
  drain: P.V -> UB, the context O = O * alpha + P.V (the first tile writes
    O directly; the row sums ride along); on a query tile's last step,
    O / sum per row stored once to GM (one burst per row and 16 columns;
    with an absorbed cast + fractalize, cast to f16 and one burst per
    column block into the Nz A operand of the next matmul).
The steps are software-pipelined (`_Kernel.skewed`): every pipe runs its
queue in program order, so step k is soft(k), load(k+1), pv(k), drain(k-1).
One tile per head: the heads are the steps (with the f32 casts of Q, K, V
absorbed: loaded during the previous softmax, cast and laid out on chip;
Q's, K's, V's L1 tiles and V's L0B tile in two slots);
query tiles that divide the sequence: a head's (query, key) tiles are the
steps; otherwise each query tile's key tiles are. The cube builders
(L1 -> L0 block reorder, mad) are `npu-lower-matmul`'s, the vector
instructions the `Compute` recipes of `npu.costmodel.vector.recipes`.

Modules: this one holds the pass and the kernel's structure (steps,
stages, slots); `schedules` the three orders of steps (one tile per head,
alike query tiles, uneven query tiles); `operands` the Q, K, V tiles in L1;
`softmax` the vector work of a step and the context; `softmax_f16` the
softmax in f16 (`softmax = "f16"` in the attribute); `key_mask` and
`scores_mask` the additive masks on the scores.
"""

from __future__ import annotations

import math
from typing import Callable

from mlir import ir

from npu.costmodel.attention import pattern as att, plan as cost, projection as proj
from npu.costmodel.attention.nz_out import absorb_nz_out
from npu.costmodel.fusion import epilogue
from npu import ir as nir
from npu.costmodel.attention.plan import run_tile
from npu.kernels.cce_build import Index, View, core_part, lin
from npu.passes.base import DOUBLE_BUFFER_ATTR, Option, Pass, PassError
from npu.passes.patterns import ATTENTIONS
from npu.costmodel.attention.flat_runs import FLAT_RUNS_ATTR
from npu.passes.lower_attention.flat_runs import FlatRuns
from npu.passes.lower_attention.key_mask import KeyMask
from npu.passes.lower_attention.nan_guard import NanGuard
from npu.passes.lower_attention.operands import OperandTiles
from npu.passes.lower_attention.projected_tiles import ProjectedTiles
from npu.passes.lower_attention.projection import ProjectedHeads
from npu.passes.lower_attention.schedules import TileSchedules
from npu.passes.lower_attention.scores_mask import ScoresMask
from npu.passes.lower_attention.softmax import SoftmaxSteps
from npu.passes.lower_attention.softmax_f16 import HalfSoftmax
from npu.passes.lower_matmul import LowerMatmul

BODY_OPS = ("memref.alloc", "scf.yield") + nir.VIEW_OPS


class LowerAttention(Pass):
    name = "npu-lower-attention"
    acts_on = ATTENTIONS  # every option: the program has one
    summary = "Lower npu.attention groups to one cube + vector kernel each (scores on chip)"
    options = (
        Option("row-max", str, "auto", "the last step of a tile's row max: 'vcmax' (one 16-lane "
               "repeat per row), 'transpose' (vnchwconv to key-major, then a halving tree of "
               "full-width vmax) or 'auto' (the cheaper by the target's vector costs)",
               choices=("auto", "vcmax", "transpose")),
        Option("head-scope", bool, True, "with the projection and one tile a head: a head's "
               "jobs in one scope, on L0 sub-step slots taken by turns across them, and the "
               "last head's V jobs after its Q.K^T when its softmax gains by overlapping them "
               "(false: a scope per job's mads)"),
    )

    def run(self, module: ir.Operation) -> None:
        regions = nir.walk_held(module, lambda o: o.name == "scf.execute_region"
                                and att.ATTENTION_ATTR in o.attributes)
        for region in regions:
            _Kernel(self, region).emit()
            region.erase()


class _Kernel(OperandTiles, SoftmaxSteps, HalfSoftmax, NanGuard, KeyMask, ScoresMask,
              TileSchedules, ProjectedHeads, ProjectedTiles, FlatRuns):
    def __init__(self, p: LowerAttention, region: ir.Operation):
        self.p, self.region, self.t = p, region, p.target
        body = [o.operation for o in region.regions[0].blocks[0].operations]
        first = next((o for o in body if o.name == "ascend.batch_matmul"), None)
        if first is None:
            raise PassError("npu.attention group without a batch_matmul", region)
        # The Q/K/V projection's epilogue group (npu-fuse-attention-projection).
        nested = [o for o in body if o.name == "scf.execute_region"
                  and epilogue.EPILOGUE_ATTR in o.attributes]
        if len(nested) > 1 or bool(nested) != (proj.PROJECTION_ATTR in region.attributes):
            raise PassError(f"npu.attention group with {len(nested)} matmul epilogue group(s) "
                            f"needs {proj.PROJECTION_ATTR} exactly when it holds one", region)
        users = att.users_of(body)
        found = att.match(first, users, any_seq=bool(nested))
        if isinstance(found, str):
            raise PassError(f"npu.attention group is not an attention: {found}", region)
        if any(o.name == "ascend.fractalize" and o not in found.members for o in body):
            absorb_nz_out(found, users)  # the context's f16 Nz store
        extra = [o for o in body if o.name not in BODY_OPS and o not in found.members
                 and o not in nested]
        if extra:
            raise PassError(f"npu.attention group holds '{extra[0].name}', not a member", region)
        self.a = found
        self.mm = LowerMatmul(self.t)
        if nested:
            self.bind_projection(nested[0], nir.dict_attr_items(
                region.attributes[proj.PROJECTION_ATTR]))
        attrs = nir.dict_attr_items(region.attributes[att.ATTENTION_ATTR])
        s1, d1 = found.seq_blocks, found.d_blocks
        self.qb, self.kb = attrs["query_rows"] // 16, attrs["key_rows"] // 16
        if not (0 < self.qb <= min(s1, cost.MAX_Q_BLOCKS) and 0 < self.kb <= s1
                and attrs["query_rows"] % 16 == 0 and attrs["key_rows"] % 16 == 0):
            raise PassError(f"npu.attention tile {attrs['query_rows']} x {attrs['key_rows']} "
                            f"is not whole 16-row blocks within seq {found.seq}", region)
        # npu-split-cores cut the query rows into runs over the cores: this
        # core's run (its blocks, and its first block from the block index).
        self.flat: tuple[int, ir.Value] | None = None  # (runs, this core's): `FlatRuns`
        self.q_run = self.query_run(region, s1)
        if self.q_run is not None:
            self.qb = run_tile(self.qb, self.q_run[0])
        need = cost.footprint(self.qb, self.kb, d1, found.staged,
                              s1 <= min(self.qb, self.kb), found.nz_out, self.t, found.guard,
                              **cost.mask_room(found, attrs.get("softmax", "f32")))
        if self.pp is not None:
            need = proj.footprint(found, self.qb, self.kb, self.projection, self.pp, need)
        for space, nbytes in need.items():
            if nbytes > self.t.capacity(space):
                raise PassError(f"npu.attention tile needs {nbytes} bytes of {space}, more than "
                                f"its {self.t.capacity(space)}", region)
        self.need = need  # the footprint model's bytes per buffer
        self.lanes = self.t.lanes(4)
        self.deferred: list[Callable[[], None]] | None = None
        # f16 tiles staged through UB, laid out once the loads behind them are
        # issued (`joint_staged`), while a list
        self.joint_layouts: list[Callable[[], None]] | None = None
        self.wides: list[ir.Value] = []  # f32 staging given by `head_pipeline`, in order
        # Of them, those the heads share (`lasting`) and those whose padding
        # past the sequence is zero already (`zeroed`, see `lay_out`).
        self.lasting: list[ir.Value] = []
        self.zeroed: list[ir.Value] = []
        # Scale the f32 scores before the max only when it does not commute
        # with it (a negative scale). Otherwise the scale rides on the shift
        # by the row max (`scale_p`: one f32 vmadd per slab in place of the
        # vsub, no pass over P; the padded keys are clamped after it, so
        # exp(-F16_MASKED) vanishes whatever the scale). Measured against
        # scaling Q's f16 tile (a power-of-two scale, exact in f16) on its
        # way to L1: 1.4k cycles less in BERT at seq 512, 20k for 12 heads
        # of 1024, 0.7k for 12 heads of 128 with Q cast on chip.
        # A key mask added after the scale: the scores are scaled first too.
        self.prescale = found.scale < 0 or ((found.mask_scaled or found.bias_scaled)
                                            and found.scale != 1.0)
        self.nz_slabs: list[ir.Value] | None = None  # UB of the f16 context slabs (`store_nz`)
        self.scale_p = not self.prescale and found.scale != 1.0
        self.scale_block: View | None = None  # the scale's block (`scale_p`), of `elem`
        # The softmax's precision (`npu.costmodel.attention.pattern.SOFTMAX_PRECISIONS`; IR from
        # before the option: f32): the element type of the scores in UB.
        self.elem = attrs.get("softmax", "f32")
        if self.elem not in att.SOFTMAX_PRECISIONS:
            raise PassError(f"npu.attention softmax '{self.elem}' is not one of "
                            f"{', '.join(att.SOFTMAX_PRECISIONS)}", region)
        self.granule = self.t.granule("ub")
        self.row_max_mode = p.row_max  # `row_reduce`'s last step (`transposed_fold`)
        self.one_head_scope = p.head_scope  # (`head_pipeline`)
        self.parity = 0  # of the head of the stage being emitted (`skewed`)

    def query_run(self, region: ir.Operation, s1: int) -> tuple[int, Index] | None:
        """(query blocks, first query block) of this core's run when
        npu-split-cores cut the queries over the cores (`nir.CORE_PART_ATTR`
        on the group), else None."""
        found = core_part(region, "npu-lower-attention")
        if found is None:
            return None
        runs, run = found
        if (FLAT_RUNS_ATTR in region.attributes and (self.a.seq % 16 == 0 or self.a.nz_out)
                and self.pp is None):
            self.flat = found  # (the heads' row blocks in order, cut over the cores)
            return None
        if self.a.seq % 16 or s1 % runs or self.pp is not None:
            raise PassError(f"npu-lower-attention: {nir.CORE_PART_ATTR}: {runs} runs of query "
                            f"rows need a seq of whole 16-row blocks that they divide "
                            f"(seq {self.a.seq}) and no projection in the kernel", region)
        with region.location, ir.InsertionPoint(region):
            return s1 // runs, lin((run, s1 // runs))

    # -- structure ------------------------------------------------------------
    def emit(self) -> None:
        a = self.a
        with self.region.location, ir.InsertionPoint(self.region):
            self.flat_out = nir.flatten_memref(a.out)
            if self.scale_p:
                self.scale_block = self.constant_block(a.scale, self.elem)
            self.prepare_key_mask()
            if self.pp is not None:
                self.projection_prologue()
            if self.flat is not None:
                self.flat_runs(*self.flat)
            elif self.q_run is not None:
                self.head_tiles(*self.q_run)
            elif a.seq_blocks <= min(self.qb, self.kb):
                self.head_pipeline()
            elif a.seq_blocks % self.qb == 0 or (self.pp is None and cost.overlapped(a, self.qb)):
                self.head_tiles()
            elif self.pp is not None:
                self.projected_heads()
            else:
                self.loop(a.heads, lambda h: self.query_tiles(h))

    def loop(self, count: int, body: Callable, double_buffer: bool = True) -> None:
        """`body(i)` in an scf.for, also for one trip: the memory planner
        scopes a buffer by the loop it is allocated in, so the tiles emitted
        one after another never hold their buffers at once."""
        loop = nir.for_loop(0, count)
        loop.operation.attributes[DOUBLE_BUFFER_ATTR] = ir.BoolAttr.get(double_buffer)
        with ir.InsertionPoint(loop.body):
            body(loop.induction_variable)
            nir.yield_()

    def skewed(self, n: int, load: Callable, soft: Callable, pv: Callable, drain: Callable,
               late: Callable | None = None, inner: int = 1, peel: int = 2,
               pairs: bool = False) -> None:
        """Steps (k, j), k in 0..n-1 and j in 0..inner-1 in that order, each in
        four stages: `load` (operands on chip and Q.K^T), `soft` (the
        softmax, P to L1), `pv` (P.V) and `drain` (the context), emitted
        software-pipelined: a step is soft(s), load(s+1), pv(s), drain(s-1)
        and `late(s+1)` (what load(s+1) leaves for later, if anything).
        Each pipe runs its queue in program order, so the vector unit stays
        on step s's softmax while the cube computes Q.K^T of step s+1 (ahead
        of P.V of step s in its queue) and the movers bring step s+1's
        operands. What a stage leaves for the next one (scores, P, V's tile,
        P.V, alpha) is in two slots by the step's parity, allocated by the
        caller. A stage gets (step, slot); the step is k when `inner` is 1,
        else (k, j); k is an int, or an index inside the loop over the
        middle k (`peel` <= k < n - `peel`: 2 when the first and last k
        differ from the others, so the neighbours of a middle k are middle
        ones; 1 when every k is alike), which covers one k per iteration
        when `inner` is even, else two, so that every slot is static;
        `pairs`: always two, so that the parity of k is static too (a
        stage finds it in `self.parity`: buffers by head, the projected
        tiles)."""
        def at(k, j: int):
            return k if inner == 1 else (k, j)

        def shift(k, by: int):
            return k + by if isinstance(k, int) else lin((k, 1), (by, 1))

        def step(k, parity: int, j: int) -> None:
            slot = (parity * inner + j) % 2
            after = at(k, j + 1) if j + 1 < inner else at(shift(k, 1), 0)
            after_parity = parity if j + 1 < inner else 1 - parity
            ahead = not (isinstance(k, int) and k == n - 1 and j == inner - 1)
            self.parity = parity
            soft(at(k, j), slot)
            if ahead:
                self.parity = after_parity
                load(after, 1 - slot)
            self.parity = parity
            pv(at(k, j), slot)
            if not (isinstance(k, int) and k == 0 and j == 0):
                self.parity = parity if j else 1 - parity
                drain(at(k, j - 1) if j else at(shift(k, -1), inner - 1), 1 - slot)
            if ahead and late is not None:
                self.parity = after_parity
                late(after, 1 - slot)

        def outer(k, parity: int) -> None:
            for j in range(inner):
                step(k, parity, j)

        self.parity = 0
        load(at(0, 0), 0)
        if late is not None:
            late(at(0, 0), 0)
        k = 0
        while k < min(n, peel):
            outer(k, k % 2)
            k += 1
        group = 1 if inner % 2 == 0 and not pairs else 2
        rounds = max(0, n - 2 * peel) // group
        if rounds:
            self.loop(rounds, lambda p: [outer(lin((p, group), (peel + g, 1)), (peel + g) % 2)
                                         for g in range(group)], double_buffer=False)
            k += group * rounds
        while k < n:
            outer(k, k % 2)
            k += 1
        self.parity = (n - 1) % 2
        drain(at(n - 1, inner - 1), ((n - 1) * inner + inner - 1) % 2)

    def slots(self, mq: int, kbk: int, online: bool, v: bool = True) -> dict[str, list[ir.Value]]:
        """The two slots of what a step's stages hand on (see `skewed`);
        alpha only with several key tiles (online softmax); V's tile unless
        V stays in L1 (`head_tiles`); the tile of a mask of the scores (unless it
        stays whole in UB)."""
        d1, rows = self.a.d_blocks, mq * 16
        # With the projection's C pieces beside them, the scores may have one
        # slot (`ProjPlan.scores_slots`): a step's Q.K^T then follows the
        # projection's mads in the cube's queue, long after the softmax
        # before it moved its scores out.
        scores = [nir.alloc([kbk, mq, 16, 16], "f32", "l0c")
                  for _ in range(2 if self.pp is None else self.pp.scores_slots)]
        return {"scores": [scores[0], scores[-1]],
                "pv": [nir.alloc([d1 + 1, mq, 16, 16], "f32", "l0c") for _ in range(2)],
                "v": [nir.alloc([d1 + 1, kbk, 16, 16], "f16", "l1") for _ in range(2 * v)],
                "p": [nir.alloc([kbk, mq, 16, 16], "f16", "l1") for _ in range(2)],
                "alpha": [nir.alloc([rows], "f32", "ub") for _ in range(2 * online)],
                "mask": self.mask_slots(mq, kbk)}

    def nz_staging(self, q_blocks: int) -> None:
        """A set of f16 slabs of the context on their way to the Nz output,
        next to the context (never placed over a step's buffers: the next
        tile's scores, copied from L0C right after, do not wait for their
        stores to GM)."""
        if self.a.nz_out:
            self.nz_slabs = [nir.alloc([q_blocks * 256], "f16", "ub")
                             for _ in range(self.a.d_blocks)]

    # -- the stages of one key tile ---------------------------------------------
    def scores_and_v(self, h, q0, mq: int, y0, kbk: int, buf: dict, slot: int,
                     k1: ir.Value | None = None) -> None:
        """Keys y0.. (kbk blocks): Q.K^T into the slot's scores (of `k1`,
        K's tile loaded already, else loaded here), V's tile (with its ones
        column) into the slot's L1 tile."""
        k1 = self.load_k(h, y0, kbk) if k1 is None else k1
        self.key_scores(q0, k1, self.prefix(buf["scores"][slot], kbk), mq, kbk)
        self.load_v(h, y0, kbk, buf["v"][slot])

    def key_scores(self, q0: ir.Value, k1: ir.Value, scores: ir.Value, mq: int,
                   kbk: int, y0=0) -> None:
        """Q.K^T of `load_k`'s tile `k1` (kbk key blocks from key block `y0`,
        an int or an index: a head's whole K tile) into `scores`: one mad,
        or, for a tile whose K^T and V do not fit L0B together
        (`npu.costmodel.attention.plan.key_chunks`), one per chunk of keys: the
        chunks of K^T alternate between two L0B buffers (the next chunk
        loads while the cube multiplies this one), each mad writing its
        chunk's column blocks of the scores."""
        d1 = self.a.d_blocks
        sizes = cost.key_chunks(kbk, d1, self.t)
        if len(sizes) == 1:
            self.mm.mad(q0, self.k_to_l0b(k1, kbk), scores, mq, d1, kbk, False)
            return
        ld = nir.memref_shape(k1)[1]
        static = isinstance(y0, int)
        first, base = (y0, None) if static else (0, y0)
        pair = [nir.alloc([d1 * sizes[0], 16, 16], "f16", "l0b") for _ in range(2)]
        c0 = 0
        for i, c in enumerate(sizes):
            k0 = nir.subview(pair[i % 2], [0, 0, 0], [d1 * c, 16, 16])
            if self.a.k_as_rows:  # K^T block (j, l) at j * ld + l: a run of c per row j
                for j in range(d1):
                    self.mm.reorder_blocks(k1, self.mm.block_view(k0, j * c, d1 * c), rows=1,
                                           cols=c, transpose=False,
                                           op_name="cce.load_l1_to_l0b",
                                           src_first=j * ld + first + c0, src_col_stride=1,
                                           src_base=base)
            else:  # Nz of K^T: block (j, l) at l * ld + j
                self.mm.reorder_blocks(k1, k0, rows=d1, cols=c, transpose=True,
                                       op_name="cce.load_l1_to_l0b", src_first=c0 * ld,
                                       src_col_stride=ld)
            self.mm.mad(q0, k0, nir.subview(scores, [c0, 0, 0, 0], [c, mq, 16, 16]), mq, d1, c,
                        False)
            c0 += c

    def probs(self, mq: int, kbk: int, buf: dict, slot: int, first: bool, masked: bool,
              key0=0) -> None:
        """The softmax step of the slot's scores (keys from key block
        `key0`; the slot's tile of a mask of the scores), P into the slot's L1 tile."""
        alpha = None if first else buf["alpha"][slot]
        self.mask_tile, self.mask_slot = (buf["mask"][slot] if buf["mask"] else None), slot
        self.softmax_tile(self.prefix(buf["scores"][slot], kbk), self.prefix(buf["p"][slot], kbk),
                          mq, kbk, alpha, masked, key0)

    def pv(self, mq: int, kbk: int, buf: dict, slot: int, v1: ir.Value | None = None,
           v0: ir.Value | None = None) -> None:
        """P -> L0A, P.V (and the row sums) into the slot's P.V; V's tile is
        the slot's or `v1`, already in L0B when `v0` is given. Wider than
        L0B can hold with K^T (`key_chunks`): one accumulating mad per chunk."""
        if v0 is None and len(cost.key_chunks(kbk, self.a.d_blocks, self.t)) > 1:
            self.chunked_pv(mq, kbk, buf["p"][slot], v1 if v1 is not None else buf["v"][slot],
                            buf["pv"][slot])
            return
        if v0 is None:
            v0 = nir.alloc([kbk, self.a.d_blocks + 1, 16, 16], "f16", "l0b")
            self.v_to_l0b(v1 if v1 is not None else buf["v"][slot], kbk, v0)
        p1 = buf["p"][slot]  # blocks viewed whole: a prefix view would be strided
        p0 = nir.alloc([mq, kbk, 16, 16], "f16", "l0a")
        self.mm.reorder_blocks(self.mm.flat_blocks(p1, math.prod(nir.memref_shape(p1)[:2])), p0,
                               rows=mq, cols=kbk, transpose=False, op_name="cce.load_l1_to_l0a",
                               src_col_stride=mq)
        self.mm.mad(p0, v0, buf["pv"][slot], mq, kbk, self.a.d_blocks + 1, False)

    def chunked_pv(self, mq: int, kbk: int, p1: ir.Value, v1: ir.Value,
                   out: ir.Value, y0=0) -> None:
        """P.V as a sum over the chunks of keys (`key_chunks`), accumulated
        in L0C; each chunk's V and P blocks alternate between two L0B and two
        L0A buffers. `y0`: V's first key block in `v1` (an int or an index:
        a head's whole V tile)."""
        d1, p_blocks = self.a.d_blocks, math.prod(nir.memref_shape(p1)[:2])
        sizes = cost.key_chunks(kbk, d1, self.t)
        static = isinstance(y0, int)
        first, base = (y0, None) if static else (0, y0)
        vs = [nir.alloc([sizes[0] * (d1 + 1), 16, 16], "f16", "l0b") for _ in range(2)]
        ps = [nir.alloc([mq * sizes[0], 16, 16], "f16", "l0a") for _ in range(2)]
        c0 = 0
        for i, c in enumerate(sizes):
            v0 = nir.subview(vs[i % 2], [0, 0, 0], [c * (d1 + 1), 16, 16])
            self.mm.reorder_blocks(v1, v0, rows=c, cols=d1 + 1, transpose=True,
                                   op_name="cce.load_l1_to_l0b", src_first=first + c0,
                                   src_col_stride=nir.memref_shape(v1)[1], src_base=base)
            p0 = nir.subview(ps[i % 2], [0, 0, 0], [mq * c, 16, 16])
            self.mm.reorder_blocks(self.mm.flat_blocks(p1, p_blocks), p0, rows=mq, cols=c,
                                   transpose=False, op_name="cce.load_l1_to_l0a",
                                   src_first=c0 * mq, src_col_stride=mq)
            self.mm.mad(p0, v0, out, mq, c, d1 + 1, c0 > 0)
            c0 += c

    def v_to_l0b(self, v1: ir.Value, kbk: int, v0: ir.Value) -> None:
        """V's L1 tile (with its ones column) -> `v0` in L0B (Zn)."""
        self.mm.reorder_blocks(v1, v0, rows=kbk, cols=self.a.d_blocks + 1, transpose=True,
                               op_name="cce.load_l1_to_l0b", src_col_stride=nir.memref_shape(v1)[1])

    @staticmethod
    def prefix(buf: ir.Value, blocks: int) -> ir.Value:
        """The first `blocks` column blocks of an Nz buffer (contiguous)."""
        shape = nir.memref_shape(buf)
        if shape[0] == blocks:
            return buf
        return nir.subview(buf, [0] * len(shape), [blocks] + shape[1:])

    def scope(self, body: Callable[[], None]) -> None:
        self.loop(1, lambda _: body())
