"""The orders in which `npu-lower-attention`'s kernel walks a group's
(head, query tile, key tile) steps: one tile per head (`head_pipeline`),
heads whose query tiles are all alike (`head_tiles`), and query tiles that
do not divide the sequence (`query_tiles`). Each builds the slots its
stages hand on and feeds them to the kernel's `skewed` pipeline."""

from __future__ import annotations

from typing import Callable

from npu import attention_plan as cost
from npu import ir as nir
from npu.cce_build import copy, lin
from npu.passes.base import PassError
from npu.passes.lower_attention.projected_tiles import SpreadJobs

MAX_HEAD_STEPS = cost.MAX_HEAD_STEPS  # (`head_tiles`)


class TileSchedules:
    """Mixed into the kernel (`a`, `t`, `qb`, `kb`, `mm`, `skewed`, `slots`, `loop`,
    `scope` and the stage helpers)."""

    def head_pipeline(self) -> None:
        """One tile per head (all queries, all keys): the heads are the steps."""
        a = self.a
        s1, d1 = a.seq_blocks, a.d_blocks
        buf = self.slots(s1, s1, False)
        masked = bool(a.seq % 16)
        # The kernel computes Q, K, V (`ProjectedHeads`): head h's jobs in
        # its load stage, so the cube projects head h+1 during head h's softmax
        # (the heads' parity static: `skewed` takes two heads an iteration).
        projected = self.pp is not None
        self.snake = projected

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
        # (Projected: two V tiles beside the larger of K's tile and the
        # projection's two sub-step slots, in scopes of their own.)
        need = (max(d1 * s1 * 512, self.l0b_slot_bytes()) + v0_bytes if projected
                else self.need["l0b"])
        v_l0b = ([nir.alloc([s1, d1 + 1, 16, 16], "f16", "l0b") for _ in range(2)]
                 if need + v0_bytes <= self.t.capacity("l0b") else [])
        # The f16 context blocks on their way to the Nz output in two slots of
        # their own when UB has room: wherever the memory planner would put
        # them, the next heads' scores never wait for their stores.
        nz_slots: list = [None, None]
        nz_bytes = 2 * d1 * s1 * 256 * 2
        if a.nz_out and self.need["ub"] + nz_bytes <= (self.t.capacity("ub")
                                               * cost.ATTENTION_UB_FRACTION):
            for k in range(2):
                self.nz_staging(s1)
                nz_slots[k] = self.nz_slabs

        def tiles_of(slot: int) -> dict:
            return {"q": q_tiles[slot], "k": k_tiles[slot], "v": buf["v"][slot]}

        def v_last(h) -> list[int]:
            """The last head's V jobs when its P.V stage runs them
            (`v_jobs_after_softmax`)."""
            last = isinstance(h, int) and h == a.heads - 1 and h > 0
            return self.v_jobs_after_softmax() if projected and last else []

        def scores(slot: int) -> None:
            self.scope(lambda: self.mm.mad(
                self.mm.to_l0a(q_tiles[slot], s1, d1), self.k_to_l0b(k_tiles[slot], s1),
                buf["scores"][slot], s1, d1, s1, False))

        def load(h, slot: int) -> None:
            if projected:
                # Head h+1's weights stream during head h's jobs (head 0's
                # before the pipeline).
                last = isinstance(h, int) and h == a.heads - 1
                first = isinstance(h, int) and h == 0
                ahead = self.loads_ahead
                later = v_last(h)
                rest = self.run_jobs(h, tiles_of(slot),
                              [k for k in range(self.job_count()) if k not in later],
                              head_slot=slot, loads=first or not ahead,
                              ahead=None if last or not ahead
                              else lambda k: self.load_jobs(lin((h, 1), (1, 1)), [k], 1 - slot),
                              one_scope=self.one_head_scope)
                self.v_lay_out = lambda: None
                if not later:  # (else in `late`: the previous P.V first fills the cube's
                    # wait for K's drain)
                    scores(slot)
                if rest is not None:
                    rest()
                return
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
            if v_last(h):
                scores(slot)
            elif v_l0b and (a.staged or projected):
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

        def pv(h, slot: int) -> None:
            later = v_last(h)
            if later:  # (the last head's V jobs, after its softmax in V's queue)
                rest = self.run_jobs(h, tiles_of(slot), later, head_slot=slot,
                              loads=not self.loads_ahead, one_scope=True)
                if v_l0b:
                    self.v_to_l0b(buf["v"][slot], s1, v_l0b[slot])
            self.scope(lambda: self.pv(s1, s1, buf, slot, v0=v_l0b[slot] if v_l0b else None))

        # (Projected: the jobs are not in one scope, `run_jobs`; head 0's
        # copy their own weights, job by job.)
        self.skewed(a.heads, load if projected else lambda h, slot: self.scope(
                        lambda: load(h, slot)),
                    lambda h, slot: self.scope(lambda: soft(h, slot)),
                    pv,
                    lambda h, slot: self.scope(lambda: drain(h, slot)),
                    late, peel=2 if a.staged or projected else 1)

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
        # Projected: head h's Q, K and V tiles (by head parity) are made by
        # jobs spread over head h-1's steps (`ProjectedHeads`).
        projected = self.pp is not None
        per_head = s1 // qb * n_keys
        if projected:
            if per_head > MAX_HEAD_STEPS:
                raise PassError(f"npu.attention with its projection: {per_head} tiles a head, "
                                f"more than one static pipeline's {MAX_HEAD_STEPS}", self.region)
            resident = False
            self.snake = True  # (`skewed(pairs=True)`: the heads' parity static)
            tiles = [self.head_tiles_of() for _ in range(2)]
            spread = SpreadJobs(self, per_head, tiles)
        buf = self.slots(qb, min(kb, s1), n_keys > 1, v=not resident and not projected)
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
        q_next = nir.alloc([d1, qb, 16, 16], "f16", "l1") if not projected else None
        # One key tile: the next head's first step would overwrite the
        # resident V that this head's last P.V still reads (program order:
        # load(s+1) comes before pv(s)), so V is loaded in the step's `late`.
        v_late = resident and n_keys == 1

        def stages(locate: Callable, following: Callable) -> tuple[Callable, ...]:
            """The four stages of a step, `locate(step)` = (head, query tile,
            key tile); `following(h, x)`: the (head, query tile) after tile x
            of head h in the pipeline, and whether its Q is loaded ahead."""
            def load(step, slot: int) -> None:
                h, x, y = locate(step)
                if projected:
                    own = tiles[self.parity]
                    self.scope(lambda: self.projected_scores(
                        own, first_row_block(x) if y == 0 else None, y * kb, blocks(y), q0, buf,
                        slot, qb))
                    if not (isinstance(h, int) and h == a.heads - 1):
                        spread.in_load(h, step[1], self.parity)
                    return
                if y == 0:
                    first = isinstance(x, int) and x == 0 and not following(h, x)[2]
                    q1 = self.load_q(h, first_row_block(x), qb) if first else q_next
                    self.mm.reorder_blocks(q1, q0, rows=qb, cols=d1, transpose=False,
                                           op_name="cce.load_l1_to_l0a", src_col_stride=qb)
                if not resident:
                    self.scores_and_v(h, q0, qb, y * kb, blocks(y), buf, slot)
                else:
                    first_x = isinstance(x, int) and x == 0
                    if first_x and not (v_late and following(h, x)[2]):
                        self.load_k(h, y * kb, blocks(y), k_tiles[y])
                    self.key_scores(q0, k_tiles[y], self.prefix(buf["scores"][slot], blocks(y)),
                                    qb, blocks(y))
                    if first_x and not v_late:  # after Q.K^T: its flag from MTE2 does
                        # not wait for V
                        self.load_rows(a.v, 2, h, y * kb, blocks(y), v_tiles[y], ones=False)
                h_next, x_next, _ = following(h, x)
                if y == n_keys - 1 and h_next is not None:
                    self.load_rows(a.q, 0, h_next, first_row_block(x_next), qb, into=q_next,
                                   ones=False)
                    if v_late and isinstance(x_next, int) and x_next == 0:
                        # One key tile: the next head's K, once this last Q.K^T
                        # has read the head's own (a step earlier than its
                        # first step would load it).
                        self.load_k(h_next, 0, blocks(0), k_tiles[0])

            def late(step, slot: int) -> None:
                """With one key tile, a head's first step loads its V after
                the previous step's P.V (which reads the previous head's V
                from the same resident tile)."""
                h, x, y = locate(step)
                if v_late and isinstance(x, int) and x == 0:
                    self.load_rows(a.v, 2, h, y * kb, blocks(y), v_tiles[y], ones=False)

            def soft(step, slot: int) -> None:
                y = locate(step)[2]
                self.probs(qb, blocks(y), buf, slot, y == 0, y == n_keys - 1 and bool(a.seq % 16))

            def pv(step, slot: int) -> None:
                y = locate(step)[2]
                if projected:
                    self.projected_pv(tiles[self.parity], y * kb, qb, blocks(y), buf, slot)
                    return
                self.pv(qb, blocks(y), buf, slot, v_tiles[y] if resident else None)

            def drain(step, slot: int) -> None:
                h, x, y = locate(step)
                if projected and not (isinstance(h, int) and h == a.heads - 1):
                    spread.in_drain(h, step[1], self.parity)
                if y == 0:
                    copy("cce.copy_l0c_to_ub", buf["pv"][slot], self.context, 1,
                         (d1 + 1) * qb * 32)
                else:
                    self.rescale_context(buf["pv"][slot], buf["alpha"][slot], qb)
                if y == n_keys - 1:
                    self.finish(h, first_row_block(x), qb, valid_rows(x))

            # (Projected: the load stage scopes its parts, `run_jobs`.)
            return tuple(f if projected and f is load else
                         (lambda st, slot, f=f: self.scope(lambda: f(st, slot)))
                         for f in (load, soft, pv, drain, late)[:5 if v_late else 4])

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

        if projected:
            spread.prologue()
        if per_head <= MAX_HEAD_STEPS:
            # (Projected: peel 2, so that a looped step's jobs and copies are
            # never of a head past the last.)
            self.skewed(a.heads, *stages(lambda st: (st[0],) + divmod(st[1], n_keys),
                                         across_heads), inner=per_head,
                        peel=2 if projected else 1, pairs=projected)
        else:
            # With one key tile a step is a query tile (the step is an int, not
            # (tile, key tile)), and the step loaded ahead inside the loop of
            # middle query tiles also loads the next tile's Q: two tiles peeled
            # at the end keep that Q within the sequence.
            self.loop(a.heads, lambda h: self.skewed(
                s1 // qb, *stages(lambda st: (h,) + (st if n_keys > 1 else (st, 0)), within_head),
                inner=n_keys, peel=1 if n_keys > 1 else 2),
                double_buffer=False)

    def projected_heads(self) -> None:
        """Query tiles that do not divide the sequence, with the projection:
        a loop over the heads, each projected into its own tiles (the loop's
        buffers: npu-double-buffer gives alternate heads their own copies)."""
        def head(h) -> None:
            tiles = self.head_tiles_of()
            self.run_jobs(h, tiles)
            self.query_tiles(h, tiles)

        self.loop(self.a.heads, head)

    def query_tiles(self, h, tiles: dict | None = None) -> None:
        s1, qb = self.a.seq_blocks, self.qb
        last = -(-s1 // qb) - 1
        if last:
            self.loop(last, lambda x: self.query_tile(h, lin((x, qb)), qb, qb * 16, tiles))
        tail = lambda _: self.query_tile(h, last * qb, s1 - last * qb,
                                         self.a.seq - last * qb * 16, tiles)
        if last:
            self.loop(1, tail)
        else:  # the only tile: its buffers belong to the head loop (double buffered)
            tail(0)

    def query_tile(self, h, x0, mq: int, valid: int, tiles: dict | None = None) -> None:
        """One query tile; its key tiles are the steps of `skewed` (the
        first writes the context, the others rescale it; the last may have
        fewer blocks, masked padded keys, and ends with `finish`). `tiles`:
        the head's projected Q, K, V tiles (else they are loaded)."""
        a = self.a
        d1, rows = a.d_blocks, mq * 16
        if tiles is None:
            q0 = self.mm.to_l0a(self.load_q(h, x0, mq), mq, d1)
        else:
            q0 = nir.alloc([mq, d1, 16, 16], "f16", "l0a")
            self.q_from_tile(tiles["q"], x0, mq, q0)
        self.row_max = nir.alloc([rows], "f32", "ub")
        self.context = nir.alloc([(d1 + 1) * rows * 16], "f32", "ub")
        self.nz_staging(mq)
        s1, kb = a.seq_blocks, self.kb
        n = -(-s1 // kb)
        tail = s1 - (n - 1) * kb
        buf = self.slots(mq, min(kb, s1), n > 1, v=tiles is None)

        def blocks(k) -> int:
            return tail if isinstance(k, int) and k == n - 1 else kb

        def load(k, slot: int) -> None:
            if tiles is not None:
                self.projected_scores(tiles, None, lin((k, kb)), blocks(k), q0, buf, slot, mq)
                return
            self.scores_and_v(h, q0, mq, lin((k, kb)), blocks(k), buf, slot)

        def pv(k, slot: int) -> None:
            if tiles is not None:
                self.projected_pv(tiles, lin((k, kb)), mq, blocks(k), buf, slot)
                return
            self.pv(mq, blocks(k), buf, slot)

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
                    lambda k, slot: self.scope(lambda: pv(k, slot)),
                    lambda k, slot: self.scope(lambda: drain(k, slot)))
