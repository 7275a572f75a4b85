"""Stores that no core reads in the next phase, issued after the chip
barrier instead of before it (mixed into `PrefetchPass`).

Why: a core arrives at `cce.sync_all` only once its pipes but MTE2 have
drained, so every UB -> GM store before a barrier, and its GM latency,
holds the core's arrival, and with it every core's release. A store whose
GM bytes no op of the phase after the barrier touches (on any core) needs
only the barrier after that one: the next barrier still orders it before
its readers, since the core arrives there once MTE3 has drained. BERT's ln1
writes its rows twice, f16 Nz for ffn_in (the next phase) and f32 rows for
ln2's residual (three phases on): the f32 store, 6 KB a chunk on each of
32 cores, shared the end of ln1's phase with the f16 store (MTE3 issues
them in turn) and the chip's bus with ffn_in's weight slots, where ffn_in's
phase starts with MTE3 idle and the bus quiet (BERT seq 128 on 32 cores:
ln1's phase 3,223 -> 2,710 cycles).

Such a store (a top-level `cce.copy_ub_to_gm`) moves to right after the
barrier when its GM bytes (their hull: `barrier_rows._gm_hull`) meet no
GM operand of any op between it and the barrier or in the phase after the
barrier (a phase with an operand of unknown extent keeps its stores), and
no op between it and the barrier writes its UB bytes. Its UB buffer then
lives past the barrier: moved before memory planning and sync insertion,
which see it there.

Not past a barrier that loads placed before it are estimated to run past
(`TwinShares._early_first`'s spill, `self._spilled`): the next phase then
opens with the chip's bus busy with them, and the stores would delay them.
BERT seq 512 on 32 cores: ffn_out's later runs' first strip parts (147 KB
a core on cores 16-31) load in ln1's tail and spill into ffn_in's phase;
ln1's f32 store moved there cost ffn_in's and ffn_out's phases 1.1k cycles
for the 0.7k it took off ln1's (83,079 -> 82,704 with it kept).
"""

from __future__ import annotations

from mlir import ir

from npu.analysis.access import AccessAnalysis, is_access_op
from npu.analysis.byte_ranges import may_overlap
from npu.ir import walk

from .barrier_rows import _gm_hull, _hulls_meet, gm_hulls
from .positions import index_near

STORE = "cce.copy_ub_to_gm"
BARRIER = "cce.sync_all"


class BarrierStores:
    """Moves stores past the chip barrier that ends their phase."""

    def _barrier_stores(self, tops: list[ir.Operation], collector) -> None:
        barriers = [k for k, op in enumerate(tops) if op.name == BARRIER]
        analysis = AccessAnalysis(self.target)
        # Last barrier first: moving ops past one barrier leaves the earlier
        # ones' indices as they were.
        for i in reversed(range(len(barriers))):
            k = barriers[i]
            if tops[k] in self._spilled:
                continue
            start = barriers[i - 1] + 1 if i else 0
            end = barriers[i + 1] if i + 1 < len(barriers) else len(tops)
            after = [h for top in tops[k + 1:end] for h in gm_hulls(top)]
            if any(h is None for h in after):
                continue
            moving = self._sinkable(tops, start, k, after, analysis)
            if moving:
                _move_after(moving, tops, k, collector)

    @staticmethod
    def _sinkable(tops: list[ir.Operation], start: int, barrier: int,
                  after: list[tuple[ir.Value, int, int]], analysis: AccessAnalysis
                  ) -> list[ir.Operation]:
        """The top-level stores of `tops[start:barrier]` that may issue right
        after `tops[barrier]`, in program order."""
        found = []
        for j in range(start, barrier):
            store = tops[j]
            if store.name != STORE:
                continue
            hull = _gm_hull(store.operands[1])
            if hull is None or any(_hulls_meet(hull, h) for h in after):
                continue
            rest = tops[j + 1:barrier]
            if any(h is None or _hulls_meet(hull, h) for top in rest for h in gm_hulls(top)
                   if top not in found):
                continue
            reads = analysis.access(store).reads
            if any(may_overlap(r, w, analysis) for top in rest for op in walk(top)
                   if is_access_op(op) for w in analysis.access(op).writes for r in reads):
                continue
            found.append(store)
        return found


def _move_after(stores: list[ir.Operation], tops: list[ir.Operation], barrier: int,
                collector) -> None:
    """Move `stores` (top-level, before `tops[barrier]`; their operands are
    made before them, so before the barrier) to right after the barrier, in
    their order, telling `collector`."""
    issue = tops[barrier]
    for op in sorted(stores, key=lambda s: tops.index(s), reverse=True):
        k = tops.index(op)
        collector.changed(k, [])
        del tops[k]
    at = index_near(tops, issue, barrier - len(stores)) + 1
    anchor = issue
    for op in stores:
        op.move_after(anchor)
        anchor = op
    collector.inserted(at, list(stores))
    tops[at:at] = list(stores)
