"""Walks over ops: the two primitives every layer uses.

They depend on the `mlir` bindings only, so the dialects' verifier
(`npu.dialects.verify`) walks with them without importing `npu.ir`, whose
parsing loads and verifies the dialects. `npu.ir` re-exports both.
"""

from __future__ import annotations

from typing import Callable, Iterator

from mlir import ir


def walk(op: ir.Operation | ir.OpView, predicate: Callable[[ir.Operation], bool] | None = None
         ) -> Iterator[ir.Operation]:
    """Pre-order walk over `op` and everything nested in it.

    Collects first, so callers may erase or replace the ops they get. Each op
    returned keeps the IR it belongs to alive (see `walk_held` for a faster
    walk without that).
    """
    op = op.operation
    found: list[ir.Operation] = []

    def visit(o: ir.Operation) -> None:
        if predicate is None or predicate(o):
            found.append(o)
        for region in o.regions:
            for block in region.blocks:
                for child in block.operations:
                    visit(child.operation)

    visit(op)
    visit = None  # noqa: F841 - breaks its cycle through its own cell (`npu.passes.buffer_pieces`)
    return iter(found)


def walk_held(op: ir.Operation | ir.OpView, predicate: Callable[[ir.Operation], bool] | None = None
              ) -> list[ir.Operation]:
    """`list(walk(op, predicate))` by MLIR's own walk, about three times as
    fast, for passes (whose module the pipeline holds): the ops returned do
    not keep their module alive, so a caller must hold it while using them."""
    op = op.operation
    found: list[ir.Operation] = []
    raised: list[BaseException] = []
    advance, interrupt = ir.WalkResult.ADVANCE, ir.WalkResult.INTERRUPT

    if predicate is None:
        def visit(o: ir.Operation) -> ir.WalkResult:
            found.append(o)
            return advance
    else:
        def visit(o: ir.Operation) -> ir.WalkResult:
            try:
                if predicate(o):
                    found.append(o)
            except BaseException as e:  # re-raised as itself, not wrapped by the bindings
                raised.append(e)
                return interrupt
            return advance

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    if raised:
        raise raised[0]
    if found and found[0] == op:
        found[0] = op  # the object given, not a new one
    return found


__all__ = ["walk", "walk_held"]
