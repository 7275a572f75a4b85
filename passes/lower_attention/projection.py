"""The projection `npu-lower-attention`'s kernel computes when its group
holds the Q/K/V matmul epilogue (`npu.costmodel.attention.projection`): each head's
Q, K and V made on the cube and drained into the L1 tiles the attention's
stages read, and those tiles' blocks fed to L0A / L0B.

A head's work is a list of jobs (`ProjectedHeads.jobs`), one C piece each:
its mads over the reduction (a W chunk GM -> L1 at a time, L0 sub-steps in
two slots) into an L0C piece, then its drain (L0C -> UB rounded to f16 by
the move, the epilogue's members as `npu-lower-matmul` applies them, UB ->
L1 into the tile: a C piece's Nz order is the tile's). The schedules place
a head's jobs among the previous head's steps, so that the cube and MTE2
work on head h+1 while the vector unit runs head h's softmax. The cube
builders and the epilogue are `npu-lower-matmul`'s.
"""

from __future__ import annotations

from typing import Callable

from mlir import ir

from npu.costmodel.attention import projection as proj
from npu import ir as nir
from npu.kernels.cce_build import copy_bursts, lin, sub
from npu.passes.base import PassError
from npu.passes.lower_attention.sub_steps import SubStepRing
from npu.passes.matmul_epilogue import MatmulEpilogue, Piece
from npu.costmodel.vector.tiling import split_repeats

# The tiles of one head: "q" [D/16, S1], "k" [D/16, S1] (K's own rows: the
# Zn blocks of K^T), "v" [D/16 + 1, S1] (its last column block ones).
Tiles = dict[str, ir.Value]


class ProjectedHeads:
    """Mixed into the kernel (`a`, `t`, `mm`, `granule`, `scope`, `fill_ones`)."""

    projection: proj.Projection | None = None
    # The sub-step slots the jobs of a head share (`run_jobs(one_scope=True)`).
    ring: SubStepRing | None = None
    pp: proj.ProjPlan | None = None
    # Whether the schedule knows each head's parity statically (its head
    # slot), so that alternate heads take the row tiles in reverse (`row_of`).
    snake: bool = False

    def bind_projection(self, region: ir.Operation, plan: dict) -> None:
        """The nested `npu.epilogue` group `region` as this kernel's projection."""
        body = [o.operation for o in region.regions[0].blocks[0].operations]
        matmul = next((o for o in body if o.name == "ascend.matmul"), None)
        if matmul is None:
            raise PassError("the projection in an npu.attention group has no matmul", region)
        roots = [nir.view_root(s) for s in self.a.sources]
        found = proj.find(self.a, {r: region for r in roots}, {}, self.t)
        if isinstance(found, str):
            raise PassError(f"npu.attention group's projection: {found}", region)
        self.projection, self.pp = found, proj.ProjPlan.from_attr(plan)
        pp = self.pp
        if found.n1 % pp.chunk or pp.chunk % pp.sub or self.a.d_blocks % pp.cols:
            raise PassError(f"npu.attention projection plan {plan} does not divide the "
                            f"reduction ({found.n1} blocks) or the head's columns", region)
        self.epi = MatmulEpilogue(self.mm, region, matmul)

    def projection_prologue(self) -> None:
        """Before the heads: the broadcast rows in UB, X in L1 (resident),
        and the buffers the jobs take by turns (L0C pieces, W chunks, X
        strips, UB landing pieces)."""
        p, pp = self.projection, self.pp
        self.epi.load_broadcast([])
        if pp.x_resident:  # copied by the first job (`copy_x`)
            self.x_l1 = nir.alloc([p.n1, p.m1, 16, 16], "f16", "l1")
            self.x_copied = False
        else:
            self.x_strips = [nir.alloc([p.n1, pp.rows, 16, 16], "f16", "l1") for _ in range(2)]
        self.pieces = [nir.alloc([pp.cols * pp.rows, 16, 16], "f32", "l0c")
                       for _ in range(pp.c_slots)]
        self.w_slots = [nir.alloc([pp.cols, pp.chunk, 16, 16], "f16", "l1")
                        for _ in range(pp.w_slots)]
        self.landings = [nir.alloc([pp.cols * pp.rows, 16, 16], "f16", "ub") for _ in range(2)]

    def head_tiles_of(self) -> Tiles:
        """A set of tiles for one head (V's ones column written)."""
        s1, d1 = self.a.seq_blocks, self.a.d_blocks
        tiles = {"q": nir.alloc([d1, s1, 16, 16], "f16", "l1"),
                 "k": nir.alloc([d1, s1, 16, 16], "f16", "l1"),
                 "v": nir.alloc([d1 + 1, s1, 16, 16], "f16", "l1")}
        self.fill_ones(tiles["v"], s1)
        return tiles

    def l0b_slot_bytes(self) -> int:
        """L0B bytes of the jobs' two sub-step slots."""
        return 2 * self.pp.sub * self.pp.cols * proj.FRACTAL_F16

    # -- a head's jobs ----------------------------------------------------------
    def job_count(self) -> int:
        """Jobs a head: row tiles x Q, K, V x column pieces."""
        return self.pp.jobs_per_head(self.projection.m1, self.a.d_blocks)

    def run_jobs(self, h, tiles: Tiles, ks: range | list[int] | None = None,
                 head_slot: int = 0, loads: bool = True,
                 ahead: Callable[[int], None] | None = None, drains: bool = True,
                 one_scope: bool = False,
                 first_loaded: bool = False) -> Callable[[], None] | None:
        """Jobs `ks` (all by default) of head h, in order (row tile, then Q,
        K, V, then column piece), emitted where the caller is, not in a
        scope of their own: npu-insert-sync orders a nested loop as a whole,
        so one scope around them would hold the next head's weight loads
        until every job of this one had read its own. First (unless `loads`
        is False: the caller emitted them earlier, `load_jobs`) the GM -> L1
        copies of each job right before it, then its mads in a scope (with its L0A
        / L0B sub-step slots: they live there only, so the attention's L0
        tiles, in scopes of their own, may share those bytes) and its drain
        in another. `one_scope`: all of it in one scope instead, but the
        last job's drain and `ahead`, which follow it; the jobs' mads in it
        unscoped, on sub-step slots allocated once and taken by turns across
        the jobs: a job's first sub-tiles then go to L0 while the job before
        runs its last mad (a scope of its own is ordered as a whole: its
        next job's loads would wait for its last mad). What follows the
        scope waits for all of its work on a pipe (the Q.K^T after the Q and
        K drains, not the V drain, which comes after it), and the scope's
        entry for all that it needs (such as the W chunks of all its jobs);
        returned: the next head's copies the caller emits after its next op
        (or None); `first_loaded`: the first job's copies are emitted (the
        scope's). `head_slot`: 0 or 1 by head, for the W chunks' turns
        and the order of the row tiles (`row_of`); `ahead(k)`: emitted after
        job k (the next head's copies for job k, after its drain:
        npu-insert-sync's sink-sets puts one set_flag after a run of copies,
        so the next head's copies must not follow this head's in one run: a
        job would wait for all of them); `drains` False: the caller emits
        them later (`drain_jobs`). X streamed: a head's first row tiles are
        the strips the previous head left in L1 (`carried`), any other
        row's strip comes in pieces after the mads of the row before's jobs
        (`next_strip`), so that MTE2 brings it in the gaps the W copies
        leave (whole, it would hold the W copies behind it in MTE2's
        queue, and the cube's queue behind those); a first row not carried
        is copied whole right before its first job."""
        ks = list(range(self.job_count()) if ks is None else ks)
        # With room for two jobs' chunks, job k+1's copies follow job k's
        # mads (MTE2 brings them while the cube works); else they come right
        # before its own mads: no copy may overwrite a chunk whose mads come
        # later in program order.
        early = loads and self.pp.w_slots >= 2 * (self.projection.n1 // self.pp.chunk)
        if one_scope and ks:
            # The first job's copies and X's ahead of the scope: its entry
            # waits for all that it reads, X's copy for the kernel that
            # writes X; the W copies wait for nothing.
            if early:
                self.job_loads(h, ks[0], head_slot)
                self.copy_x()

            def body() -> None:
                self.ring = SubStepRing(*self.sub_step_slots(self.pp.rows))
                self.run_jobs(h, tiles, ks, head_slot, loads, ahead, drains, first_loaded=early)

            self.scope(body)
            self.ring = None
            # The next head's copies that the scope left out: the last job's,
            # or all of them when the jobs' own copies come early (after
            # this head's own in MTE2's queue: no job waits for them; out of
            # the scope, whose copies are waited for as a whole), in three
            # runs (npu-insert-sync sets a flag after a run of copies): the
            # first ones, the second last after the last drain, the last one
            # after the caller's next op (returned).
            rest = [] if ahead is None else ks if early else ks[-1:]
            for k in rest[:-2]:
                ahead(k)
            if drains:
                self.scope(lambda: self.job_drain(h, ks[-1], tiles, head_slot))
            if len(rest) > 1:
                ahead(rest[-2])
                return lambda: ahead(rest[-1])
            for k in rest:
                ahead(k)
            return None
        streamed = not self.pp.x_resident
        if ks and ks[0] == 0:
            self.strips_loaded: set = set()
        if early and ks and not first_loaded:
            self.job_loads(h, ks[0], head_slot)
        self.copy_x()
        if self.ring is not None and early:
            ahead = None  # (`one_scope`: after the scope)
        for i, k in enumerate(ks):
            at, t, c = self.position_of(k)
            if streamed and t == c == 0 and at not in self.strips_loaded \
                    and not self.carried(h, at):
                self.load_strip(self.row_of(at, head_slot))
            if loads and not early:
                self.job_loads(h, k, head_slot)
            if self.ring is not None:
                self.job_mads(k, head_slot)
            else:
                self.scope(lambda k=k: self.job_mads(k, head_slot))
            if early and i + 1 < len(ks):
                self.job_loads(h, ks[i + 1], head_slot)
            if streamed:
                self.next_strip(h, k, head_slot)
            if self.ring is not None and i + 1 == len(ks):
                break  # (`one_scope`: the last drain and `ahead` follow the scope)
            if drains:
                self.scope(lambda k=k: self.job_drain(h, k, tiles, head_slot))
            if ahead is not None:  # after the drain: not in one run with the copies above
                ahead(k)
        return None

    def copy_x(self) -> None:
        """X resident: all of it GM -> L1, once, right before the first
        job's mads (after its W copies: those do not wait, as X does, for
        the kernel that writes X)."""
        if self.pp.x_resident and not self.x_copied:
            p = self.projection
            copy_bursts("cce.copy_gm_to_l1", p.x, self.x_l1, 1, p.n1 * p.m1 * 16)
            self.x_copied = True

    def drain_jobs(self, h, tiles: Tiles, ks: list[int], head_slot: int) -> None:
        """The drains of jobs `ks` of head h (their mads emitted earlier:
        with several steps a head, a step later, so that the vector unit,
        which is the busier there, never waits in its queue for the cube)."""
        for k in ks:
            self.scope(lambda k=k: self.job_drain(h, k, tiles, head_slot))

    def load_jobs(self, h, ks: range | list[int] | None = None, head_slot: int = 0) -> None:
        """The GM -> L1 copies of jobs `ks` (all by default) of head h: with
        `loads_ahead`, a schedule may emit them a head ahead of the jobs, so
        that MTE2 brings the next head's weights while the cube works on
        this one's (the weight traffic is about the cube's work: MTE2 must
        never wait)."""
        for k in (range(self.job_count()) if ks is None else ks):
            self.job_loads(h, k, head_slot)

    def position_of(self, k: int) -> tuple[int, int, int]:
        """(place of its row tile in the head's order, tensor 0 Q / 1 K / 2
        V, column piece) of job k."""
        per_row = 3 * (self.a.d_blocks // self.pp.cols)
        at, rest = divmod(k, per_row)
        t, c = divmod(rest, self.a.d_blocks // self.pp.cols)
        return at, t, c

    def row_of(self, at: int, head_slot: int) -> int:
        """The row tile at place `at` of a head's order: with X streamed
        (and the head's parity static, `snake`), the heads of slot 1 take
        the row tiles last to first, so that a head starts on the two
        strips the previous one ended with (`carried`)."""
        if self.snake and head_slot == 1 and not self.pp.x_resident:
            return self.pp.row_tiles(self.projection.m1) - 1 - at
        return at

    def carried(self, h, at: int) -> bool:
        """Whether the strip of place `at` is in L1 from the previous head
        (`row_of`): its first two places, but for the first head."""
        return self.snake and at < 2 and not (isinstance(h, int) and h == 0)

    def job_of(self, k: int, head_slot: int = 0) -> tuple[int, int, int, int]:
        """(row tile, tensor 0 Q / 1 K / 2 V, column piece, rows) of job k."""
        at, t, c = self.position_of(k)
        r = self.row_of(at, head_slot)
        return r, t, c, min(self.pp.rows, self.projection.m1 - r * self.pp.rows)

    @property
    def loads_ahead(self) -> bool:
        """Whether the W slots hold two heads' chunks: then a schedule may
        copy the next head's weights during this head's jobs (`load_jobs`),
        each head's into its own half. Else each job's copies come right
        before its mads, by turns, so that none overwrites a chunk whose
        mads come later in program order (npu-insert-sync orders what the
        program says: such a copy would be a legal overwrite)."""
        chunks = self.projection.n1 // self.pp.chunk
        return self.pp.w_slots >= 2 * self.job_count() * chunks

    def w_slot(self, k: int, ci: int, head_slot: int) -> ir.Value:
        """The L1 buffer of job k's W chunk ci: by turns across a head's
        jobs, in the half of the slots of its head (`loads_ahead`)."""
        chunks = self.projection.n1 // self.pp.chunk
        first = head_slot * self.job_count() * chunks if self.loads_ahead else 0
        return self.w_slots[(first + k * chunks + ci) % self.pp.w_slots]

    def x_tile(self, r: int) -> tuple[ir.Value, int, int]:
        """(L1 buffer, row blocks per column block, first row block) of X's
        rows of row tile r: all of X resident, or the tile's strip."""
        p, pp = self.projection, self.pp
        if pp.x_resident:
            return self.x_l1, p.m1, r * pp.rows
        return self.x_strips[r % 2], pp.rows, 0

    def next_strip(self, h, k: int, head_slot: int) -> None:
        """After the mads of job k (the i-th of its row tile's place),
        piece i of the strip of the next place (the strip cut into a row's
        count of pieces along the reduction; none when `carried`), so that
        MTE2 brings it in the gaps the W copies leave while the cube works;
        into the slot of the place before, whose jobs have all had their
        mads."""
        per_row = 3 * (self.a.d_blocks // self.pp.cols)
        at, i = divmod(k, per_row)
        if at + 1 < self.pp.row_tiles(self.projection.m1) and not self.carried(h, at + 1):
            self.load_strip(self.row_of(at + 1, head_slot), i, per_row)
            self.strips_loaded.add(at + 1)

    def load_strip(self, r: int, part: int = 0, parts: int = 1) -> None:
        """X's rows of row tile r GM -> its L1 strip (slot r % 2): all of
        it, or piece `part` of `parts` along the reduction."""
        p, pp = self.projection, self.pp
        rows = min(pp.rows, p.m1 - r * pp.rows)
        n0, n1 = p.n1 * part // parts, p.n1 * (part + 1) // parts
        if n0 == n1:
            return
        x1 = self.x_tile(r)[0]
        copy_bursts("cce.copy_gm_to_l1",
                    nir.subview(p.x, [n0, r * pp.rows, 0, 0], [n1 - n0, rows, 16, 16]),
                    nir.subview(x1, [n0, 0, 0, 0], [n1 - n0, rows, 16, 16]),
                    n1 - n0, rows * 16, src_gap=(p.m1 - rows) * 16, dst_gap=(pp.rows - rows) * 16)

    def job_loads(self, h, k: int, head_slot: int) -> None:
        """Job k's W chunks GM -> L1."""
        p, pp, d1 = self.projection, self.pp, self.a.d_blocks
        _, t, c, _ = self.job_of(k, head_slot)
        col = lin((h, d1), (p.firsts[t] + c * pp.cols, 1))
        for ci in range(p.n1 // pp.chunk):
            src = nir.subview(p.w, [col, ci * pp.chunk, 0, 0], [pp.cols, pp.chunk, 16, 16])
            copy_bursts("cce.copy_gm_to_l1", src, self.w_slot(k, ci, head_slot), pp.cols,
                        pp.chunk * 16,
                        src_gap=(p.n1 - pp.chunk) * 16)

    def job_mads(self, k: int, head_slot: int) -> None:
        """Job k's piece: for each L0 sub-step of the reduction, X's and
        W's sub-tiles to the L0A / L0B slot of its turn and a mad."""
        p, pp = self.projection, self.pp
        r, _, _, rows = self.job_of(k, head_slot)
        cols = pp.cols
        piece = nir.subview(self.pieces[k % pp.c_slots], [0, 0, 0], [cols * rows, 16, 16])
        x1, ld, row0 = self.x_tile(r)
        ring = self.ring or SubStepRing(*self.sub_step_slots(rows))
        step = 0
        for ci in range(p.n1 // pp.chunk):
            w1 = self.w_slot(k, ci, head_slot)
            for s in range(pp.chunk // pp.sub):
                a0, b0 = ring.next(rows * pp.sub)
                step += 1
                n0 = ci * pp.chunk + s * pp.sub
                self.mm.reorder_blocks(x1, a0, rows=rows, cols=pp.sub, transpose=False,
                                       op_name="cce.load_l1_to_l0a", src_first=n0 * ld + row0,
                                       src_col_stride=ld)
                self.mm.reorder_blocks(w1, b0, rows=pp.sub, cols=cols, transpose=True,
                                       op_name="cce.load_l1_to_l0b", src_first=s * pp.sub,
                                       src_col_stride=pp.chunk)
                self.mm.mad(a0, b0, piece, rows, pp.sub, cols, step > 1)

    def sub_step_slots(self, rows: int) -> tuple[list[ir.Value], list[ir.Value]]:
        """The two L0A and two L0B slots of the jobs' sub-steps (X's
        `rows` row blocks, W's columns of a piece)."""
        pp = self.pp
        return ([nir.alloc([rows * pp.sub, 16, 16], "f16", "l0a") for _ in range(2)],
                [nir.alloc([pp.sub * pp.cols, 16, 16], "f16", "l0b") for _ in range(2)])

    def job_drain(self, h, k: int, tiles: Tiles, head_slot: int) -> None:
        """Job k's piece L0C -> UB (rounded to f16 by the move), the
        epilogue's members on it, UB -> L1 into its blocks of the tile."""
        p, pp, d1 = self.projection, self.pp, self.a.d_blocks
        r, t, c, rows = self.job_of(k, head_slot)
        cols = pp.cols
        piece = nir.subview(self.pieces[k % pp.c_slots], [0, 0, 0], [cols * rows, 16, 16])
        landing = self.landings[k % 2]
        if rows < pp.rows:
            landing = nir.subview(landing, [0, 0, 0], [cols * rows, 16, 16])
        self.mm.move_to_ub(piece, landing, cols * rows)
        tile = tiles["qkv"[t]]

        def into_tile(_parts, ub: ir.Value, _piece: Piece) -> None:
            """The piece (Nz in UB) -> its blocks of the tile, one burst per
            column block (the tile's row blocks follow each other)."""
            if t and r == pp.row_tiles(p.m1) - 1 and self.a.seq % 16:
                self.zero_padding(ub, cols, rows)
            ld_tile = nir.memref_shape(tile)[1]
            dst = nir.subview(tile, [c * cols, r * pp.rows, 0, 0], [cols, rows, 16, 16])
            copy_bursts("cce.copy_ub_to_l1", ub, dst, cols, rows * 16,
                        dst_gap=(ld_tile - rows) * 16)

        col = lin((h, d1), (p.firsts[t] + c * cols, 1))
        self.epi.sink = into_tile
        self.epi.emit(landing, Piece([], col if isinstance(col, ir.Value) else nir.index_const(col),
                                     nir.index_const(r * pp.rows), cols, rows))

    def zero_padding(self, ub: ir.Value, cols: int, rows: int) -> None:
        """The rows past the sequence of a piece of K or V (its last row
        block's last ones): zeros. They are X's padding rows times W plus
        the bias, which the keys' mask and P's zeros cancel only when they
        are finite, and X's padding need not be (apart, the row-major
        stores drop those rows and the attention's fractalizes write zeros)."""
        valid, lanes = self.a.seq % 16, self.t.lanes(2)
        flat = nir.flatten_memref(ub)
        for j in range(cols):
            first = (j * rows + rows - 1) * 256 + valid * 16
            for piece in split_repeats((16 - valid) * 16, lanes, self.t.max_repeat):
                nir.create_op("cce.vdup", [sub(flat, first + piece.offset,
                                               (piece.repeat - 1) * lanes + piece.mask)],
                              repeat=piece.repeat, mask=piece.mask, dst_blk_stride=1,
                              dst_rep_stride=lanes * 2 // self.granule, scalar=0.0)
