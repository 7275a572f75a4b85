"""Builders of `npu-insert-sync`: insert one sync op before or after an op."""

from __future__ import annotations

from mlir import ir

from npu.ir import create_op



def _emit(name: str, loc: ir.Location, **attrs) -> ir.Operation:
    with loc:
        return create_op(name, **attrs)


def insert_before(op: ir.Operation, name: str, **attrs) -> ir.Operation:
    with ir.InsertionPoint(op):
        return _emit(name, op.location, **attrs)


def insert_after(op: ir.Operation, name: str, **attrs) -> ir.Operation:
    """Insert right after `op` (without listing its block: that made the pass
    quadratic in the block's length)."""
    with ir.InsertionPoint.after(op):
        return _emit(name, op.location, **attrs)
