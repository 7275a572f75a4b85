"""`npu-lower-attention`'s order for heads whose query tiles are all alike
(`head_tiles`): the (head, query tile, key tile) triples as the steps of
one pipeline, static within a head up to MAX_HEAD_STEPS steps, else one
pipeline per head over its middle query tiles. Split from `schedules`,
which holds the other two orders."""

from __future__ import annotations

from typing import Callable

from npu.costmodel.attention import plan as cost
from npu import ir as nir
from npu.kernels.cce_build import Index, copy, lin
from npu.passes.base import PassError
from npu.passes.lower_attention.projected_tiles import SpreadJobs

MAX_HEAD_STEPS = cost.MAX_HEAD_STEPS
# A head's first K tile loads right behind its first Q tile (f16 sources:
# copies alone), under the one flag that releases both (see `load_operands`).
K_BEHIND_Q = True
# A core whose share is one step (one head, one query tile, one key tile:
# BERT seq 128 on 24-32 cores) loads P.V's V -> L0B in a scope of its own
# ahead of P -> L0A and the mad: npu-insert-sync waits for a scope's inputs
# before the whole scope, so in one scope V's loads waited for P's copy to L1
# (the softmax's end) though V had landed ~500 cycles before (the
# attention's phase 4,045 -> 3,926 cycles). Not with several steps, whose
# pipeline overlaps P.V with the next step's loads anyway (8 cores: 87,226
# -> 87,256 with it).
V_AHEAD_OF_P = True


class HeadTiles:
    """Mixed into the kernel with `TileSchedules` (the same attributes)."""

    def head_tiles(self, q_blocks: int | None = None, q_first: Index = 0,
                   heads: int | None = None, head0: Index = 0) -> None:
        """Heads whose query tiles are all alike: the (head, query tile, key
        tile) triples are the steps of one pipeline, so the next query tile's
        (or head's) first scores are computed while this one's last softmax
        runs. Up to MAX_HEAD_STEPS steps a head: a head's steps are static
        and the heads loop; more: one pipeline per head, whose query tiles
        loop (the middle ones; their key tiles static). Q in L0A, the row
        max and the context are one buffer each. `q_blocks` from block
        `q_first` (an index): this core's run of query rows (npu-split-cores'
        query runs), against all keys; default all of them. Query tiles that
        do not divide a seq of partial blocks overlap (`cost.overlapped`): the
        last one ends at the last block and stores only the rows after the
        tile before. `heads` from head `head0` (an index): this core's heads
        (a flat run's segment, `flat_runs`); default all of them."""
        a = self.a
        n_heads = a.heads if heads is None else heads

        def g(h):
            """The head's index in the tensors (h counts this call's heads)."""
            return h if isinstance(head0, int) and head0 == 0 else lin((h, 1), (head0, 1))
        s1, d1, qb, kb = a.seq_blocks, a.d_blocks, self.qb, self.kb
        sq = s1 if q_blocks is None else q_blocks
        n_keys = -(-s1 // kb)
        tail = s1 - (n_keys - 1) * kb
        n_q = -(-sq // qb)

        def blocks(y: int) -> int:
            return tail if y == n_keys - 1 else kb

        # the core's share is one step: its P.V waits on nothing but it (`V_AHEAD_OF_P`)
        one_step = isinstance(n_heads, int) and n_heads * n_q * n_keys == 1

        # A head's K and V tiles stay in L1 over its query tiles (loaded by
        # the first, the ones column of V written once) when they fit.
        resident = cost.resident(a, qb, kb, self.t, sq)
        self.reloads_kv = not resident and n_q > 1
        # Projected: head h's Q, K and V tiles (by head parity) are made by
        # jobs spread over head h-1's steps (`ProjectedHeads`).
        projected = self.pp is not None
        per_head = n_q * n_keys
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

        # (Overlapped: the last tile's first block, and the blocks it shares
        # with the tile before, which stored them.)
        last_first = min((n_q - 1) * qb, sq - qb)
        shared = (n_q - 1) * qb - last_first

        def first_row_block(x):
            if isinstance(x, int) and x == n_q - 1:
                return lin((last_first, 1), (q_first, 1))
            return lin((x, qb), (q_first, 1))

        def valid_rows(x) -> int:
            """A query tile inside the loop is never the last, nor one of a
            core's run (whole blocks): all rows valid."""
            if isinstance(x, int) and q_blocks is None:
                return min(qb * 16, a.seq - first_row_block(x) * 16)
            return qb * 16

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
                """The step's operands, then its tile of a mask of the scores
                (behind them in MTE2's queue: the cube does not wait for it)."""
                load_operands(step, slot)
                h, x, y = locate(step)
                self.load_mask_tile(buf, slot, first_row_block(x), y * kb, qb, blocks(y), g(h))

            def load_operands(step, slot: int) -> None:
                h, x, y = locate(step)
                if projected:
                    own = tiles[self.parity]
                    self.scope(lambda: self.projected_scores(
                        own, first_row_block(x) if y == 0 else None, y * kb, blocks(y), q0, buf,
                        slot, qb))
                    if not (isinstance(h, int) and h == n_heads - 1):
                        spread.in_load(h, step[1], self.parity)
                    return
                first_x = isinstance(x, int) and x == 0
                k_here = resident and first_x and not (v_late and following(h, x)[2])
                k1 = None
                if y == 0:
                    first = first_x and not following(h, x)[2]
                    behind = first and K_BEHIND_Q and (a.sources is None or all(
                        nir.memref_element(src) == "f16" for src in a.sources))
                    # K staged through UB: Q's tile too, both laid out in L1
                    # after both loads, under the one flag K needs anyway
                    joint = behind and self.joint_staged(qb, blocks(0))
                    if joint:
                        self.joint_layouts = []
                    q1 = self.load_q(g(h), first_row_block(x), qb, joint) if first else q_next
                    if behind:
                        # K's tile right behind Q's in MTE2's queue (f16
                        # tiles: no flag between): the flag after Q held
                        # MTE2 until Q landed (a set waits for its pipe's
                        # earlier work), so K's loads started one GM latency
                        # later, and Q.K^T waits for both (BERT seq 128 on
                        # 32 cores: each core's one head).
                        k1 = self.load_k(g(h), 0, blocks(0), k_tiles[0] if k_here else None)
                    if joint:
                        for lay_out in self.joint_layouts:
                            lay_out()
                        self.joint_layouts = None
                    self.mm.reorder_blocks(q1, q0, rows=qb, cols=d1, transpose=False,
                                           op_name="cce.load_l1_to_l0a", src_col_stride=qb)
                if not resident:
                    self.scores_and_v(g(h), q0, qb, y * kb, blocks(y), buf, slot, k1)
                else:
                    if k_here and k1 is None:
                        self.load_k(g(h), y * kb, blocks(y), k_tiles[y])
                    self.key_scores(q0, k_tiles[y], self.prefix(buf["scores"][slot], blocks(y)),
                                    qb, blocks(y))
                    if first_x and not v_late:  # after Q.K^T: its flag from MTE2 does
                        # not wait for V
                        self.load_rows(a.v, 2, g(h), y * kb, blocks(y), v_tiles[y], ones=False)
                h_next, x_next, _ = following(h, x)
                if y == n_keys - 1 and h_next is not None:
                    self.load_rows(a.q, 0, g(h_next), first_row_block(x_next), qb, into=q_next,
                                   ones=False)
                    if v_late and isinstance(x_next, int) and x_next == 0:
                        # One key tile: the next head's K, once this last Q.K^T
                        # has read the head's own (a step earlier than its
                        # first step would load it).
                        self.load_k(g(h_next), 0, blocks(0), k_tiles[0])

            def late(step, slot: int) -> None:
                """With one key tile, a head's first step loads its V after
                the previous step's P.V (which reads the previous head's V
                from the same resident tile)."""
                h, x, y = locate(step)
                if v_late and isinstance(x, int) and x == 0:
                    self.load_rows(a.v, 2, g(h), y * kb, blocks(y), v_tiles[y], ones=False)

            def soft(step, slot: int) -> None:
                y = locate(step)[2]
                self.probs(qb, blocks(y), buf, slot, y == 0, y == n_keys - 1 and bool(a.seq % 16),
                           lin((y, kb)))

            def pv(step, slot: int) -> None:
                y = locate(step)[2]
                if projected:
                    self.projected_pv(tiles[self.parity], y * kb, qb, blocks(y), buf, slot)
                    return
                self.pv(qb, blocks(y), buf, slot, v_tiles[y] if resident else None)

            def pv_staged(step, slot: int) -> None:
                """V -> L0B in a scope of its own ahead of P's (`V_AHEAD_OF_P`)."""
                y = locate(step)[2]
                kbk = blocks(y)
                if projected or not one_step or len(cost.key_chunks(kbk, d1, self.t)) > 1:
                    self.scope(lambda: pv(step, slot))
                    return
                v1 = v_tiles[y] if resident else buf["v"][slot]
                v0 = nir.alloc([kbk, d1 + 1, 16, 16], "f16", "l0b")
                self.scope(lambda: self.v_to_l0b(v1, kbk, v0))
                self.scope(lambda: self.pv(qb, kbk, buf, slot, v1, v0))

            def drain(step, slot: int) -> None:
                h, x, y = locate(step)
                if projected and not (isinstance(h, int) and h == n_heads - 1):
                    spread.in_drain(h, step[1], self.parity)
                if y == 0:
                    copy("cce.copy_l0c_to_ub", buf["pv"][slot], self.context, 1,
                         (d1 + 1) * qb * 32)
                else:
                    self.rescale_context(buf["pv"][slot], buf["alpha"][slot], qb)
                if y == n_keys - 1:
                    self.finish(g(h), first_row_block(x), qb, valid_rows(x),
                                shared if isinstance(x, int) and x == n_q - 1 else 0)

            # (Projected: the load stage scopes its parts, `run_jobs`.)
            return tuple(f if projected and f is load or f is pv_staged else
                         (lambda st, slot, f=f: self.scope(lambda: f(st, slot)))
                         for f in (load, soft, pv_staged if V_AHEAD_OF_P else pv, drain,
                                   late)[:5 if v_late else 4])

        last_x = n_q - 1

        def shift(i):
            return i + 1 if isinstance(i, int) else lin((i, 1), (1, 1))

        def across_heads(h, x):
            """One pipeline over the heads: tile x's successor is the next
            one of the head, or the next head's first (none after the last
            head); a head's first tile has its Q loaded ahead unless it is
            the first of all."""
            ahead = not (isinstance(h, int) and h == 0)
            if isinstance(x, int) and x == last_x:
                if isinstance(h, int) and h == n_heads - 1:
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
            # (One tile a head, a core's run of one query tile: the step is the
            # head, whose load stage brings the next head's Q; two heads peeled at
            # the end keep a looped step's next head within the heads.)
            self.skewed(n_heads, *stages(lambda st: (st[0],) + divmod(st[1], n_keys)
                                         if per_head > 1 else (st, 0, 0),
                                         across_heads), inner=per_head,
                        peel=2 if projected or per_head == 1 else 1, pairs=projected)
        else:
            # With one key tile a step is a query tile (the step is an int, not
            # (tile, key tile)), and the step loaded ahead inside the loop of
            # middle query tiles also loads the next tile's Q: two tiles peeled
            # at the end keep that Q within the sequence.
            self.loop(n_heads, lambda h: self.skewed(
                n_q, *stages(lambda st: (h,) + (st if n_keys > 1 else (st, 0)), within_head),
                inner=n_keys, peel=1 if n_keys > 1 else 2),
                double_buffer=False)
