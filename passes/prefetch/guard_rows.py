"""Host-constant rows that an op on some of the cores loads first after a
chip barrier (a conv's bias, the first load in its `scf.if` core guard),
issued before the barrier under a guard of the same cores (mixed into
`PrefetchPass`).

Why: npu-lower-conv loads the bias (a host constant, 64-512 bytes a core)
first and broadcasts it on V before its first map rows, so the flag that
releases V holds MTE2 one GM latency (~360 cycles) before those rows, at
the start of nearly every conv phase: ResNet-50 on 32 cores, 48 of its 53
phases. `barrier_rows.py` moves such rows when they are top-level ops; a
conv on fewer cores than the launch, or split over a grid that leaves
cores out, has them inside its guard. Issued before the barrier, the load
streams while the cores arrive (docs/multicore.md, "Loads through the
barrier"), and the flag that npu-insert-sync pairs across the barrier for
the broadcast finds it landed. The row's buffer becomes a function-level
alloc live from there; the copy is cloned with the index arithmetic and
views of its operands (the core's slice of the bias, from the block index)
into a new guard of the same cores, as each core's copy indexes a slice
that a core outside the guard has none of.
"""

from __future__ import annotations

from mlir import ir

from npu.ir import VIEW_OPS, block_dim, block_idx_value, clone_into, defining_op, view_root

from .facts import is_guard
from .parts import L1_ROOMS
from .shares import cores_guard

# The ops a guard may open with before its rows (and other such rows):
# index arithmetic, views and allocs.
_OPENING = ("memref.alloc", "cce.copy_gm_to_ub") + tuple(VIEW_OPS)

# False: rows in a guard stay after the barrier (the program of before).
GUARD_ROWS = True


def opening_rows(ops: list[ir.Operation], constants) -> list[ir.Operation]:
    """The GM -> UB copies of host constants (`constants`) among the ops
    that open `ops` (up to the first other instruction or region), each
    into an alloc made in their block that no other opening copy writes (a
    conv's bias buffer is also written later, by its broadcast on V: those
    writes stay after the load, in their place)."""
    found, written = [], []
    for op in ops:
        if not (op.name in _OPENING or op.name.startswith("arith.")):
            break
        if op.name != "cce.copy_gm_to_ub":
            continue
        alloc = defining_op(view_root(op.operands[1]))
        written.append(alloc)
        if (view_root(op.operands[0]) in constants and alloc is not None
                and alloc.name == "memref.alloc" and alloc.parent.operation == op.parent.operation):
            found.append(op)
    return [r for r in found if written.count(defining_op(view_root(r.operands[1]))) == 1]


class GuardRows:
    """Moves a guarded op's opening host-constant rows before its barrier
    (`self.constants`, `self.facts`, `self._guard_cores`, `_rows_fit` and
    `self.l1_room` come from `PrefetchPass` and its mixins)."""

    def _guarded_rows(self, func: ir.Operation, tops: list[ir.Operation], collector) -> None:
        cores = block_dim(func)
        if not GUARD_ROWS or cores < 2:
            return
        bound = L1_ROOMS.index(self.l1_room)
        for barrier in [op for op in tops if op.name == "cce.sync_all"]:
            k = tops.index(barrier)
            g = next((j for j in range(k + 1, len(tops))
                      if tops[j].name == "cce.sync_all" or self.facts.works(tops[j])), None)
            if g is None or not is_guard(tops[g]):
                continue
            guard = tops[g]
            mine = self._guard_cores(guard, cores)
            rows = self._guard_opening_rows(guard)
            if (mine is None or not rows
                    or not self._rows_fit(func, rows, collector, k, g, bound)):
                continue
            self._move_guard_rows(rows, guard, sorted(mine), cores, barrier, tops, collector)

    def _guard_opening_rows(self, guard: ir.Operation) -> list[ir.Operation]:
        return opening_rows([o.operation for o in guard.regions[0].blocks[0].operations],
                            self.constants)

    def _move_guard_rows(self, rows: list[ir.Operation], guard: ir.Operation, mine: list[int],
                         cores: int, barrier: ir.Operation, tops: list[ir.Operation],
                         collector) -> None:
        """Clone `rows` (with the ops of the guard's block their operands
        come from) into a new guard of the cores `mine` before `barrier`,
        their allocs moved before it; erase the originals."""
        block_ops = {o.operation for o in guard.regions[0].blocks[0].operations}
        allocs = [defining_op(view_root(r.operands[1])) for r in rows]
        needed: set[ir.Operation] = set()
        pending = [v for r in rows for v in r.operands]
        while pending:
            op = defining_op(pending.pop())
            if op is None or op in needed or op in allocs or op not in block_ops:
                continue
            needed.add(op)
            pending.extend(op.operands)
        chain = [o.operation for o in guard.regions[0].blocks[0].operations
                 if o.operation in needed or o.operation in rows]
        blk = block_idx_value(barrier)
        with barrier.context, barrier.location, ir.InsertionPoint(barrier):
            new_guard, made = cores_guard(mine, blk, cores)
        for alloc in allocs:
            alloc.move_before(made[0])
        block = new_guard.then_block
        with barrier.context, ir.InsertionPoint(block.operations[len(block.operations) - 1]):
            clone_into(chain, {}, set())
        g = tops.index(guard)
        collector.erasing(g, rows)
        for row in rows:
            row.erase()
        collector.changed(g)
        self.facts.forget(guard)
        k = tops.index(barrier)
        ops = allocs + made
        collector.inserted(k, ops)
        tops[k:k] = ops
