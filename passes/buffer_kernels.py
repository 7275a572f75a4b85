"""The kernel each on-chip buffer belongs to, for `npu-plan-memory`'s
pipe-aware reuse (`Buffer.kernel_end`, `npu.passes.buffer_placement`).

A kernel is the top-level ops lowered from one source op: they carry its
location (consecutive ops of one location form a run; a kernel's runs may
be split by another kernel's ops, as npu-prefetch puts a next kernel's first
loads into the previous one's tail). A buffer's kernel is its alloc's
location; its end is the last position of that location's runs. An op
without a location of its own (one location for the whole function) makes
the function one kernel, and its buffers keep their own hand-over.
"""

from __future__ import annotations

from mlir import ir

from npu.passes.buffer_placement import Buffer


def kernel_spans(func_op: ir.Operation, spans: list[tuple[int, int]]
                 ) -> tuple[dict[str, int], dict[str, int]]:
    """Location text -> first, and last, position of the top-level ops carrying it;
    `spans`: the [first, last] positions of the function's top-level ops."""
    ends: dict[str, int] = {}
    starts: dict[str, int] = {}
    ops = [child.operation for child in func_op.regions[0].blocks[0].operations]
    run = None  # the location of the current run (compared, not printed, per op)
    for k, op in enumerate(ops):
        loc = op.location
        if run is None or not loc == run:
            run = loc
            key = str(loc)
        ends[key] = spans[k][1]  # the ops come in order: the last wins
        starts.setdefault(key, spans[k][0])
    return starts, ends


def mark_kernel_ends(buffers: list[Buffer], func_op: ir.Operation,
                     spans: list[tuple[int, int]]) -> None:
    """Set `kernel_start` and `kernel_end` of every buffer (the collector's
    on-chip allocs) from its alloc's location."""
    starts, ends = kernel_spans(func_op, spans)
    for b in buffers:
        key = str(b.op.location)
        b.kernel_start, b.kernel_end = starts.get(key, -1), ends.get(key, -1)


__all__ = ["kernel_spans", "mark_kernel_ends"]
