"""npu-lower-attention: each `npu.attention` group (from `npu-fuse-attention`)
-> one cce kernel in which the scores never leave the chip.

A step is one (query tile, key tile) pair (`query_rows` x `key_rows` of the
group's plan). Each step has four stages:
  load: K^T tile GM -> L1 -> L0B (and the Q tile -> L0A on a query tile's
    first step; the next query tile's Q -> L1 on its last), mad: scores ->
    L0C (a slot); V's tile -> L1 (a slot) with a column block of ones (one
    tile per head: V first, and on to L0B with Q and K);
  soft: scores L0C -> UB (Nz: one [rows, 16] f32 slab per 16 keys, so row
    operations are slab-wise); padded keys of the last tile get -1e30 (a
    bias slab); row max: slabs folded with vmax onto up to four slabs at
    once, one vcmax per row; online softmax: m' = max(m, tile max),
    alpha = exp(scale * (m - m')); -scale * max broadcast over 16 lanes by
    vnchwconv, then scale * s - scale * max per slab in f32 (one vmadd
    with the scale's constant block); P = exp(shifted) in f16 (vconv,
    vexp: half the repeats of f32) -> L1 (a slot);
  pv: V -> L0B (unless there already), P -> L0A, mad: P.V -> L0C (a
    slot); the ones column makes its last column block the row sums of
    the f16 P, in f32;
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
instructions the `Compute` recipes of `npu.vector_compute`.

Modules: this one holds the pass and the kernel's structure (steps,
stages, slots); `operands` the Q, K, V tiles in L1; `softmax` the vector
work of a step and the context.
"""

from __future__ import annotations

import math
from typing import Callable

from mlir import ir

from npu import attention as att
from npu import attention_plan as cost
from npu import ir as nir
from npu.cce_build import View, copy, lin
from npu.passes.base import DOUBLE_BUFFER_ATTR, Pass, PassError
from npu.passes.lower_attention.operands import OperandTiles
from npu.passes.lower_attention.softmax import SoftmaxSteps
from npu.passes.lower_matmul import LowerMatmul

BODY_OPS = ("memref.alloc", "scf.yield") + nir.VIEW_OPS
# Most (query, key) tiles of a head emitted as static steps of one pipeline
# over the heads (`head_tiles`); with more, each head is a pipeline whose
# middle query tiles loop, so the kernel's size stays bounded.
MAX_HEAD_STEPS = 32


class LowerAttention(Pass):
    name = "npu-lower-attention"
    summary = "Lower npu.attention groups to one cube + vector kernel each (scores on chip)"
    options = ()

    def run(self, module: ir.Operation) -> None:
        regions = nir.walk(module, lambda o: o.name == "scf.execute_region"
                           and att.ATTENTION_ATTR in o.attributes)
        for region in regions:
            _Kernel(self, region).emit()
            region.erase()


class _Kernel(OperandTiles, SoftmaxSteps):
    def __init__(self, p: LowerAttention, region: ir.Operation):
        self.p, self.region, self.t = p, region, p.target
        body = [o.operation for o in region.regions[0].blocks[0].operations]
        first = next((o for o in body if o.name == "ascend.batch_matmul"), None)
        if first is None:
            raise PassError("npu.attention group without a batch_matmul", region)
        users = att.users_of(body)
        found = att.match(first, users)
        if isinstance(found, str):
            raise PassError(f"npu.attention group is not an attention: {found}", region)
        if any(o.name == "ascend.fractalize" and o not in found.members for o in body):
            att.absorb_nz_out(found, users)  # the context's f16 Nz store
        extra = [o for o in body if o.name not in BODY_OPS and o not in found.members]
        if extra:
            raise PassError(f"npu.attention group holds '{extra[0].name}', not a member", region)
        self.a = found
        attrs = nir.dict_attr_items(region.attributes[att.ATTENTION_ATTR])
        s1, d1 = found.seq_blocks, found.d_blocks
        self.qb, self.kb = attrs["query_rows"] // 16, attrs["key_rows"] // 16
        if not (0 < self.qb <= min(s1, cost.MAX_Q_BLOCKS) and 0 < self.kb <= s1
                and attrs["query_rows"] % 16 == 0 and attrs["key_rows"] % 16 == 0):
            raise PassError(f"npu.attention tile {attrs['query_rows']} x {attrs['key_rows']} "
                            f"is not whole 16-row blocks within seq {found.seq}", region)
        need = cost.footprint(self.qb, self.kb, d1, found.staged,
                              s1 <= min(self.qb, self.kb), found.nz_out)
        for space, nbytes in need.items():
            if nbytes > self.t.capacity(space):
                raise PassError(f"npu.attention tile needs {nbytes} bytes of {space}, more than "
                                f"its {self.t.capacity(space)}", region)
        self.mm = LowerMatmul(self.t)
        self.lanes = self.t.lanes(4)
        self.deferred: list[Callable[[], None]] | None = None
        self.wides: list[ir.Value] = []  # f32 staging given by `head_pipeline`, in order
        # Scale the f32 scores before the max only when it does not commute
        # with it (a negative scale). Otherwise the scale rides on the shift
        # by the row max (`scale_p`: one f32 vmadd per slab in place of the
        # vsub, no pass over P; the padded keys are clamped after it, so
        # exp(-F16_MASKED) vanishes whatever the scale). Measured against
        # scaling Q's f16 tile (a power-of-two scale, exact in f16) on its
        # way to L1: 1.4k cycles less in BERT at seq 512, 20k for 12 heads
        # of 1024, 0.7k for 12 heads of 128 with Q cast on chip.
        self.prescale = found.scale < 0
        self.nz_slabs: list[ir.Value] | None = None  # UB of the f16 context slabs (`store_nz`)
        self.scale_p = not self.prescale and found.scale != 1.0
        self.scale_block: View | None = None  # the scale's f32 block (`scale_p`)
        self.granule = self.t.granule("ub")

    # -- structure ------------------------------------------------------------
    def emit(self) -> None:
        a = self.a
        with self.region.location, ir.InsertionPoint(self.region):
            self.flat_out = nir.flatten_memref(a.out)
            if self.scale_p:
                self.scale_block = self.constant_block(a.scale)
            if a.seq_blocks <= min(self.qb, self.kb):
                self.head_pipeline()
            elif a.seq_blocks % self.qb == 0:
                self.head_tiles()
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
               late: Callable | None = None, inner: int = 1, peel: int = 2) -> None:
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
        when `inner` is even, else two, so that every slot is static."""
        def at(k, j: int):
            return k if inner == 1 else (k, j)

        def shift(k, by: int):
            return k + by if isinstance(k, int) else lin((k, 1), (by, 1))

        def step(k, parity: int, j: int) -> None:
            slot = (parity * inner + j) % 2
            after = at(k, j + 1) if j + 1 < inner else at(shift(k, 1), 0)
            ahead = not (isinstance(k, int) and k == n - 1 and j == inner - 1)
            soft(at(k, j), slot)
            if ahead:
                load(after, 1 - slot)
            pv(at(k, j), slot)
            if not (isinstance(k, int) and k == 0 and j == 0):
                drain(at(k, j - 1) if j else at(shift(k, -1), inner - 1), 1 - slot)
            if ahead and late is not None:
                late(after, 1 - slot)

        def outer(k, parity: int) -> None:
            for j in range(inner):
                step(k, parity, j)

        load(at(0, 0), 0)
        if late is not None:
            late(at(0, 0), 0)
        k = 0
        while k < min(n, peel):
            outer(k, k % 2)
            k += 1
        group = 1 if inner % 2 == 0 else 2
        rounds = max(0, n - 2 * peel) // group
        if rounds:
            self.loop(rounds, lambda p: [outer(lin((p, group), (peel + g, 1)), (peel + g) % 2)
                                         for g in range(group)], double_buffer=False)
            k += group * rounds
        while k < n:
            outer(k, k % 2)
            k += 1
        drain(at(n - 1, inner - 1), ((n - 1) * inner + inner - 1) % 2)

    def slots(self, mq: int, kbk: int, online: bool, v: bool = True) -> dict[str, list[ir.Value]]:
        """The two slots of what a step's stages hand on (see `skewed`);
        alpha only with several key tiles (online softmax); V's tile unless
        V stays in L1 (`head_tiles`)."""
        d1, rows = self.a.d_blocks, mq * 16
        return {"scores": [nir.alloc([kbk, mq, 16, 16], "f32", "l0c") for _ in range(2)],
                "pv": [nir.alloc([d1 + 1, mq, 16, 16], "f32", "l0c") for _ in range(2)],
                "v": [nir.alloc([d1 + 1, kbk, 16, 16], "f16", "l1") for _ in range(2 * v)],
                "p": [nir.alloc([kbk, mq, 16, 16], "f16", "l1") for _ in range(2)],
                "alpha": [nir.alloc([rows], "f32", "ub") for _ in range(2 * online)]}

    def head_pipeline(self) -> None:
        """One tile per head (all queries, all keys): the heads are the steps."""
        a = self.a
        s1, d1 = a.seq_blocks, a.d_blocks
        buf = self.slots(s1, s1, False)
        masked = bool(a.seq % 16)

        # The f32 staging of Q and K (absorbed casts; V reuses Q's once Q is
        # cast), for all heads: never placed over a softmax's buffers, so the
        # loads of head h+1 run during head h's softmax.
        wides = ([nir.alloc([a.seq * a.head_dim], "f32", "ub") for _ in range(2)]
                 if a.staged else [])
        # V's two L1 slots get their column of ones once: V's loads leave it.
        for v1 in buf["v"]:
            self.fill_ones(v1, s1)
        # Q's and K's L1 tiles in two slots too: head h+1's loads never wait
        # for the cube to have read head h's.
        q_tiles = [nir.alloc([d1, s1, 16, 16], "f16", "l1") for _ in range(2)]
        k_tiles = [self.k_tile(s1) for _ in range(2)]
        # V's tile goes on to L0B with Q's and K's when two slots of it fit
        # there: the cube then frees V's L1 slot before head h's P exists,
        # and the next head's loads never wait for the softmax.
        v0_bytes = s1 * (d1 + 1) * 512
        need = cost.footprint(s1, s1, d1, a.staged, True, a.nz_out)["l0b"]
        v_l0b = ([nir.alloc([s1, d1 + 1, 16, 16], "f16", "l0b") for _ in range(2)]
                 if need + v0_bytes <= self.t.capacity("l0b") else [])
        # The f16 context blocks on their way to the Nz output in two slots of
        # their own when UB has room: wherever the memory planner would put
        # them, the next heads' scores never wait for their stores.
        nz_slots: list = [None, None]
        nz_bytes = 2 * d1 * s1 * 256 * 2
        ub_need = cost.footprint(s1, s1, d1, a.staged, True, a.nz_out)["ub"]
        if a.nz_out and ub_need + nz_bytes <= (self.t.capacity("ub")
                                               * cost.ATTENTION_UB_FRACTION):
            for k in range(2):
                self.nz_staging(s1)
                nz_slots[k] = self.nz_slabs

        def load(h, slot: int) -> None:
            if not a.staged:
                # V's rows first: Q's and K's, the last of the head, are
                # followed by the one MTE2 -> MTE1 flag, which covers V as
                # well (a flag on MTE2 waits for its queue to land: one such
                # stall per head, not two).
                self.load_v(h, 0, s1, buf["v"][slot], ones=False)
            self.deferred, self.wides = [], list(wides)
            reuse = list(wides[:1])
            q1 = self.load_rows(a.q, 0, h, 0, s1, into=q_tiles[slot], ones=False)
            k1 = self.load_k(h, 0, s1, into=k_tiles[slot])
            for lay_out in self.deferred:
                lay_out()
            self.deferred, self.wides = [], reuse
            if a.staged:  # V's f32 rows staged where Q's were, once Q is cast
                self.load_v(h, 0, s1, buf["v"][slot], ones=False)
            self.v_lay_out = self.deferred[0] if self.deferred else (lambda: None)
            self.deferred = None
            q0 = self.mm.to_l0a(q1, s1, d1)
            self.mm.mad(q0, self.k_to_l0b(k1, s1), buf["scores"][slot], s1, d1, s1, False)
            if v_l0b and not a.staged:
                self.v_to_l0b(buf["v"][slot], s1, v_l0b[slot])

        # Every head is alike, so one head before the loop and one after
        # (peel 1) suffice: measured, that saves a loop boundary's stall in
        # BERT (f16 rows, 435 cycles); with absorbed casts it measured 3.1k
        # cycles slower (12 heads of 128), so those keep two.
        def late(h, slot: int) -> None:
            """V's staged rows laid out, after the previous head's drain (the
            vector unit does not wait for V's load)."""
            self.v_lay_out()
            if v_l0b and a.staged:
                self.v_to_l0b(buf["v"][slot], s1, v_l0b[slot])

        def soft(h, slot: int) -> None:
            self.row_max = nir.alloc([s1 * 16], "f32", "ub")
            self.probs(s1, s1, buf, slot, True, masked)

        # One context buffer for all heads, outside the loop: never placed
        # over a step's buffers, so no step waits for the previous stores.
        context = nir.alloc([(d1 + 1) * s1 * 256], "f32", "ub")

        def drain(h, slot: int) -> None:
            self.context, self.nz_slabs = context, nz_slots[slot]
            copy("cce.copy_l0c_to_ub", buf["pv"][slot], self.context, 1, (d1 + 1) * s1 * 32)
            self.finish(h, 0, s1, a.seq)

        self.skewed(a.heads, lambda h, slot: self.scope(lambda: load(h, slot)),
                    lambda h, slot: self.scope(lambda: soft(h, slot)),
                    lambda h, slot: self.scope(lambda: self.pv(
                        s1, s1, buf, slot, v0=v_l0b[slot] if v_l0b else None)),
                    lambda h, slot: self.scope(lambda: drain(h, slot)),
                    late, peel=2 if a.staged else 1)

    def head_tiles(self) -> None:
        """Heads whose query tiles are all alike: the (head, query tile, key
        tile) triples are the steps of one pipeline, so the next query tile's
        (or head's) first scores are computed while this one's last softmax
        runs. Up to MAX_HEAD_STEPS steps a head: a head's steps are static
        and the heads loop; more: one pipeline per head, whose query tiles
        loop (the middle ones; their key tiles static). Q in L0A, the row
        max and the context are one buffer each."""
        a = self.a
        s1, d1, qb, kb = a.seq_blocks, a.d_blocks, self.qb, self.kb
        n_keys = -(-s1 // kb)
        tail = s1 - (n_keys - 1) * kb

        def blocks(y: int) -> int:
            return tail if y == n_keys - 1 else kb

        # A head's K and V tiles stay in L1 over its query tiles (loaded by
        # the first, the ones column of V written once) when they fit.
        resident_bytes = s1 * (2 * d1 + 1) * 512
        need = cost.footprint(qb, kb, d1, a.staged, False)["l1"]
        resident = s1 > qb and need + resident_bytes <= self.t.capacity("l1")
        buf = self.slots(qb, min(kb, s1), n_keys > 1, v=not resident)
        q0 = nir.alloc([qb, d1, 16, 16], "f16", "l0a")
        self.row_max = nir.alloc([qb * 16], "f32", "ub")
        self.context = nir.alloc([(d1 + 1) * qb * 256], "f32", "ub")
        self.nz_staging(qb)
        if resident:
            k_tiles = [self.k_tile(blocks(y)) for y in range(n_keys)]
            v_tiles = [nir.alloc([d1 + 1, blocks(y), 16, 16], "f16", "l1") for y in range(n_keys)]
            for y, v1 in enumerate(v_tiles):
                self.fill_ones(v1, blocks(y))

        def first_row_block(x):
            return x * qb if isinstance(x, int) else lin((x, qb))

        def valid_rows(x) -> int:
            """A query tile inside the loop is never the last: all rows valid."""
            return min(qb * 16, a.seq - x * qb * 16) if isinstance(x, int) else qb * 16

        # The next query tile's Q is brought to L1 by the load stage of this
        # tile's last key tile: a step ahead of its Q.K^T, so that (with its
        # rows scaled in UB on the way) the vector unit never waits for it.
        q_next = nir.alloc([d1, qb, 16, 16], "f16", "l1")

        def stages(locate: Callable, following: Callable) -> tuple[Callable, ...]:
            """The four stages of a step, `locate(step)` = (head, query tile,
            key tile); `following(h, x)`: the (head, query tile) after tile x
            of head h in the pipeline, and whether its Q is loaded ahead."""
            def load(step, slot: int) -> None:
                h, x, y = locate(step)
                if y == 0:
                    first = isinstance(x, int) and x == 0 and not following(h, x)[2]
                    q1 = self.load_q(h, first_row_block(x), qb) if first else q_next
                    self.mm.reorder_blocks(q1, q0, rows=qb, cols=d1, transpose=False,
                                           op_name="cce.load_l1_to_l0a", src_col_stride=qb)
                if not resident:
                    self.scores_and_v(h, q0, qb, y * kb, blocks(y), buf, slot)
                else:
                    first_x = isinstance(x, int) and x == 0
                    if first_x:
                        self.load_k(h, y * kb, blocks(y), k_tiles[y])
                    self.mm.mad(q0, self.k_to_l0b(k_tiles[y], blocks(y)),
                                self.prefix(buf["scores"][slot], blocks(y)), qb, d1, blocks(y),
                                False)
                    if first_x:  # after Q.K^T: its flag from MTE2 does not wait for V
                        self.load_rows(a.v, 2, h, y * kb, blocks(y), v_tiles[y], ones=False)
                h_next, x_next, _ = following(h, x)
                if y == n_keys - 1 and h_next is not None:
                    self.load_rows(a.q, 0, h_next, first_row_block(x_next), qb, into=q_next,
                                   ones=False)

            def soft(step, slot: int) -> None:
                y = locate(step)[2]
                self.probs(qb, blocks(y), buf, slot, y == 0, y == n_keys - 1 and bool(a.seq % 16))

            def pv(step, slot: int) -> None:
                y = locate(step)[2]
                self.pv(qb, blocks(y), buf, slot, v_tiles[y] if resident else None)

            def drain(step, slot: int) -> None:
                h, x, y = locate(step)
                if y == 0:
                    copy("cce.copy_l0c_to_ub", buf["pv"][slot], self.context, 1,
                         (d1 + 1) * qb * 32)
                else:
                    self.rescale_context(buf["pv"][slot], buf["alpha"][slot], qb)
                if y == n_keys - 1:
                    self.finish(h, first_row_block(x), qb, valid_rows(x))

            return tuple((lambda st, slot, f=f: self.scope(lambda: f(st, slot)))
                         for f in (load, soft, pv, drain))

        per_head = s1 // qb * n_keys
        last_x = s1 // qb - 1

        def shift(i):
            return i + 1 if isinstance(i, int) else lin((i, 1), (1, 1))

        def across_heads(h, x):
            """One pipeline over the heads: tile x's successor is the next
            one of the head, or the next head's first (none after the last
            head); a head's first tile has its Q loaded ahead unless it is
            the first of all."""
            ahead = not (isinstance(h, int) and h == 0)
            if isinstance(x, int) and x == last_x:
                if isinstance(h, int) and h == a.heads - 1:
                    return None, None, ahead
                return shift(h), 0, ahead
            return h, shift(x), ahead

        def within_head(h, x):
            """A pipeline per head: its first tile loads its own Q."""
            if isinstance(x, int) and x == last_x:
                return None, None, False
            return h, shift(x), False

        if per_head <= MAX_HEAD_STEPS:
            self.skewed(a.heads, *stages(lambda st: (st[0],) + divmod(st[1], n_keys),
                                         across_heads), inner=per_head, peel=1)
        else:
            self.loop(a.heads, lambda h: self.skewed(
                s1 // qb, *stages(lambda st: (h,) + st, within_head), inner=n_keys, peel=1),
                double_buffer=False)

    def query_tiles(self, h) -> None:
        s1, qb = self.a.seq_blocks, self.qb
        last = -(-s1 // qb) - 1
        if last:
            self.loop(last, lambda x: self.query_tile(h, lin((x, qb)), qb, qb * 16))
        tail = lambda _: self.query_tile(h, last * qb, s1 - last * qb, self.a.seq - last * qb * 16)
        if last:
            self.loop(1, tail)
        else:  # the only tile: its buffers belong to the head loop (double buffered)
            tail(0)

    def query_tile(self, h, x0, mq: int, valid: int) -> None:
        """One query tile; its key tiles are the steps of `skewed` (the
        first writes the context, the others rescale it; the last may have
        fewer blocks, masked padded keys, and ends with `finish`)."""
        a = self.a
        d1, rows = a.d_blocks, mq * 16
        q0 = self.mm.to_l0a(self.load_q(h, x0, mq), mq, d1)
        self.row_max = nir.alloc([rows], "f32", "ub")
        self.context = nir.alloc([(d1 + 1) * rows * 16], "f32", "ub")
        self.nz_staging(mq)
        s1, kb = a.seq_blocks, self.kb
        n = -(-s1 // kb)
        tail = s1 - (n - 1) * kb
        buf = self.slots(mq, min(kb, s1), n > 1)

        def blocks(k) -> int:
            return tail if isinstance(k, int) and k == n - 1 else kb

        def load(k, slot: int) -> None:
            self.scores_and_v(h, q0, mq, lin((k, kb)), blocks(k), buf, slot)

        def soft(k, slot: int) -> None:
            last = isinstance(k, int) and k == n - 1
            self.probs(mq, blocks(k), buf, slot, isinstance(k, int) and k == 0,
                       last and bool(a.seq % 16))

        def drain(k, slot: int) -> None:
            if isinstance(k, int) and k == 0:
                copy("cce.copy_l0c_to_ub", buf["pv"][slot], self.context, 1, (d1 + 1) * mq * 32)
            else:
                self.rescale_context(buf["pv"][slot], buf["alpha"][slot], mq)
            if isinstance(k, int) and k == n - 1:
                self.finish(h, x0, mq, valid)

        self.skewed(n, lambda k, slot: self.scope(lambda: load(k, slot)),
                    lambda k, slot: self.scope(lambda: soft(k, slot)),
                    lambda k, slot: self.scope(lambda: self.pv(mq, blocks(k), buf, slot)),
                    lambda k, slot: self.scope(lambda: drain(k, slot)))

    def nz_staging(self, q_blocks: int) -> None:
        """A set of f16 slabs of the context on their way to the Nz output,
        next to the context (never placed over a step's buffers: the next
        tile's scores, copied from L0C right after, do not wait for their
        stores to GM)."""
        if self.a.nz_out:
            self.nz_slabs = [nir.alloc([q_blocks * 256], "f16", "ub")
                             for _ in range(self.a.d_blocks)]

    # -- the stages of one key tile ---------------------------------------------
    def scores_and_v(self, h, q0, mq: int, y0, kbk: int, buf: dict, slot: int) -> None:
        """Keys y0.. (kbk blocks): Q.K^T into the slot's scores, V's tile
        (with its ones column) into the slot's L1 tile."""
        d1 = self.a.d_blocks
        k0 = self.k_to_l0b(self.load_k(h, y0, kbk), kbk)
        self.mm.mad(q0, k0, self.prefix(buf["scores"][slot], kbk), mq, d1, kbk, False)
        self.load_v(h, y0, kbk, buf["v"][slot])

    def probs(self, mq: int, kbk: int, buf: dict, slot: int, first: bool, masked: bool) -> None:
        """The softmax step of the slot's scores, P into the slot's L1 tile."""
        alpha = None if first else buf["alpha"][slot]
        self.softmax_tile(self.prefix(buf["scores"][slot], kbk), self.prefix(buf["p"][slot], kbk),
                          mq, kbk, alpha, masked)

    def pv(self, mq: int, kbk: int, buf: dict, slot: int, v1: ir.Value | None = None,
           v0: ir.Value | None = None) -> None:
        """P -> L0A, P.V (and the row sums) into the slot's P.V; V's tile is
        the slot's or `v1`, already in L0B when `v0` is given."""
        if v0 is None:
            v0 = nir.alloc([kbk, self.a.d_blocks + 1, 16, 16], "f16", "l0b")
            self.v_to_l0b(v1 if v1 is not None else buf["v"][slot], kbk, v0)
        p1 = buf["p"][slot]  # blocks viewed whole: a prefix view would be strided
        p0 = nir.alloc([mq, kbk, 16, 16], "f16", "l0a")
        self.mm.reorder_blocks(self.mm.flat_blocks(p1, math.prod(nir.memref_shape(p1)[:2])), p0,
                               rows=mq, cols=kbk, transpose=False, op_name="cce.load_l1_to_l0a",
                               src_col_stride=mq)
        self.mm.mad(p0, v0, buf["pv"][slot], mq, kbk, self.a.d_blocks + 1, False)

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
