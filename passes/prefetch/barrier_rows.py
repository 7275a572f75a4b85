"""Host-constant rows loaded right after a chip barrier (a fused row
group's parameter rows: a layernorm's gamma and beta), moved before the
barrier (mixed into `PrefetchPass`).

Why: `npu-lower-fused` loads a group's `row` operands once, before its
chunks, as its first loads. After a chip barrier they held MTE2 ahead of
the rows the first chunk waits for (BERT-base seq 128 on 32 cores: ln2's
gamma and beta, 2 x 3 KB, 98 cycles of MTE2 on the last core). No op
writes a host constant, so the load may stay in flight through the
barrier (docs/multicore.md, "Loads through the barrier"): issued just
before it, it streams while the cores arrive, and the flag across the
barrier that `npu-insert-sync` pairs for its consumer finds it landed.
`rows.py` does the same for a matmul's bias row, in the matmul's own
placement; a row group has no weights to join.
"""

from __future__ import annotations

from mlir import ir

from npu.ir import VIEW_OPS

from .parts import L1_ROOMS, _sole_constant_row

# What may lie between the barrier and a group's parameter loads: index
# arithmetic, views and allocs (the group's preparation) and other such loads.
_PREPARATION = ("memref.alloc", "cce.copy_gm_to_ub") + tuple(VIEW_OPS)


class BarrierRows:
    """Moves host-constant UB loads that open a phase before its chip
    barrier (`self.constants`, `_rows_fit`, `_move_rows` and
    `self.l1_room` come from `PrefetchPass` and `RowLoads`)."""

    def _barrier_rows(self, func: ir.Operation, tops: list[ir.Operation], collector) -> None:
        bound = L1_ROOMS.index(self.l1_room)
        for barrier in [op for op in tops if op.name == "cce.sync_all"]:
            k = tops.index(barrier)
            rows = self._opening_rows(tops, k)
            last = max((tops.index(r, k) for r in rows), default=k)
            if rows and self._rows_fit(func, rows, collector, k, last, bound):
                self._move_rows(rows, barrier, tops, collector, k)

    def _opening_rows(self, tops: list[ir.Operation], barrier: int) -> list[ir.Operation]:
        """The GM -> UB copies of host constants among the ops right after
        `tops[barrier]` that prepare the next op (up to its first other
        instruction or region), each the only writer of a function-level
        alloc."""
        found = []
        for op in tops[barrier + 1:]:
            if not (op.name in _PREPARATION or op.name.startswith("arith.")):
                break
            if _sole_constant_row(op, self.constants, op):
                found.append(op)
        return found
