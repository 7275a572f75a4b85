"""Weights of an op on a share of the cores, loaded before the barrier
that precedes it (mixed into `PrefetchPass`).

Why: npu-split-cores runs independent ops side by side, each under an
`scf.if` on its own share of the cores (BERT's Q, K and V projections on
cores 0-7, 8-15 and 16-23), and those guards hid their matmul loops from
npu-prefetch, which only looked at top-level loops: each projection's
first weight chunk loaded after the chip barrier, behind the barrier's
release, where a top-level matmul's goes into the previous op's idle MTE2
tail. Now the loop in a share guard is a candidate like a top-level one.
On the cores of its share the previous op is the one before the run of
share guards (the other guards run on other cores), so the gaps are
measured up to the run's first guard, and the copies go into that op's
tail under a guard of the share's cores (its weights are the share's
slice: indexed by the block index less the share's first core). Its
broadcast rows (a bias) go before the chip barrier too (`share_rows.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir

from npu.ir import block_dim, block_idx_value

from .facts import _guarded, contains, is_guard
from .shares import cores_guard


# A matmul on some of the cores with no other share beside it (a classifier's
# fc on 21 of 32 cores: its 63 column blocks in threes) is a share of its
# own; False: only runs of two or more shares (the program of before).
LONE_GUARDS = True


def _is_matmul_loop(op: ir.Operation) -> bool:
    return op.name == "scf.for" and contains(op, lambda x: x.name == "cce.mad")


@dataclass(frozen=True)
class Share:
    """A matmul loop's share guard and its cores."""

    guard: ir.Operation
    cores: frozenset[int]
    # the guards of its run of shares (`tail_bus.py` weighs them together)
    run: tuple = field(default=(), compare=False)


class GuardedLoops:
    """Finding the matmul loops in share guards and emitting their copies
    under a guard of the same cores (`self.facts`, `self._share_run`,
    `self._emit`: the pass's)."""

    def _matmul_loops(self, tops: list[ir.Operation]
                      ) -> list[tuple[ir.Operation, ir.Operation, Share | None]]:
        """(top-level op, matmul loop, its share or None) in program order:
        the top-level matmul loops and the first matmul loop directly in
        each guard of a run of share guards."""
        found = []
        for k, op in enumerate(tops):
            if _is_matmul_loop(op):
                found.append((op, op, None))
                continue
            if not is_guard(op):
                continue
            loop = next((o for o in _guarded(op) if _is_matmul_loop(o)), None)
            if loop is None:
                continue
            last = k  # the run's last guard: `_share_run` goes back from it
            for j in range(k + 1, len(tops)):
                if tops[j].name == "cce.sync_all":
                    break
                if self.facts.works(tops[j]):
                    if not is_guard(tops[j]):
                        break
                    last = j
            run = dict(self._share_run(tops, last, least=1 if LONE_GUARDS else 2) or [])
            if k not in run:
                continue
            found.append((op, loop, Share(op, run[k], tuple(tops[i] for i in run))))
        return found

    def _elsewhere(self, share: Share):
        """Whether a top-level op runs on none of the share's cores (a guard
        of other cores: the other shares, their prefetches)."""
        known: dict[ir.Operation, bool] = {}
        cores = block_dim(share.guard.parent.operation)

        def skip(op: ir.Operation) -> bool:
            if op.name != "scf.if":
                return False
            found = known.get(op)
            if found is None:
                mine = self._guard_cores(op, cores) if is_guard(op) else None
                found = known[op] = mine is not None and not (mine & share.cores)
            return found
        return skip

    def _idle_before_barrier(self, tops: list[ir.Operation], at: int
                             ) -> tuple[int, float] | None:
        """When the share's cores run nothing since the chip barrier before
        the one the op waits at (`self.facts.skip` hides the rest), the
        gap before that barrier: (the op before it, the other cores' time
        to it as estimated: each op's busiest pipe, one after another, and
        a load's and a store's latency). BERT seq 128: V's projection on
        cores 16-23, which run no part of the input's cast."""
        barrier = next((k for k in range(at - 1, -1, -1) if tops[k].name == "cce.sync_all"), None)
        if barrier is None or barrier == 0:
            return None
        first = next((k + 1 for k in range(barrier - 1, -1, -1)
                      if tops[k].name == "cce.sync_all"), 0)
        if any(self.facts.works(tops[k]) for k in range(first, at)):
            return None
        # Per core: a guard of some cores (another share's prefetched
        # weights) runs on those alone, not one after another with the rest.
        cores = block_dim(tops[at].parent.operation)
        per_core = [0.0] * cores
        with self.facts.every_core():
            for k in range(first, barrier):
                work = max(self.facts(tops[k]).work.values(), default=0.0)
                mine = self._guard_cores(tops[k], cores) if is_guard(tops[k]) else None
                for core in range(cores) if mine is None else mine:
                    per_core[core] += work
        busy = max(per_core, default=0.0)
        if not busy:
            return None
        t = self.target
        return barrier - 1, busy + t.path("gm_to_ub").latency + t.path("ub_to_gm").latency

    def _emit_share(self, c, allocs: list[ir.Operation], parts: list, issue: ir.Operation,
                    share: Share) -> list[ir.Operation]:
        """`parts` cloned before `issue` under an `scf.if` of the share's
        cores, `allocs` moved before it; returns the top-level ops now
        before `issue`."""
        blk = block_idx_value(issue)
        cores = block_dim(issue.parent.operation)
        with issue.context, issue.location, ir.InsertionPoint(issue):
            for alloc in allocs:
                alloc.move_before(issue)
            guard, made = cores_guard(sorted(share.cores), blk, cores)
        self._emit(c, [], parts, issue, at=guard.then_block.operations[0].operation)
        # the slot allocs come from inside the loop, so nothing before them moved
        return list(allocs) + made
