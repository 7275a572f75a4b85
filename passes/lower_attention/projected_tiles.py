"""The projected heads' tiles in `npu-lower-attention`'s steps: their
blocks to L0A / L0B for Q.K^T and P.V (`ProjectedTiles`), and the next
head's jobs spread over a head's steps (`SpreadJobs`, `head_tiles`)."""

from __future__ import annotations

from mlir import ir

from npu.costmodel.attention import plan as cost
from npu.costmodel.attention import projection_plan as plan
from npu.costmodel.attention import weight_ring
from npu import ir as nir
from npu.kernels.cce_build import lin
from npu.passes.lower_attention.projection import ProjectedHeads, Tiles


class ProjectedTiles:
    """Mixed into the kernel (`a`, `mm`, `prefix`, `pv`)."""

    def v_jobs_after_softmax(self) -> list[int]:
        """The V jobs of the last head when `head_pipeline` runs them in its
        P.V stage, after its Q.K^T (X resident, a head's jobs in one scope):
        its softmax then overlaps them instead of following them (nothing
        else is left to), when that gains (`v_jobs_overlap`)."""
        if not (self.one_head_scope and self.pp.x_resident
                and plan.v_jobs_overlap(self.a, self.projection, self.pp, self.t)):
            return []
        return [k for k in range(self.job_count()) if self.position_of(k)[1] == 2]

    def q_from_tile(self, q1: ir.Value, x0, mq: int, q0: ir.Value) -> None:
        """Query blocks x0.. (mq) of a head's Q tile -> `q0` in L0A (Zz)."""
        static = isinstance(x0, int)
        self.mm.reorder_blocks(q1, q0, rows=mq, cols=self.a.d_blocks, transpose=False,
                               op_name="cce.load_l1_to_l0a", src_first=x0 if static else 0,
                               src_col_stride=nir.memref_shape(q1)[1],
                               src_base=None if static else x0)

    def k_from_tile(self, k1: ir.Value, y0, kbk: int) -> ir.Value:
        """Key blocks y0.. (kbk) of a head's K tile -> L0B as `k_to_l0b`
        gives them: per column block j of K, its kbk blocks in a row."""
        d1, s1 = self.a.d_blocks, nir.memref_shape(k1)[1]
        l0b = nir.alloc([d1, kbk, 16, 16], "f16", "l0b")
        if kbk == s1:
            self.mm.reorder_blocks(k1, l0b, rows=1, cols=d1 * kbk, transpose=False,
                                   op_name="cce.load_l1_to_l0b", src_col_stride=1)
            return l0b
        flat = self.mm.flat_blocks(l0b, d1 * kbk)
        static = isinstance(y0, int)
        for j in range(d1):
            dst = self.mm.block_view(flat, j * kbk, (j + 1) * kbk)
            self.mm.reorder_blocks(k1, dst, rows=1, cols=kbk, transpose=False,
                                   op_name="cce.load_l1_to_l0b",
                                   src_first=j * s1 + (y0 if static else 0), src_col_stride=1,
                                   src_base=None if static else y0)
        return l0b

    def v_from_tile(self, v1: ir.Value, y0, kbk: int, v0: ir.Value) -> None:
        """Key blocks y0.. (kbk) of a head's V tile (with its ones column)
        -> `v0` in L0B (Zn)."""
        static = isinstance(y0, int)
        self.mm.reorder_blocks(v1, v0, rows=kbk, cols=self.a.d_blocks + 1, transpose=True,
                               op_name="cce.load_l1_to_l0b", src_first=y0 if static else 0,
                               src_col_stride=nir.memref_shape(v1)[1],
                               src_base=None if static else y0)

    def projected_scores(self, tiles: Tiles, q_x0, y0, kbk: int, q0: ir.Value, buf: dict,
                         slot: int, mq: int) -> None:
        """Q.K^T of key blocks y0.. (kbk) into the slot's scores, from the
        head's tiles (in chunks of keys when K^T and V do not fit L0B
        together: `key_scores`); with `q_x0`, query blocks q_x0.. of Q go
        to `q0` first."""
        if q_x0 is not None:
            self.q_from_tile(tiles["q"], q_x0, mq, q0)
        scores = self.prefix(buf["scores"][slot], kbk)
        if len(cost.key_chunks(kbk, self.a.d_blocks, self.t)) > 1:
            self.key_scores(q0, tiles["k"], scores, mq, kbk, y0)
            return
        k0 = self.k_from_tile(tiles["k"], y0, kbk)
        self.mm.mad(q0, k0, scores, mq, self.a.d_blocks, kbk, False)

    def projected_pv(self, tiles: Tiles, y0, mq: int, kbk: int, buf: dict, slot: int) -> None:
        """P.V of key blocks y0.. (kbk), V from the head's tile (in chunks of
        keys as `projected_scores`: `chunked_pv`)."""
        if len(cost.key_chunks(kbk, self.a.d_blocks, self.t)) > 1:
            self.chunked_pv(mq, kbk, buf["p"][slot], tiles["v"], buf["pv"][slot], y0)
            return
        v0 = nir.alloc([kbk, self.a.d_blocks + 1, 16, 16], "f16", "l0b")
        self.v_from_tile(tiles["v"], y0, kbk, v0)
        self.pv(mq, kbk, buf, slot, v0=v0)


class SpreadJobs:
    """The next head's jobs spread over a head's steps (`head_tiles`: head
    h's steps carry head h+1's jobs, from the second step on).

    Each job's W copies are emitted a step ahead of its mads (in the load
    stage of the step before, after that step's own mads), so MTE2 brings
    them while the cube works on the attention, when the W slots hold a
    step's chunks; with four steps a head or more, each job's drain comes
    two steps after its mads (in its step's drain stage), so the vector
    unit never waits for the cube in its queue, when the L0C pieces hold
    three steps' jobs; the last drains then precede the next head's first
    Q.K^T (emitted in the load stage of this head's last step): the jobs
    end at the third last step. Each L1 slot's next copy and each L0C
    piece's next mads must come after the reads of what it held, in
    program order (npu-insert-sync orders what the program says): where
    the slots are too few, a job's copies come right before its mads and
    its drain right after them."""

    def __init__(self, kernel: "ProjectedHeads", per_head: int, tiles: list[Tiles]):
        self.k, self.tiles = kernel, tiles
        pp = kernel.pp
        chunks = kernel.projection.n1 // pp.chunk
        # (The cost model replays this placement: `weight_ring.spread`.)
        self.at, self.deferred = weight_ring.spread(kernel.job_count(), per_head, pp.c_slots)
        self.ahead = weight_ring.copies_ahead(self.at, chunks, pp.w_slots)

    def prologue(self) -> None:
        """Head 0's jobs, before the pipeline."""
        self.k.run_jobs(0, self.tiles[0])

    def in_load(self, h, j: int, parity: int) -> None:
        """In the load stage of step j of head h (of `parity`): the mads of
        head h+1's jobs of step j, then the copies of those of step j+1."""
        nxt, slot = lin((h, 1), (1, 1)), 1 - parity
        self.k.run_jobs(nxt, self.tiles[slot], self.at.get(j, []), slot, loads=not self.ahead,
                        drains=not self.deferred)
        if self.ahead:
            self.k.load_jobs(nxt, self.at.get(j + 1, []), slot)

    def in_drain(self, h, j: int, parity: int) -> None:
        """In the drain stage of step j of head h: the drains of head h+1's
        jobs of step j (deferred)."""
        if self.deferred:
            self.k.drain_jobs(lin((h, 1), (1, 1)), self.tiles[1 - parity], self.at.get(j, []),
                              1 - parity)
