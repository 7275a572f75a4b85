"""Index values of a multi-core kernel evaluated for one core at compile
time: a view's offsets and a guard's condition as functions of the block
index (npu-split-cores' row parts, npu-lower's own tiles)."""

from __future__ import annotations

from mlir import ir

from .accessors import constant_int, defining_op, int_array_attr, int_attr

_INT_OPS = {
    "arith.addi": lambda a, b: a + b,
    "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b,
    "arith.divui": lambda a, b: a // b if b else None,
    "arith.remui": lambda a, b: a % b if b else None,
    "arith.andi": lambda a, b: a & b,
    "arith.ori": lambda a, b: a | b,
}
# arith.cmpi predicates (eq ne slt sle sgt sge ult ule ugt uge) on values >= 0
_CMPI = (lambda a, b: a == b, lambda a, b: a != b, lambda a, b: a < b, lambda a, b: a <= b,
         lambda a, b: a > b, lambda a, b: a >= b, lambda a, b: a < b, lambda a, b: a <= b,
         lambda a, b: a > b, lambda a, b: a >= b)


def subview_offsets(view: ir.Operation) -> list[int | ir.Value]:
    """A subview's offsets, each static or the SSA value given for it."""
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    values = iter(list(view.operands)[1:])
    return [next(values) if o == dyn else o for o in int_array_attr(view, "static_offsets")]


def value_on_core(v: int | ir.Value, blk: ir.Value, core: int, loops: bool = False) -> int | None:
    """`v` on core `core` (`blk` its block index): integer arithmetic and
    comparisons of constants and the block index (with `loops`, also of a
    one-trip `scf.for`'s induction variable: its lower bound), else None."""
    if isinstance(v, int):
        return v
    if v == blk:
        return core
    op = defining_op(v)
    if op is None:
        return _one_trip_iv(v) if loops else None
    if op.name == "arith.constant":
        return constant_int(v)
    args = [value_on_core(x, blk, core, loops) for x in op.operands]
    if any(a is None for a in args) or len(args) != 2:
        return None
    if op.name in _INT_OPS:
        out = _INT_OPS[op.name](*args)
        return None if out is None else int(out)
    if op.name == "arith.cmpi":
        return int(_CMPI[int_attr(op, "predicate")](*args))
    return None


def _one_trip_iv(v: ir.Value) -> int | None:
    owner = v.owner.owner if isinstance(v.owner, ir.Block) else None
    if owner is None or owner.name != "scf.for" or v != owner.regions[0].blocks[0].arguments[0]:
        return None
    lo, hi, step = (constant_int(x) for x in owner.operands[:3])
    if None in (lo, hi, step) or step <= 0 or -(-(hi - lo) // step) != 1:
        return None
    return lo


__all__ = ["subview_offsets", "value_on_core"]
