"""Broadcast rows of a matmul on a share of the cores, loaded before the
chip barrier that precedes its run of shares (mixed into `PrefetchPass`).

Why: `rows.py` moves a top-level matmul's bias row into the previous op's
tail, but the rows of an op on a share of the cores (BERT's Q, K and V
projections on cores 0-7, 8-15 and 16-23) sit inside its `scf.if` guard,
as its first load. The flag that releases the row's consumer (its cast on
V) holds MTE2 until the row has landed, so the first weight and activation
chunks, which the matmul's first step waits for, started one GM latency
late: at seq 128 on 32 cores, core 8's first chunk loaded at 2,690 against
the row's 2,328 (the QKV phase 9,262 cycles, every projection core late by
the same ~360). Before the barrier the row lands while the cores still
finish their part of the previous op (its last vector work and the GM
latency of its stores: a core arrives at the barrier only once they have
drained), or goes ahead of the share's weights prefetched there (behind
them its flag waited for them to land); the flag across the barrier that
orders it before its consumer (MTE2's loads stream on through a barrier)
then finds it landed.
"""

from __future__ import annotations

from mlir import ir

from npu.dialects.cce import PIPE_OF
from npu.ir import VIEW_OPS, block_dim, block_idx_value, clone_into, defining_op, view_root

from .emit import _Order
from .facts import contains, is_guard
from .parts import L1_ROOMS, _writers
from .positions import index_near
from .shares import _terminator, cores_guard


class ShareRows:
    """Finds a share's row loads and moves them before the chip barrier
    (`self.facts`, `self.target`, `self.constants`, `self._rows_fit`,
    `self._row_cycles`, `self._idle_before_barrier`, `self._say` come from
    `PrefetchPass`)."""

    def _share_rows_fit(self, func: ir.Operation, loop: ir.Operation, tops: list[ir.Operation],
                        share, collector, hint: int = 0
                        ) -> tuple[list[ir.Operation], bool] | None:
        """`_share_rows`' UB test, asked before npu-prefetch guards the
        share's loop: (the ops from the barrier to the share's guard, whether
        UB has room for its rows over them), or None (no rows, no barrier).
        The weights' guard and slots change the guard's L1 alone, and their
        copies go before the barrier; asked after them, the collector
        analysed each of BERT-12's 36 share guards once more (32 cores).
        `hint`: an index near the guard's (`positions.index_near`)."""
        if share is None or not (rows := self._guard_rows(loop, share.guard)):
            return None
        at = index_near(tops, share.guard, hint)
        barrier = self._barrier_before_run(tops, at)
        if barrier is None:
            return None
        bound = L1_ROOMS.index(self.l1_room)
        return tops[barrier:at], self._rows_fit(func, rows, collector, barrier, at, bound)

    def _share_rows(self, func: ir.Operation, loop: ir.Operation, tops: list[ir.Operation],
                    share, collector, fit: tuple[list[ir.Operation], bool] | None = None,
                    hint: int = 0) -> None:
        """Move the broadcast-row copies of `share` (`guarded.Share`: its
        guard and cores; None: a top-level loop, nothing to do) that precede
        its matmul `loop` into a guard of the same cores right before the
        chip barrier its run of shares follows, when the share's cores
        leave MTE2 room for them there and UB has room from there on
        (`fit`: `_share_rows_fit` asked before, used while the ops from
        the barrier to the guard are those it saw)."""
        if share is None:
            return
        guard, cores = share.guard, share.cores
        rows = self._guard_rows(loop, guard)
        if not rows:
            return
        at = index_near(tops, guard, hint)
        barrier = self._barrier_before_run(tops, at)
        if barrier is None:
            return
        room = self._room_before(tops, barrier)
        if room is None:
            # These cores run nothing there: the row may take what the
            # others' time to the barrier leaves after its latency.
            idle = self._idle_before_barrier(tops, at)
            room = None if idle is None else idle[1] - self.target.path("gm_to_ub").latency
        need = self._row_cycles(rows)
        if room is None or room < need:
            return
        bound = L1_ROOMS.index(self.l1_room)
        if not (fit[1] if fit is not None and fit[0] == tops[barrier:at]
                else self._rows_fit(func, rows, collector, barrier, at, bound)):
            return
        # The rows are erased from the guard, its other ops keep their
        # accesses: re-deriving all of them was 0.5 CPU s of BERT-12 on 32
        # cores (36 guards).
        collector.erasing(at, rows)
        first = self._own_loads_before(tops, barrier, cores)
        made = self._emit_rows(rows, tops[first], cores)
        collector.inserted(first, made)
        tops[first:first] = made
        self.facts.forget(guard)
        collector.changed(tops.index(guard, barrier), same_accesses=True)
        self._say(loop, f"npu-prefetch: {len(rows)} broadcast row load(s) ({int(need)} cycles) "
                        f"of this op on cores {min(cores)}-{max(cores)} moved before the chip "
                        f"barrier its run of shares follows ("
                        + ("joining the weights loaded there)" if room == float("inf")
                           else f"MTE2 room there: {int(room)} cycles)"))

    def _own_loads_before(self, tops: list[ir.Operation], barrier: int,
                          cores: frozenset[int]) -> int:
        """Where the run of guards of `cores` holding loads alone (the
        share's weights prefetched there) that ends right before
        `tops[barrier]` starts (`barrier` when there is none). The rows go
        ahead of it: their flag waits for everything MTE2 issued before it,
        and behind those weights, which may still stream through the
        barrier, it held the share's first load after the barrier one GM
        latency (BERT seq 128, V's share: ~360 cycles)."""
        first = barrier
        func = tops[barrier].parent.operation
        n = block_dim(func)
        for k in range(barrier - 1, -1, -1):
            op = tops[k]
            if not self.facts.works(op):
                continue
            if not (is_guard(op) and self._guard_cores(op, n) == cores
                    and contains(op, lambda o: PIPE_OF.get(o.name) == "MTE2")
                    and not contains(op, lambda o: PIPE_OF.get(o.name) not in (None, "MTE2"))):
                break
            first = k
        return first

    def _guard_rows(self, loop: ir.Operation, guard: ir.Operation) -> list[ir.Operation]:
        """The GM -> UB copies of host constants directly in `guard`'s
        body before `loop`, each the only writer of an alloc of that body."""
        body = [o.operation for o in guard.regions[0].blocks[0].operations]
        if loop not in body:
            return []
        found = []
        for op in body[:body.index(loop)]:
            if op.name != "cce.copy_gm_to_ub" or view_root(op.operands[0]) not in self.constants:
                continue
            alloc = defining_op(view_root(op.operands[1]))
            if alloc is None or alloc.name != "memref.alloc" or alloc not in body \
                    or _writers(alloc.results[0]) != [op]:
                continue
            found.append(op)
        return found

    def _barrier_before_run(self, tops: list[ir.Operation], at: int) -> int | None:
        """The index of the chip barrier before `tops[at]` when only guards
        (the run's other shares) or ops without instructions lie between."""
        for k in range(at - 1, -1, -1):
            op = tops[k]
            if op.name == "cce.sync_all":
                return k
            if not is_guard(op) and contains(op, lambda o: bool(PIPE_OF.get(o.name))):
                return None
        return None

    def _room_before(self, tops: list[ir.Operation], barrier: int) -> float | None:
        """MTE2 cycles a load issued right before `tops[barrier]` may take
        on these cores (`self.facts.skip` hides the others) without
        delaying their arrival: after their last load there, the work that
        follows it and, when that work stores to GM, the store's latency
        (the load's own latency overlaps that of the last load, which the
        work after it waits for). After a run of loads alone (the share's
        weights prefetched there) rows join the run and cost their bytes
        only, as in `rows.py`: no limit. None when these cores run nothing
        between the barriers."""
        span = 0.0
        stores = False
        for k in range(barrier - 1, -1, -1):
            op = tops[k]
            if op.name == "cce.sync_all":
                return None
            if not self.facts.works(op):
                continue
            facts = self.facts(op)
            stores = stores or bool(facts.writes)
            if not facts.loads:
                span += facts.tail_span
                continue
            if span == 0.0 and not facts.tail and not stores:
                return float("inf")
            return span + facts.tail_span + (
                self.target.path("ub_to_gm").latency if stores else 0.0)
        return None

    def _emit_rows(self, rows: list[ir.Operation], issue: ir.Operation,
                   cores: frozenset[int]) -> list[ir.Operation]:
        """Clone `rows` (with the views and index arithmetic of their
        operands made after `issue`) into a new guard of `cores` before the
        top-level op `issue`, move their allocs before it and erase the
        originals; returns the top-level ops now before `issue`."""
        order = _Order(issue)
        chain: set[ir.Operation] = set()
        pending = [v for r in rows for v in r.operands]
        allocs = [defining_op(view_root(r.operands[1])) for r in rows]
        while pending:
            op = defining_op(pending.pop())
            if op is None or op in chain or op in allocs or not order.after(op):
                continue
            if not (op.name in VIEW_OPS or op.name.startswith("arith.")):
                raise AssertionError(f"npu-prefetch: a row copy's operand is made by '{op.name}'")
            chain.add(op)
            pending.extend(op.operands)
        made: list[ir.Operation] = []
        for alloc in allocs:
            alloc.move_before(issue)
            made.append(alloc)
        with issue.context, issue.location, ir.InsertionPoint(issue):
            guard, ops = cores_guard(sorted(cores), block_idx_value(issue),
                                     block_dim(issue.parent.operation))
        made += ops
        with ir.InsertionPoint(_terminator(guard.operation)):
            clone_into(sorted(chain, key=order.key) + rows, {}, set())
        for row in rows:
            row.erase()
        return made
