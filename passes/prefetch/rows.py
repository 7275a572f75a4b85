"""Broadcast rows of a matmul's epilogue (a bias: npu-lower-matmul's
`load_broadcast`, one small GM -> UB copy of a host constant before the
matmul's loops) moved into the previous op's idle MTE2 time, with its
weights (mixed into `PrefetchPass`).

Why: the row is the op's first load, and the flag that releases its
consumer holds MTE2 until it has landed (a set waits for its pipe's
earlier work): the loads the matmul's first step waits for start one GM
latency later (BERT-base seq 128 on 32 cores: 356-362 cycles at the start of
out_proj's, ffn_in's and ffn_out's phases). Moved behind the weights
prefetched in the previous op's tail, it joins their run of loads, whose
one flag already waits for them, and costs its bytes only.
"""

from __future__ import annotations

from mlir import ir

from npu.ir import VIEW_OPS, defining_op, view_root
from npu.analysis.pipe_work import instruction_cycles

from .parts import _label, _sole_constant_row
from .positions import index_from, index_near

# The space of a broadcast row's buffer.
ROW_SPACE = "ub"


class RowLoads:
    """Finds and moves an op's broadcast-row loads (`self.facts`,
    `self.target` and `self.l1_room`'s index come from `PrefetchPass`)."""

    def _row_copies(self, loop: ir.Operation, tops: list[ir.Operation], prev: int, at: int,
                    constants: set[ir.Value]) -> list[ir.Operation]:
        """The top-level GM -> UB copies of host constants in this op's
        preparation (after `tops[prev]`, before the loop at `at`, under the
        loop's location), each the only writer of a function-level alloc."""
        where = self.facts.location(loop)
        found = []
        for op in tops[prev + 1:at]:
            if self.facts.location(op) == where and _sole_constant_row(op, constants, loop):
                found.append(op)
        return found

    def _row_place(self, func: ir.Operation, c, tops: list[ir.Operation], prev: int, at: int,
                   parts: list, gaps: list[tuple[int, float]], runs: dict, collector,
                   bound: int) -> tuple[list[ir.Operation], ir.Operation | None, str]:
        """This op's broadcast-row copies and the top-level op to move them
        before: with the latest weights placed in the previous op or before
        it (their run of loads), else alone in the latest such gap whose
        idle time takes their load and its latency; none when UB has no
        room from there to the loop. The text says where, for the remark."""
        if prev < 0:
            return [], None, ""
        rows = self._row_copies(c.loop, tops, prev, at, self.constants)
        if not rows:
            return [], None, ""
        gap = max((p.gap for p in parts if p.gap <= prev and p.gap not in runs), default=None)
        if gap is None:
            alone = self._row_cycles(rows) + self.target.path("gm_to_ub").latency
            gap = max((k for k, idle in gaps if k <= prev and k not in runs and idle >= alone),
                      default=None)
        if gap is None or not self._rows_fit(func, rows, collector, gap + 1, at, bound):
            return [], None, ""
        return rows, tops[self._issue_index(tops, gap, at)], f"'{_label(tops[gap])}' (a load)"

    def _rows_fit(self, func: ir.Operation, rows: list[ir.Operation], collector, first: int,
                  at: int, bound: int) -> bool:
        """Whether UB has room for the rows' buffers at every op from
        `first` to the loop, beside what is live there."""
        size = sum(collector.space_size(defining_op(view_root(r.operands[1])))[1] or 0
                   for r in rows)
        capacity = self.target.capacity(ROW_SPACE)
        return all(need + size <= capacity
                   for need in collector.space_bounds_over(func, ROW_SPACE, first, at, bound))

    def _row_cycles(self, rows: list[ir.Operation]) -> float:
        return sum(instruction_cycles(r, self.target) for r in rows)

    @staticmethod
    def _move_rows(rows: list[ir.Operation], issue: ir.Operation, tops: list[ir.Operation],
                   collector, hint: int = 0) -> None:
        """Move `rows` (with their allocs and the index arithmetic and views
        of their operands that follow `issue`) before the top-level op
        `issue`, in program order, telling `collector` (`hint`: an index
        near `issue`'s, `positions.index_near`)."""
        # Positions of the top-level ops from `issue` to the last row only:
        # the ops moved lie there (a row's operands are made before it), and
        # hashing the whole function body (an op's hash covers its
        # attributes) for each of BERT-12's 36 matmuls on 32 cores was
        # 0.2 CPU s of npu-prefetch.
        start = index_near(tops, issue, hint)
        end = max((_index_from(tops, copy, start) for copy in rows), default=start)
        after = {op: k for k, op in enumerate(tops[start:end + 1], start)}
        moving: set[ir.Operation] = set()
        for copy in rows:
            pending = [copy]
            while pending:
                op = pending.pop()
                if op in moving or after.get(op, -1) < start:
                    continue
                if op is not copy and not (op.name in VIEW_OPS or op.name.startswith("arith.")
                                           or op.name == "memref.alloc"):
                    raise AssertionError(f"npu-prefetch: a row copy's operand is made by "
                                         f"'{op.name}'")
                moving.add(op)
                pending.extend(d for v in op.operands if (d := defining_op(v)) is not None)
        ordered = sorted(moving, key=after.__getitem__)
        for op in sorted(ordered, key=after.__getitem__, reverse=True):
            k = tops.index(op, start)
            collector.changed(k, [])
            del tops[k]
        for op in ordered:
            op.move_before(issue)
        k = index_near(tops, issue, start)
        collector.inserted(k, ordered)
        tops[k:k] = ordered


def _index_from(tops: list[ir.Operation], op: ir.Operation, start: int) -> int:
    """`op`'s index in `tops` from `start` on, or `start` when it is not
    there (a row before the op it would move before: not moved)."""
    try:
        return index_from(tops, op, start)
    except ValueError:
        return start
