"""The orders in which `npu-lower-attention`'s kernel walks a group's
(head, query tile, key tile) steps: one tile per head (`head_pipeline`),
heads whose query tiles are all alike (`head_tiles`, in its own module),
and query tiles that do not divide the sequence (`query_tiles`). Each
builds the slots its stages hand on and feeds them to the kernel's
`skewed` pipeline."""

from __future__ import annotations

from npu.costmodel.attention import plan as cost
from npu import ir as nir
from npu.kernels.cce_build import copy, lin
from npu.passes.lower_attention.head_tiles import HeadTiles


class TileSchedules(HeadTiles):
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
        wides = ([nir.alloc([s1 * 16 * a.head_dim], "f32", "ub") for _ in range(2)]
                 if a.staged else [])
        # The padding of their last block (`stage`) is zeroed by the first
        # head's loads only: the others leave it, and Q's and V's (which
        # share one) is in the same place.
        self.lasting = list(wides)
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
                self.run_jobs(h, tiles_of(slot), later, head_slot=slot,
                              loads=not self.loads_ahead, one_scope=True)
                if v_l0b:
                    self.v_to_l0b(buf["v"][slot], s1, v_l0b[slot])
            self.scope(lambda: self.pv(s1, s1, buf, slot, v0=v_l0b[slot] if v_l0b else None))

        # (Projected: the jobs are not in one scope, `run_jobs`; head 0's
        # copy their own weights, job by job.)
        def load_all(h, slot: int) -> None:
            """The head's operands, then its tile of a mask of the scores
            (one a head; a shared mask is resident)."""
            load(h, slot)
            self.load_mask_tile(buf, slot, 0, 0, s1, s1, h)

        self.skewed(a.heads, load_all if projected else lambda h, slot: self.scope(
                        lambda: load_all(h, slot)),
                    lambda h, slot: self.scope(lambda: soft(h, slot)),
                    pv,
                    lambda h, slot: self.scope(lambda: drain(h, slot)),
                    late, peel=2 if a.staged or projected else 1)

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
        self.reloads_kv = last > 0  # each query tile loads its K and V tiles
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
            else:
                self.scores_and_v(h, q0, mq, lin((k, kb)), blocks(k), buf, slot)
            self.load_mask_tile(buf, slot, x0, lin((k, kb)), mq, blocks(k), h)

        def pv(k, slot: int) -> None:
            if tiles is not None:
                self.projected_pv(tiles, lin((k, kb)), mq, blocks(k), buf, slot)
                return
            self.pv(mq, blocks(k), buf, slot)

        def soft(k, slot: int) -> None:
            last = isinstance(k, int) and k == n - 1
            self.probs(mq, blocks(k), buf, slot, isinstance(k, int) and k == 0,
                       last and bool(a.seq % 16), lin((k, kb)))

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
