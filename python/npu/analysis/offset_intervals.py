"""Bounds of offsets the access analysis cannot write as affine expressions.

The access analysis keeps an operand's offset exact when its index
arithmetic is affine in the loops' induction variables
(`npu.analysis.index_values`). Other index
arithmetic (the pipelined matmul's `tile / cols` and `tile % cols`, a
`min` that clamps a chunk index) used to widen the access to its whole
tensor; here such an offset is bounded instead, by interval arithmetic over
the same definitions: constants, induction variables over their loop's
range, +, -, *, unsigned and signed division and remainder by a positive
constant, min, max and select. Views are in bounds (MLIR's rule, which
the simulator checks), so an access lies within the hull of its offsets'
interval: conservative, never missing a dependence, and tight where a loop
confines a non-affine index (a matmul loop over one row of C tiles stores
only that row's bytes).
"""

from __future__ import annotations

from mlir import ir

from npu.analysis.index_values import IndexAnalysis
from npu.ir import defining_op, element_bytes

Interval = tuple[int, int]  # lowest and highest value, both included

_CASTS = ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui")
_SHAPE_VIEWS = ("memref.collapse_shape", "memref.expand_shape", "memref.cast")
_CHAIN_VIEWS = _SHAPE_VIEWS + ("memref.subview", "memref.reinterpret_cast")
_MAX_DEPTH = 64
_DYNAMIC = ir.ShapedType.get_dynamic_stride_or_offset()


def index_interval(analysis: IndexAnalysis, value: ir.Value, depth: int = 0) -> Interval | None:
    """The values an index SSA value takes, or None when unknown."""
    memo = analysis.intervals
    if value in memo:
        return memo[value]
    found = _index_interval(analysis, value, depth)
    memo[value] = found
    return found


def _index_interval(analysis: IndexAnalysis, value: ir.Value, depth: int) -> Interval | None:
    if depth > _MAX_DEPTH:
        return None
    affine = analysis.index_value(value)
    if affine is not None:
        b = analysis.bounds(affine)
        if b is None:
            return None
        lo, spread = b
        return lo.const, lo.const + spread
    op = defining_op(value)
    if op is None:
        return None
    name = op.name
    if name in _CASTS:
        return index_interval(analysis, op.operands[0], depth + 1)
    if name == "arith.select":
        a = index_interval(analysis, op.operands[1], depth + 1)
        b = index_interval(analysis, op.operands[2], depth + 1)
        return None if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1]))
    if len(op.operands) != 2:
        return None
    a = index_interval(analysis, op.operands[0], depth + 1)
    b = index_interval(analysis, op.operands[1], depth + 1)
    if a is None or b is None:
        return None
    if name == "arith.addi":
        return a[0] + b[0], a[1] + b[1]
    if name == "arith.subi":
        return a[0] - b[1], a[1] - b[0]
    if name == "arith.muli":
        products = [x * y for x in a for y in b]
        return min(products), max(products)
    if name in ("arith.minui", "arith.minsi"):
        return min(a[0], b[0]), min(a[1], b[1])
    if name in ("arith.maxui", "arith.maxsi"):
        return max(a[0], b[0]), max(a[1], b[1])
    divisor = b[0] if b[0] == b[1] and b[0] > 0 else None
    if divisor is None or a[0] < 0:
        return None
    if name in ("arith.divui", "arith.divsi"):
        return a[0] // divisor, a[1] // divisor
    if name in ("arith.remui", "arith.remsi"):
        if a[0] // divisor == a[1] // divisor:
            return a[0] % divisor, a[1] % divisor
        return 0, divisor - 1
    return None


def _element_interval(analysis: IndexAnalysis, value: ir.Value,
                      depth: int = 0) -> Interval | None:
    """Element offset of a view from the base its chain of views starts at
    (a root, or a `memref.view`)."""
    strides, offset = analysis.layout(value.type)
    if offset != _DYNAMIC:
        return offset, offset
    op = defining_op(value)
    if op is None or depth > _MAX_DEPTH:
        return None
    if op.name in _SHAPE_VIEWS:
        return _element_interval(analysis, op.operands[0], depth + 1)
    if op.name == "memref.reinterpret_cast":
        static = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
        if static and static[0] != _DYNAMIC:
            return static[0], static[0]
        return index_interval(analysis, op.operands[1]) if len(op.operands) > 1 else None
    if op.name != "memref.subview":
        return None
    src = op.operands[0]
    src_strides, _ = analysis.layout(src.type)
    base = _element_interval(analysis, src, depth + 1)
    if base is None or any(s == _DYNAMIC for s in src_strides):
        return None
    lo, hi = base
    static = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
    dynamic = iter(list(op.operands)[1:1 + sum(1 for s in static if s == _DYNAMIC)])
    for s, stride in zip(static, src_strides):
        part = index_interval(analysis, next(dynamic)) if s == _DYNAMIC else (s, s)
        if part is None:
            return None
        ends = (part[0] * stride, part[1] * stride)
        lo, hi = lo + min(ends), hi + max(ends)
    return lo, hi


def byte_interval(analysis: IndexAnalysis, value: ir.Value, depth: int = 0) -> Interval | None:
    """Byte offset of memref `value`'s first element from its root's base
    (through `memref.view`s of a workspace), or None when unknown."""
    elems = _element_interval(analysis, value)
    if elems is None or depth > _MAX_DEPTH:
        return None
    es = element_bytes(str(ir.MemRefType(value.type).element_type))
    lo, hi = elems[0] * es, elems[1] * es
    base = value
    while True:
        op = defining_op(base)
        if op is None or op.name not in _CHAIN_VIEWS:
            break
        base = op.operands[0]
    view = defining_op(base)
    if view is None or view.name != "memref.view":
        return lo, hi
    shift = index_interval(analysis, view.operands[1])
    source = byte_interval(analysis, view.operands[0], depth + 1)
    if shift is None or source is None:
        return None
    return source[0] + shift[0] + lo, source[1] + shift[1] + hi
