"""How a one-pass fused row kernel's chunks use UB, chosen with the chunk
pipeline model (`npu.costmodel.vector.chunk_pipeline`): the candidate layouts (stores over
loaded buffers, stores left for the chunk's end, one set of the buffers
only stored from), the rows per chunk, and the remark saying which.
A mixin of `FusedKernel` (npu-lower-fused)."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from npu.kernels import fused_chunk
from npu.kernels.resident_fit import shared_columns

from npu.costmodel.fusion import rows as fusion
from npu import ir as nir
from npu.costmodel.vector.chunk_pipeline import ChunkProfile
from npu.costmodel.fusion.rows import FUSED_UB_FRACTION
from npu.passes.base import PassError
from npu.costmodel.vector.tiling import plan_chunks, round_down

# UB share of a chunk's buffers with the streamed ones in every set (at the
# default `ub-fraction`; the memory planner keeps the rest for its gaps).
DOUBLED_SHARE = 0.9


@dataclass
class Layout:
    """How a one-pass kernel's chunks use UB: the plan of their steps
    (`over`: stored results may take over loaded buffers), `single`:
    buffers only stored from have one set shared by the slots, and the rows
    of a chunk; `estimate`: the model's cycles."""

    plan: fused_chunk.ChunkPlan
    deferred: frozenset
    over: bool
    single: bool
    rows: int
    slots: int
    estimate: float = 0.0
    doubled: bool = True  # False: one set of every buffer (a resident row in one slot)
    # No loop: the whole chunks, then the short piece (`short_last`).
    short_last: bool = False

    def copies(self, key) -> int:
        """Sets of the streamed buffer `key` (with one slot, the two that
        npu-double-buffer makes of the loop body's)."""
        stored_only = isinstance(key, tuple) or key not in self.plan.loaded
        if not self.doubled:
            return 1
        return 1 if self.single and stored_only else max(2, self.slots)


class LayoutChoice:
    """Needs `p`, `g`, `target`, `rows`, `n`, `row_block`, `region`, and
    `slot_buffers` / `chunk` to emit a trial chunk (and `plan`, the chain's)."""

    def budget(self) -> int:
        """UB bytes a chunk's buffers may take (the share shrinks with
        `ub-fraction`, which npu-lower halves when planning overflowed)."""
        if self.resident:  # as `resident_fit.resident_fit`, never past UB
            share = min(self.p.ub_fraction / FUSED_UB_FRACTION, 1.0) * fused_chunk.RESIDENT_SHARE
        else:
            share = DOUBLED_SHARE * self.p.ub_fraction / FUSED_UB_FRACTION
        return int(self.target.capacity("ub") * share)

    def candidates(self) -> list[Layout]:
        """Layouts whose chunk of `row_block` rows fits: every combination
        of stores over loaded buffers, stores left for the chunk's end
        (none, `fusion.stores_at_end`'s, all) and one set of stored-only
        buffers (only the default without `layouts`), each at the most
        rows that fit."""
        slots = max(1, self.p.slots)
        out = []
        # Stores left for the chunk's end: none, `stores_at_end`'s, or all of
        # them (back to back, their loop-carried flags become one).
        choices = [frozenset(), fusion.stores_at_end(self.g),
                   frozenset(self.g.leaving) | frozenset(self.g.nz)]
        # (stores over loaded buffers, stores left for the end, one set of stored-only)
        combos = [(over, defer, single) for over in (False, True)
                  for defer in ((1, 2) if not over else (0, 1, 2)) for single in (False, True)]
        seen = set()
        for over, defer, single in combos if self.p.layouts and slots > 1 else combos[:1]:
            deferred = choices[defer]
            if (over, deferred, single) in seen:
                continue  # the same as another choice
            seen.add((over, deferred, single))
            cp = fused_chunk.plan(self.g, deferred, self.target, over, self.p.steps)
            if over and not cp.loaded & cp.stored:
                continue  # the same as without
            if single and not any(b not in cp.loaded for b in cp.streamed) and not self.g.nz:
                continue
            layout = Layout(cp, deferred, over, single, 0, slots)
            if self.resident_slots == 1:  # the row fits UB once: its loads follow its stores
                layout.slots, layout.doubled = 1, False
            cb = fused_chunk.chunk_bytes(self.g, cp, self.target, self.row_block)
            rows = cb.rows(self.budget(), layout.copies)
            if rows < cb.row_block and not out and not self.resident:  # one set: npu-double-buffer decides
                layout.slots = 1
                rows = cb.rows(self.budget(), lambda key: 1)
            if self.p.max_chunk:
                rows = min(rows, max(cb.row_block,
                                     round_down(self.p.max_chunk // self.n, cb.row_block)))
            rows = min(rows, -(-self.rows // cb.row_block) * cb.row_block)
            if self.resident and self.overlap:  # two slots sharing a piece of the row
                row = fused_chunk.chunk_bytes(self.g, cp, self.target, self.row_block, self.n)
                rows = int(layout.slots == 2
                           and shared_columns(row, self.budget(), self.n) == self.overlap)
            elif self.resident:
                rows = min(rows, 1)  # one row a chunk (`npu.kernels.resident_rows`)
            if rows >= cb.row_block:
                layout.rows = rows
                out.append(layout)
        return out

    def choose(self) -> Layout:
        """The candidate layout (and rows per chunk) the pipeline model
        estimates fastest: each candidate's chunk is emitted once at its
        most rows (then erased) for its profile; fewer rows are costed by
        scaling it. Rows that make whole chunks of an even count are
        preferred at equal cost (no short piece before the loop)."""
        found = self.candidates()
        if not found:
            cb = fused_chunk.chunk_bytes(self.g, fused_chunk.plan(self.g, frozenset(), self.target),
                                         self.target, self.row_block)
            raise PassError(f"the fused group does not fit UB: {cb.fixed} + "
                            f"{sum(cb.streamed.values())} (streamed) + {cb.vector} bytes per "
                            f"row, budget {self.budget()}", self.region)
        if len(found) == 1 and not self.p.layouts:
            return found[0]
        best = None
        # A layout's profile does not depend on how many sets its buffers
        # have: one trial per plan, at the most rows of its layouts, scaled.
        profiles: dict = {}
        for layout in sorted(found, key=lambda f: -f.rows):
            key = (layout.over, layout.deferred)
            if key not in profiles:
                profiles[key] = (self.cached_trial(layout), layout.rows)
        for layout in found:
            measured, at = profiles[(layout.over, layout.deferred)]
            profile = measured.scaled(layout.rows / at)
            low = max(self.row_block, layout.rows // 2)
            for rows in range(layout.rows, low - 1, -self.row_block):
                scaled = profile.scaled(rows / layout.rows)
                chunks, prefix = self.chunking(rows, layout.slots)
                cost = scaled.total(chunks, {k: layout.copies(k) for k in scaled.keys()},
                                    set(layout.plan.loaded))
                if prefix:  # the loop's first loads wait for the vector work of the pieces before it
                    cost += prefix / rows * scaled.vector()
                key = (cost, prefix > 0, -rows)
                if best is None or key < best[0]:
                    best = (key, layout, rows)
        (cost, _, _), layout, rows = best
        most = layout.rows  # the most rows a chunk of this layout holds
        layout.rows, layout.estimate = rows, cost
        measured, at = profiles[(layout.over, layout.deferred)]
        self.short_last(layout, most, measured.scaled(1 / at))
        return layout

    def short_last(self, layout: Layout, most: int, row: ChunkProfile) -> None:
        """The kernel's last op (nothing after it on the core hides its end)
        in whole chunks, then the short piece, without a loop (fewer than
        two whole chunks a set), when the chain of latencies (`ChunkProfile.chain_end`,
        from the profile of one row, `row`) ends earlier so than the chunks
        as chosen.

        Why: the pipeline model prices a steady state, but a few rows a core
        (a layernorm of 4 rows on 32 cores) are a chain: each chunk's loads
        wait for the previous chunk's flag (one GM latency on MTE2) and, past
        the sets, for the chunk a set before to be done with its buffers,
        and what follows the last loads (that chunk's vector work, its
        stores and their latency) is the kernel's end. A long chunk's
        vector work covers the short one's loads, and the end is the short
        chunk's (BERT seq 128 on 32 cores, ln2: 2 + 2 rows 1,893 cycles, 4
        in one chunk 1,797, 3 + 1 1,653; 1 + 3, the short piece first as
        the loop form puts it, 2,065; the README example on 8 cores, 16 rows
        a core in 15 + 1, 8,999 -> 8,844). With more chunks than sets (BERT
        seq 512 on 32 cores, ln2: 16 rows a core, at most 7 a chunk) the
        loop of 4 x 4 rows ran its phase in 7,270 cycles, 7 + 7 + 2 in
        6,531 (6 + 6 + 4 6,601; 5 + 5 + 5 + 1 6,616). Not elsewhere: ln1's
        phase gains 27 cycles that way at seq 128, but npu-prefetch's
        estimate of its idle MTE2 shrinks and ffn_out's weights then load
        later (the layer +448).
        """
        k = layout.slots
        if not nir.ends_function(self.region):
            return
        slots = {key: layout.copies(key) for key in row.keys()}
        # as `FusedKernel.pipelined` emits them: the short piece first
        now = ([self.rows % layout.rows] if self.rows % layout.rows else []) + [
            layout.rows] * (self.rows // layout.rows)
        best = (row.chain_end(now, slots, k), layout.rows, False)
        for rows in range(self.row_block, most + 1, self.row_block):
            seq = [rows] * (self.rows // rows) + ([self.rows % rows] if self.rows % rows else [])
            if len(seq) < 2 or self.rows // rows >= 2 * k or seq == now:
                continue  # one chunk, or a chunk loop, or the order emitted anyway
            cost = row.chain_end(seq, slots, k)
            if cost < best[0]:
                best = (cost, rows, True)
        layout.rows, layout.short_last = best[1], best[2]

    def chain_chunks(self, slots: list[dict]) -> None:
        """`short_last`'s chunks, no loop: the whole chunks, then the short
        piece, in the `slots` sets by turns."""
        plan, k = self.plan, len(slots)
        assert plan.full_chunks // k <= 1, "short_last with a chunk loop"
        pieces = [plan.chunk] * plan.full_chunks + (
            [plan.tail.length] if plan.tail is not None else [])
        row0 = 0
        for j, length in enumerate(pieces):
            self.chunk(row0, length, slots[j % k])
            row0 += length

    def chunking(self, rows: int, slots: int) -> tuple[int, int]:
        """(chunks, rows before the chunk loop) of chunks of `rows` rows."""
        plan = plan_chunks(self.rows, rows, self.row_block)
        prefix = (plan.tail.length if plan.tail is not None else 0) + rows * (
            plan.full_chunks % slots)
        return plan.full_chunks + (plan.tail is not None), prefix

    def trial(self, layout: Layout) -> ChunkProfile:
        """The profile of one chunk of `layout.rows` rows, emitted into a
        loop of one trip that is erased again."""
        self.use(layout)
        loop = nir.for_loop(0, 1)
        with ir.InsertionPoint(loop.body):
            slot = self.slot_buffers(layout.rows, 1, lambda key: 1)[0]
            self.profile = ChunkProfile(self.target.path("gm_to_ub").latency)
            self.chunk(0, layout.rows, slot)
            nir.yield_()
        profile, self.profile = self.profile, None
        loop.operation.erase()
        return profile

    def cached_trial(self, layout: Layout) -> ChunkProfile:
        """`trial`, or the profile of an earlier group of the same structure
        (`LowerFused.trials`, one pass run): BERT-12's 12 layers repeat their
        groups, whose 74 trials were 0.43 CPU s on 32 cores."""
        trials = getattr(self.p, "trials", None)
        if trials is None:
            return self.trial(layout)
        key, numbers = self.trial_key(layout)
        found = trials.get(key)
        if found is None:
            profile = self.trial(layout)
            trials[key] = _renamed(profile, lambda root: numbers[root])
            return profile
        # The IR as a trial leaves it: the erased loop's bounds stay (dead
        # constants, which the memory plan's positions count).
        nir.for_loop(0, 1).operation.erase()
        roots = {k: v for v, k in numbers.items()}
        return _renamed(found, lambda k: roots[k])

    def trial_key(self, layout: Layout) -> tuple[tuple, dict]:
        """What `trial(layout)` depends on, values numbered in order of
        appearance instead of by identity: the group's ops (names,
        attributes, operand and result types), what each value is outside
        the group, the group model (members, what loads and leaves) and the
        layout; and that numbering (value -> number)."""
        numbers: dict = {}

        def num(value: ir.Value) -> int:
            return numbers.setdefault(value, len(numbers))

        ops = tuple((op.name, tuple((a, str(op.attributes[a])) for a in op.attributes),
                     tuple(num(v) for v in op.operands), tuple(str(v.type) for v in op.operands),
                     tuple(num(v) for v in op.results), tuple(str(v.type) for v in op.results))
                    for op in (o.operation for o in self.region.regions[0].blocks[0].operations))

        def operand(o: fusion.Operand) -> tuple:
            return num(o.value), num(o.root), o.kind, o.elem

        members = tuple((m.op.name, m.index, m.rows, m.n, tuple(operand(o) for o in m.ins),
                         operand(m.out), repr(m.compute)) for m in self.g.members)
        g = (members, tuple(sorted(num(r) for r in self.g.leaving)),
             tuple(operand(o) for o in self.g.loaded.values()),
             tuple((num(r), num(v)) for r, v in self.g.nz.items()))
        shape = (self.resident, self.overlap, self.resident_slots, self.tail, self.rows, self.n,
                 self.width, getattr(self, "gm_n", None))
        chosen = (layout.over, tuple(sorted(num(r) for r in layout.deferred)), layout.single,
                  layout.rows, layout.slots, layout.doubled)
        outside = tuple((str(v.type), d.name if (d := nir.defining_op(v)) is not None else None)
                        for v in list(numbers))
        return (ops, g, shape, chosen, outside), numbers

    def use(self, layout: Layout) -> None:
        self.layout, self.steps, self.deferred = layout, layout.plan, layout.deferred

    def remark(self, layout: Layout) -> None:
        cp = layout.plan
        over = sorted(r.op.short for r in cp.steps if r.op.out.root in self.g.leaving
                      and cp.buffer.get(r.op.out.root) in cp.loaded)
        how = [f"{layout.rows} rows per chunk in {layout.slots} slot(s)"]
        if over:
            how.append(f"{', '.join(over)} stored from its loaded buffer")
        if layout.single:
            how.append("one set of the stored-only buffers")
        if layout.short_last:
            how.append("the short piece last")
        kinds = [s.kind for s in cp.steps if s.kind != "op"]
        if kinds:
            how.append("steps " + ", ".join(kinds))
        estimate = f"; model {layout.estimate:.0f} cycles" if layout.estimate else ""
        self.p.remark(self.region, f"npu-lower-fused: {'; '.join(how)}{estimate}")


def _renamed(profile: ChunkProfile, rename) -> ChunkProfile:
    """`profile` with the root of each Nz key (`("nz", root)`) renamed."""
    def key(k):
        return ("nz", rename(k[1])) if isinstance(k, tuple) else k

    return ChunkProfile(profile.latency, [(key(b), c) for b, c in profile.loads],
                        [({key(b) for b in r}, {key(b) for b in w}, c) for r, w, c in profile.steps],
                        [(key(b), c, a) for b, c, a in profile.stores])

