"""npu-lower-attention: each `npu.attention` group (from `npu-fuse-attention`)
-> one cce kernel in which the scores never leave the chip.

Per head and query tile (rows of Q, `query_rows` of the group's plan):
  Q tile GM -> L1 -> L0A once. Per key tile (`key_rows` keys):
    K^T tile GM -> L1 -> L0B; mad: scores -> L0C; drained to UB (Nz: one
    [rows, 16] f32 slab per 16 keys, so row operations are slab-wise);
    scale (vmuls); padded keys of the last tile get -1e30 (a bias slab);
    row max: slabs folded with vmax, one vcmax per row (16 lanes);
    online softmax: m' = max(m, tile max), alpha = exp(m - m'), the row
    max broadcast over 16 lanes by vnchwconv, subtracted per slab, vexp,
    row sum as the max, l = l * alpha + sum;
    P cast to f16 in UB (its Nz is the A operand's Nz) -> L1 (MTE3) -> L0A;
    V tile GM -> L1 -> L0B; mad: P.V -> L0C -> UB; the context accumulator
    O = O * alpha + P.V (the first tile writes O directly).
  O / l per row, stored once to GM (one burst per row and 16 columns).
With one key tile (all keys fit), no rescaling is emitted: the scores of
the tile are on chip at once. The cube builders (L1 -> L0 block reorder,
mad) are `npu-lower-matmul`'s, the vector instructions the `Compute`
recipes of `npu.vector_compute`.
"""

from __future__ import annotations

import math
from typing import Callable

from mlir import ir

from npu import attention as att
from npu import attention_plan as cost
from npu import ir as nir
from npu.cce_build import View, copy, copy_bursts, lin, sub
from npu.passes.base import DOUBLE_BUFFER_ATTR, Pass, PassError
from npu.passes.lower_matmul import LowerMatmul
from npu.vector_compute import Compute, cast_compute, unary_compute
from npu.vector_tiling import split_repeats

# Added to the scores of padded keys: exp(x - 1e30 - max) is 0 in f32.
MASKED = -1e30
# The padded keys' shifted scores clamped to this before the f16 exp
# (finite in f16; exp(-scale * F16_MASKED) is 0 there).
F16_MASKED = 6e4
BODY_OPS = ("memref.alloc", "scf.yield") + nir.VIEW_OPS


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


class _Kernel:
    def __init__(self, p: LowerAttention, region: ir.Operation):
        self.p, self.region, self.t = p, region, p.target
        body = [o.operation for o in region.regions[0].blocks[0].operations]
        first = next((o for o in body if o.name == "ascend.batch_matmul"), None)
        if first is None:
            raise PassError("npu.attention group without a batch_matmul", region)
        found = att.match(first, att.users_of(body))
        if isinstance(found, str):
            raise PassError(f"npu.attention group is not an attention: {found}", region)
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
                              s1 <= min(self.qb, self.kb))
        for space, nbytes in need.items():
            if nbytes > self.t.capacity(space):
                raise PassError(f"npu.attention tile needs {nbytes} bytes of {space}, more than "
                                f"its {self.t.capacity(space)}", region)
        self.mm = LowerMatmul(self.t)
        self.lanes = self.t.lanes(4)
        self.deferred: list[Callable[[], None]] | None = None
        self.wides: list[ir.Value] = []  # staging buffers allocated ahead (`skewed`)
        # Scale the f32 scores before the max only when it does not commute
        # with it (or is too small for the f16 mask value to vanish).
        self.prescale = found.scale != 1.0 and not found.scale * F16_MASKED >= 30.0
        self.granule = self.t.granule("ub")

    # -- structure ------------------------------------------------------------
    def emit(self) -> None:
        a = self.a
        with self.region.location, ir.InsertionPoint(self.region):
            self.flat_out = nir.flatten_memref(a.out)
            if a.seq_blocks <= min(self.qb, self.kb):
                self.head_pipeline()
            elif a.seq_blocks % self.qb == 0:
                self.loop(a.heads, self.head_tiles, double_buffer=False)
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
               late: Callable | None = None, uniform: bool = True) -> None:
        """Steps 0..n-1, each in four stages: `load(k)` (operands on chip and
        Q.K^T), `soft(k)` (the softmax, P to L1), `pv(k)` (P.V) and
        `drain(k)` (the context), emitted software-pipelined: step k is
        soft(k), load(k+1), pv(k), drain(k-1) and `late(k+1)` (what load(k+1)
        leaves for later, if anything). Q.K^T of step k+1 precedes P.V of
        step k in the cube's queue, so it does not wait for P.
        Each pipe runs its queue in program order, so this keeps the vector
        unit on step k's softmax while the cube computes P.V of step k-1 and
        the movers bring step k+1's operands. What a stage leaves for the
        next one (scores, V's tile, P.V, alpha) is in two slots, by the
        parity of k, allocated by the caller; every stage gets (k, slot)
        with k an int or, inside the loop of middle steps, an index (only
        when the middle steps are `uniform`; else every step is emitted)."""
        def step(k, slot: int, static: int | None) -> None:
            ahead = static is None or static + 1 < n
            after = lin((k, 1), (1, 1)) if static is None else k + 1

            soft(k, slot)
            if ahead:
                load(after, 1 - slot)
            pv(k, slot)
            if static is None or static > 0:
                drain(lin((k, 1), (-1, 1)) if static is None else k - 1, 1 - slot)
            if ahead and late is not None:
                late(after, 1 - slot)

        load(0, 0)
        if late is not None:
            late(0, 0)
        k = 0
        while k < min(n, 2):
            step(k, k % 2, k)
            k += 1
        # Middle steps (2 <= k <= n-3: their neighbours are middle steps too)
        # in a loop over pairs, so that each slot is static.
        pairs = max(0, n - 4) // 2 if uniform else 0
        if pairs:
            self.loop(pairs, lambda p: (step(lin((p, 2), (2, 1)), 0, None),
                                        step(lin((p, 2), (3, 1)), 1, None)),
                      double_buffer=False)
            k += 2 * pairs
        while k < n:
            step(k, k % 2, k)
            k += 1
        drain(n - 1, (n - 1) % 2)

    def slots(self, mq: int, kbk: int, online: bool) -> dict[str, list[ir.Value]]:
        """The two slots of what a step's stages hand on (see `skewed`);
        alpha only with several key tiles (online softmax)."""
        d1, rows = self.a.d_blocks, mq * 16
        return {"scores": [nir.alloc([kbk, mq, 16, 16], "f32", "l0c") for _ in range(2)],
                "pv": [nir.alloc([d1 + 1, mq, 16, 16], "f32", "l0c") for _ in range(2)],
                "v": [nir.alloc([d1 + 1, kbk, 16, 16], "f16", "l1") for _ in range(2)],
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

        def load(h, slot: int) -> None:
            self.deferred, self.wides = [], list(wides)
            reuse = list(wides[:1])
            q1, k1 = self.load_q(h, 0, s1), self.load_k(h, 0, s1)
            for lay_out in self.deferred:
                lay_out()
            self.deferred, self.wides = [], reuse
            self.load_v(h, 0, s1, buf["v"][slot])
            self.v_lay_out = self.deferred[0] if self.deferred else (lambda: None)
            self.deferred = None
            q0 = self.mm.to_l0a(q1, s1, d1)
            self.mm.mad(q0, self.k_to_l0b(k1, s1), buf["scores"][slot], s1, d1, s1, False)

        def soft(h, slot: int) -> None:
            self.row_max = nir.alloc([s1 * 16], "f32", "ub")
            self.probs(s1, s1, buf, slot, True, masked)

        # One context buffer for all heads, outside the loop: never placed
        # over a step's buffers, so no step waits for the previous stores.
        context = nir.alloc([(d1 + 1) * s1 * 256], "f32", "ub")

        def drain(h, slot: int) -> None:
            self.context = context
            copy("cce.copy_l0c_to_ub", buf["pv"][slot], self.context, 1, (d1 + 1) * s1 * 32)
            self.finish(h, 0, s1, a.seq)

        # V's tile is laid out after the previous head's drain, so that the
        # vector unit does not wait for V's load.
        self.skewed(a.heads, lambda h, slot: self.scope(lambda: load(h, slot)),
                    lambda h, slot: self.scope(lambda: soft(h, slot)),
                    lambda h, slot: self.scope(lambda: self.pv(s1, s1, buf, slot)),
                    lambda h, slot: self.scope(lambda: drain(h, slot)),
                    lambda h, slot: self.v_lay_out())

    def head_tiles(self, h) -> None:
        """A head whose query tiles are all alike: its (query tile, key tile)
        pairs are the steps of one pipeline, so the next query tile's first
        scores are computed while this one's last softmax runs. Q in L0A,
        the row max and the context are one buffer each for the head."""
        a = self.a
        s1, d1, qb, kb = a.seq_blocks, a.d_blocks, self.qb, self.kb
        n_keys = -(-s1 // kb)
        tail = s1 - (n_keys - 1) * kb
        buf = self.slots(qb, min(kb, s1), n_keys > 1)
        q0 = nir.alloc([qb, d1, 16, 16], "f16", "l0a")
        self.row_max = nir.alloc([qb * 16], "f32", "ub")
        self.context = nir.alloc([(d1 + 1) * qb * 256], "f32", "ub")

        def tile(j: int) -> tuple[int, int, int]:
            """(query tile, key tile, key blocks) of step j."""
            x, y = divmod(j, n_keys)
            return x, y, tail if y == n_keys - 1 else kb

        def load(j: int, slot: int) -> None:
            x, y, kbk = tile(j)
            if y == 0:
                self.mm.reorder_blocks(self.load_q(h, x * qb, qb), q0, rows=qb, cols=d1,
                                       transpose=False, op_name="cce.load_l1_to_l0a",
                                       src_col_stride=qb)
            self.scores_and_v(h, q0, qb, y * kb, kbk, buf, slot)

        def soft(j: int, slot: int) -> None:
            x, y, kbk = tile(j)
            self.probs(qb, kbk, buf, slot, y == 0, y == n_keys - 1 and bool(a.seq % 16))

        def drain(j: int, slot: int) -> None:
            x, y, kbk = tile(j)
            if y == 0:
                copy("cce.copy_l0c_to_ub", buf["pv"][slot], self.context, 1, (d1 + 1) * qb * 32)
            else:
                self.rescale_context(buf["pv"][slot], buf["alpha"][slot], qb)
            if y == n_keys - 1:
                self.finish(h, x * qb, qb, min(qb * 16, a.seq - x * qb * 16))

        self.skewed(s1 // qb * n_keys, lambda j, slot: self.scope(lambda: load(j, slot)),
                    lambda j, slot: self.scope(lambda: soft(j, slot)),
                    lambda j, slot: self.scope(lambda: self.pv(qb, tile(j)[2], buf, slot)),
                    lambda j, slot: self.scope(lambda: drain(j, slot)), uniform=False)

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

    def pv(self, mq: int, kbk: int, buf: dict, slot: int) -> None:
        """P -> L0A, P.V (and the row sums) into the slot's P.V."""
        p1 = buf["p"][slot]  # blocks viewed whole: a prefix view would be strided
        p0 = nir.alloc([mq, kbk, 16, 16], "f16", "l0a")
        self.mm.reorder_blocks(self.mm.flat_blocks(p1, math.prod(nir.memref_shape(p1)[:2])), p0,
                               rows=mq, cols=kbk, transpose=False, op_name="cce.load_l1_to_l0a",
                               src_col_stride=mq)
        v0 = self.mm.to_l0b(buf["v"][slot], kbk, self.a.d_blocks + 1)
        self.mm.mad(p0, v0, buf["pv"][slot], mq, kbk, self.a.d_blocks + 1, False)

    @staticmethod
    def prefix(buf: ir.Value, blocks: int) -> ir.Value:
        """The first `blocks` column blocks of an Nz buffer (contiguous)."""
        shape = nir.memref_shape(buf)
        if shape[0] == blocks:
            return buf
        return nir.subview(buf, [0] * len(shape), [blocks] + shape[1:])

    def softmax_tile(self, sc: ir.Value, pl1: ir.Value, mq: int, kbk: int,
                     alpha: ir.Value | None, masked: bool) -> None:
        """Scores L0C -> UB, key mask, the row max (online: the running max
        and `alpha` = exp(old max - new max); None: the first tile), the
        shift in f32, then P = exp(scale * shifted) in f16 (half the vector
        repeats of f32; the shift keeps the rounding relative to s - max),
        P -> L1. The row sums come from the cube (`load_v`'s ones column)."""
        a = self.a
        rows = mq * 16
        slab, count = rows * 16, kbk * rows * 16
        scores = nir.alloc([count], "f32", "ub")
        copy("cce.copy_l0c_to_ub", sc, scores, 1, kbk * mq * 32)
        if self.prescale:
            self.apply(Compute("scalar", vop="cce.vmuls", scalar=a.scale), scores, [scores], count)
        if masked:
            bias = self.key_mask(rows, a.seq % 16)
            self.apply(Compute("binary", vop="cce.vadd"), scores, [scores, bias], slab,
                       offsets=((kbk - 1) * slab, (kbk - 1) * slab, 0))
        first = alpha is None
        tile_max = self.row_reduce(scores, kbk, rows, "cce.vmax", "cce.vcmax",
                                   self.row_max if first else None)
        vmax, vsub = Compute("binary", vop="cce.vmax"), Compute("binary", vop="cce.vsub")
        if first:
            shift = self.broadcast(self.row_max, rows)
        else:
            new_max = nir.alloc([rows], "f32", "ub")
            self.apply(vmax, new_max, [self.row_max, tile_max], rows)
            self.apply(vsub, alpha, [self.row_max, new_max], rows)
            if not self.prescale and a.scale != 1.0:
                self.apply(Compute("scalar", vop="cce.vmuls", scalar=a.scale), alpha, [alpha],
                           rows)
            self.apply(unary_compute("ascend.exp", "f32"), alpha, [alpha], rows)
            self.apply(vmax, self.row_max, [self.row_max, tile_max], rows)
            shift = self.broadcast(new_max, rows)
        for j in range(kbk):
            self.apply(vsub, scores, [scores, shift], slab, offsets=(j * slab, j * slab, 0))
        if masked:  # padded keys' -1e30 would overflow f16: a large finite value instead
            self.apply(Compute("scalar", vop="cce.vmaxs", scalar=-F16_MASKED), scores, [scores],
                       slab, offsets=((kbk - 1) * slab, (kbk - 1) * slab))
        probs = nir.alloc([count], "f16", "ub")
        self.apply(cast_compute("f32", "f16", "rint"), probs, [scores], count, sizes=(2, 4))
        if not self.prescale and a.scale != 1.0:
            self.apply(Compute("scalar", vop="cce.vmuls", scalar=a.scale), probs, [probs], count,
                       sizes=(2, 2))
        self.apply(unary_compute("ascend.exp", "f16"), probs, [probs], count, sizes=(2, 2))
        copy("cce.copy_ub_to_l1", probs, pl1, 1, kbk * mq * 16)

    def rescale_context(self, pv: ir.Value, alpha: ir.Value, mq: int) -> None:
        """O = O * alpha + P.V per row (the online softmax's correction), the
        row sums in the extra slab alike."""
        slabs, rows = self.a.d_blocks + 1, mq * 16
        slab = rows * 16
        part = nir.alloc([slabs * slab], "f32", "ub")
        copy("cce.copy_l0c_to_ub", pv, part, 1, slabs * mq * 32)
        rescale = self.broadcast(alpha, rows)
        for j in range(slabs):
            at = (j * slab, j * slab, 0)
            self.apply(Compute("binary", vop="cce.vmul"), self.context, [self.context, rescale],
                       slab, offsets=at)
            self.apply(Compute("binary", vop="cce.vadd"), self.context, [self.context, part],
                       slab, offsets=(j * slab, j * slab, j * slab))

    def scope(self, body: Callable[[], None]) -> None:
        self.loop(1, lambda _: body())

    # -- operand tiles in L1 (Nz, f16) ------------------------------------------
    def load_q(self, h, x0, mq: int) -> ir.Value:
        """Rows x0.. (mq blocks) of Q as the A operand's Nz [D/16, mq, 16, 16]."""
        return self.load_rows(self.a.q, 0, h, x0, mq)

    def load_rows(self, tensor: ir.Value, source: int, h, block0, blocks: int,
                  into: ir.Value | None = None) -> ir.Value:
        """Rows from 16-row block `block0` (`blocks` of them) of a head of Q
        or V as Nz [D/16, blocks, 16, 16] in L1: from the f16 fractals, or
        staged from `a.sources[source]` in f32. `into` (V): a tile of
        [D/16 + 1, >= blocks] blocks whose last column block gets ones, so
        that P.V also yields each row's sum of P (in f32, of the f16 P the
        context is made of)."""
        a, d1 = self.a, self.a.d_blocks
        l1 = into if into is not None else nir.alloc([d1, blocks, 16, 16], "f16", "l1")
        ld = nir.memref_shape(l1)[1]
        if into is not None:
            fill = blocks * 256
            self.scope(lambda: copy("cce.copy_ub_to_l1", self.ones_blocks(blocks),
                                    sub(nir.flatten_memref(l1), d1 * ld * 256, fill), 1,
                                    fill * 2 // self.granule))
        if a.sources is None:
            copy_bursts("cce.copy_gm_to_l1",
                        nir.subview(tensor, [h, 0, block0, 0, 0], [1, d1, blocks, 16, 16]),
                        l1, d1, blocks * 16, src_gap=(a.seq_blocks - blocks) * 16,
                        dst_gap=(ld - blocks) * 16)
            return l1
        first, pitch = self.rows_of(h, block0)
        self.stage(a.sources[source], first, blocks * 16, a.head_dim, pitch, l1)
        return l1

    def rows_of(self, h, block0) -> tuple:
        """(first element, row pitch) of a head's rows from 16-row block
        `block0` in a Q or V source: [H, S, D], or [S, H*D] (interleaved)."""
        a = self.a
        if a.interleaved:
            pitch = a.heads * a.head_dim
            return lin((block0, 16 * pitch), (h, a.head_dim)), pitch
        return lin((h, a.seq * a.head_dim), (block0, 16 * a.head_dim)), a.head_dim

    def load_k(self, h, y0, kbk: int) -> ir.Value:
        """Keys y0.. (kbk blocks) of K^T in L1, as `k_to_l0b` takes them."""
        a, d1 = self.a, self.a.d_blocks
        if a.interleaved:
            # K's own rows [keys, D] laid out as Nz [D/16, keys/16] in L1: each
            # 16x16 block of K row-major is the Zn block of K^T, and block
            # (j, l) of K^T sits at j * keys/16 + l in both, so one plain load.
            l1 = nir.alloc([d1, kbk, 16, 16], "f16", "l1")
            pitch = a.heads * a.head_dim
            self.stage(a.sources[1], lin((y0, 16 * pitch), (h, a.head_dim)), kbk * 16,
                       a.head_dim, pitch, l1)
            return l1
        l1 = nir.alloc([kbk, d1, 16, 16], "f16", "l1")
        if a.sources is None:
            copy("cce.copy_gm_to_l1", nir.subview(a.k, [h, y0, 0, 0, 0], [1, kbk, d1, 16, 16]),
                 l1, 1, kbk * d1 * 16)
        else:
            first = lin((h, a.seq * a.head_dim), (y0, 16))
            self.stage(a.sources[1], first, a.head_dim, kbk * 16, a.seq, l1)
        return l1

    def k_to_l0b(self, l1: ir.Value, kbk: int) -> ir.Value:
        """`load_k`'s tile -> L0B (Zn) for Q.K^T."""
        d1 = self.a.d_blocks
        if self.a.interleaved:
            l0b = nir.alloc([d1, kbk, 16, 16], "f16", "l0b")
            self.mm.reorder_blocks(l1, l0b, rows=1, cols=d1 * kbk, transpose=False,
                                   op_name="cce.load_l1_to_l0b", src_col_stride=1)
            return l0b
        return self.mm.to_l0b(l1, d1, kbk)

    def load_v(self, h, y0, kbk: int, into: ir.Value) -> None:
        """Keys y0.. (kbk blocks) of V as the B operand's Nz in `into`, with
        a column block of ones (see `load_rows`)."""
        self.load_rows(self.a.v, 2, h, y0, kbk, into)

    def stage(self, source: ir.Value, first, rows: int, cols: int, pitch: int,
              l1: ir.Value) -> None:
        """rows x cols f32 of a GM matrix with `pitch` columns from element
        `first` -> UB, cast to f16 there (the absorbed cast), laid out as Nz
        in `l1` (the absorbed fractalize); the UB staging is a scope of its own.
        While `self.deferred` is a list, only the GM load is emitted here and
        the rest appended to it: the caller issues all its loads first, so
        MTE2 streams them back to back into separate buffers. An f16 source
        needs no UB: each column block is `rows` bursts straight to L1."""
        if nir.memref_element(source) == "f16":
            self.rows_to_nz(source, first, rows, cols, pitch, l1)
            return
        if self.deferred is None:
            self.scope(lambda: self.lay_out(self.fetch(source, first, rows, cols, pitch), l1,
                                            rows, cols))
            return
        wide = self.fetch(source, first, rows, cols, pitch)
        self.deferred.append(lambda: self.scope(lambda: self.lay_out(wide, l1, rows, cols)))

    def rows_to_nz(self, source: ir.Value, first, rows: int, cols: int, pitch: int,
                   l1: ir.Value) -> None:
        """rows x cols f16 of a GM matrix with `pitch` columns -> Nz in L1
        (the absorbed fractalize), one copy per 16-column block."""
        shape = nir.memref_shape(l1)
        blocks, ld = math.prod(shape[:-2]), shape[1]
        flat, src = self.mm.flat_blocks(l1, blocks), nir.flatten_memref(source)
        for j in range(cols // 16):
            copy("cce.copy_gm_to_l1", sub(src, lin((first, 1), (16 * j, 1)), (rows - 1) * pitch + 16),
                 self.mm.block_view(flat, j * ld, blocks), rows, 1, pitch * 2 // self.granule - 1, 0)

    def fetch(self, source: ir.Value, first, rows: int, cols: int, pitch: int) -> ir.Value:
        g = self.granule
        wide = self.wides.pop(0) if self.wides else nir.alloc([rows * cols], "f32", "ub")
        copy_bursts("cce.copy_gm_to_ub",
                    sub(nir.flatten_memref(source), first, (rows - 1) * pitch + cols), wide,
                    1 if pitch == cols else rows, rows * cols * 4 // g if pitch == cols
                    else cols * 4 // g, src_gap=0 if pitch == cols else (pitch - cols) * 4 // g)
        return wide

    def lay_out(self, wide: ir.Value, l1: ir.Value, rows: int, cols: int) -> None:
        half = nir.alloc([rows * cols], "f16", "ub")
        self.apply(cast_compute("f32", "f16", "rint"), half, [wide], rows * cols, sizes=(2, 4))
        self.to_nz(half, l1, rows, cols)

    def to_nz(self, half: ir.Value, l1: ir.Value, rows: int, cols: int) -> None:
        """A row-major rows x cols f16 matrix in UB -> Nz in L1 (the absorbed
        fractalize): column block j is `rows` bursts of 16 elements, from
        block j * ld (ld: the tile's row blocks, at least rows / 16)."""
        shape = nir.memref_shape(l1)
        blocks, ld = math.prod(shape[:-2]), shape[1]
        flat = self.mm.flat_blocks(l1, blocks)
        per_row = cols * 2 // self.granule
        for j in range(cols // 16):
            dst = self.mm.block_view(flat, j * ld, blocks)
            copy("cce.copy_ub_to_l1", sub(half, 16 * j, (rows - 1) * cols + 16), dst, rows, 1,
                 per_row - 1, 0)

    def finish(self, h, x0, mq: int, valid: int) -> None:
        """O / l per row, then one burst per valid row and 16 columns to GM."""
        a = self.a
        rows, d = mq * 16, a.head_dim
        slab = rows * 16
        total = a.d_blocks * slab  # the row sums, one per lane of the last slab
        self.apply(unary_compute("ascend.reciprocal", "f32"), self.context, [self.context], slab,
                   offsets=(total, total))
        for j in range(a.d_blocks):
            self.apply(Compute("binary", vop="cce.vmul"), self.context,
                       [self.context, self.context], slab, offsets=(j * slab, j * slab, total))
            if a.merged:  # head h's columns of the merged [S, H*D] rows
                pitch = a.heads * d
                first = lin((x0, 16 * pitch), (h, d), (1, 16 * j))
            else:
                pitch = d
                first = lin((h, a.seq * d), (x0, 16 * d), (1, 16 * j))
            dst = sub(self.flat_out, first, (valid - 1) * pitch + 16)
            copy("cce.copy_ub_to_gm", sub(self.context, j * slab, valid * 16), dst, valid,
                 16 * 4 // self.granule, 0, (pitch - 16) * 4 // self.granule)

    # -- vector helpers -------------------------------------------------------
    def apply(self, compute: Compute, dst: ir.Value, srcs: list[ir.Value], count: int,
              offsets: tuple[int, ...] | None = None, sizes: tuple[int, int] = (4, 4)) -> None:
        """`compute` over `count` contiguous elements of dst and srcs (f32
        unless `sizes` = (dst bytes, src bytes)), from the element offsets."""
        offsets = offsets or (0,) * (1 + len(srcs))
        des, ses = sizes
        lanes, g = self.t.lanes(max(des, ses)), self.granule
        for piece in split_repeats(count, lanes, self.t.max_repeat):
            touched = (piece.repeat - 1) * lanes + piece.mask

            def view(buf: ir.Value, at: int, es: int) -> View:
                return View(sub(buf, at + piece.offset, touched), 1, lanes * es // g)

            compute.emit(view(dst, offsets[0], des),
                         [view(s, o, ses) for s, o in zip(srcs, offsets[1:])],
                         piece.repeat, piece.mask)

    def row_reduce(self, scores: ir.Value, slabs: int, rows: int, fold: str, across: str,
                   into: ir.Value | None) -> ir.Value:
        """Per row of the Nz tile: slabs folded elementwise onto one [rows, 16]
        slab, then one 16-lane reduction per row into `into` (or a new buffer)."""
        slab = rows * 16
        work = scores
        if slabs > 1:
            work = nir.alloc([slab], "f32", "ub")
            self.apply(Compute("binary", vop=fold), work, [scores, scores], slab,
                       offsets=(0, 0, slab))
            for j in range(2, slabs):
                self.apply(Compute("binary", vop=fold), work, [work, scores], slab,
                           offsets=(0, 0, j * slab))
        out = into if into is not None else nir.alloc([rows], "f32", "ub")
        nir.create_op(across, [out, sub(work, 0, slab)], repeat=rows, mask=16,
                      src_blk_stride=1, src_rep_stride=16 * 4 // self.granule, dst_rep_stride=1)
        return out

    def broadcast(self, col: ir.Value, rows: int) -> ir.Value:
        """[rows] -> [rows, 16]: each value over one slab row, by vnchwconv
        with all 16 source rows on the same 8 values (row t of the
        transpose is value t repeated, written to both 32-byte halves)."""
        per_block = self.granule // 4
        wide = nir.alloc([rows * 16], "f32", "ub")
        nir.create_op("cce.vnchwconv", [wide, col], repeat=rows // per_block,
                      src_offsets=[0] * 16, dst_offsets=list(range(16)), src_rep_stride=1,
                      dst_rep_stride=16)
        return wide

    def ones_blocks(self, blocks: int) -> ir.Value:
        """`blocks` 16x16 f16 blocks of 1.0 in UB, the source of V's ones column."""
        count = blocks * 256
        ones = nir.alloc([count], "f16", "ub")
        lanes = self.t.lanes(2)
        for piece in split_repeats(count, lanes, self.t.max_repeat):
            nir.create_op("cce.vdup", [sub(ones, piece.offset, (piece.repeat - 1) * lanes
                                           + piece.mask)],
                          repeat=piece.repeat, mask=piece.mask, dst_blk_stride=1,
                          dst_rep_stride=8, scalar=1.0)
        return ones

    def key_mask(self, rows: int, valid_keys: int) -> ir.Value:
        """A [rows, 16] slab: 0 for the first `valid_keys` lanes of each row,
        MASKED for the padded keys."""
        bias = nir.alloc([rows * 16], "f32", "ub")
        for piece in split_repeats(rows * 16, self.lanes, self.t.max_repeat):
            nir.create_op("cce.vdup", [sub(bias, piece.offset, (piece.repeat - 1) * self.lanes
                                           + piece.mask)],
                          repeat=piece.repeat, mask=piece.mask, dst_blk_stride=1,
                          dst_rep_stride=8, scalar=MASKED)
        nir.create_op("cce.vdup", [bias], repeat=rows, mask=valid_keys, dst_blk_stride=1,
                      dst_rep_stride=16 * 4 // self.granule, scalar=0.0)
        return bias
