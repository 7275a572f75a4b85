"""Consecutive transposes composed into one.

K^T reaches the scores by one `Transpose` ([B,S,H,D] -> [B,H,D,S]) or by
two: HF's transpose(1, 2) to heads then transpose(-1, -2), a batched matmul
reading its B operand transposed (which the linalg -> ascend conversion
materialises as a transpose of the [B,H,S,D] heads), or the dynamo
exporter's sdpa, which transposes the heads [B*H,S,D] between two reshapes.
The fused attention reads K^T's rows straight from the projection when one
transpose makes them (`npu.costmodel.attention.pattern._head_transpose`).
Two in a row, the first read only by the second (directly, or through a
reshape that drops unit dims), are one transpose with the composed
permutation (of the first's input with its unit dims dropped, when the
reshape dropped them). Exact: values only move.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import memref

from npu import ir as nir
from npu.passes.canonicalize import buffers as buf


def compose_transposes(func: ir.Operation) -> list[ir.Operation]:
    """Returns the transposes changed."""
    changed = []
    for op in [o.operation for o in func.regions[0].blocks[0].operations]:
        if op.name != "ascend.transpose":
            continue
        first = buf.producer(op.operands[0], "ascend.transpose", op)
        if first is None or not buf.still_holds(first.operands[0], first, op):
            continue
        with op.context, op.location:
            composed = _composed(first, op)
        if composed is None:
            continue
        src, perm = composed
        dead = op.operands[0]
        with op.context, op.location:
            if src is None:
                src = _squeezed(first.operands[0], op)
            op.operands[0] = src
            op.attributes["permutation"] = ir.DenseI64ArrayAttr.get(perm)
        first.erase()
        buf.erase_if_dead(dead)
        changed.append(op)
    return changed


def _composed(first: ir.Operation, second: ir.Operation) -> tuple[ir.Value | None, list[int]] | None:
    """(the input the one transpose reads, None: the first's input with its
    unit dims dropped; its permutation), or None when they do not compose."""
    p1 = nir.int_array_attr(first, "permutation")
    p2 = nir.int_array_attr(second, "permutation")
    y = nir.memref_shape(first.operands[-1])
    v = nir.memref_shape(second.operands[0])
    if v == y:
        return first.operands[0], [p1[p] for p in p2]
    x_value = first.operands[0]
    x = nir.memref_shape(x_value)
    if not v or 1 in v or [d for d in y if d != 1] != v or not _identity_layout(x_value):
        return None
    ny = [i for i, d in enumerate(y) if d != 1]  # the axis of y each axis of v is
    nx = [a for a, d in enumerate(x) if d != 1]
    q1 = [nx.index(p1[i]) for i in ny]           # v = transpose(squeezed x, q1)
    return (None if 1 in x else x_value), [q1[p] for p in p2]


def _identity_layout(value: ir.Value) -> bool:
    layout = ir.MemRefType(value.type).layout
    return isinstance(layout, ir.AffineMapAttr) and buf.plain(value) and \
        str(layout) == str(ir.AffineMapAttr.get(ir.AffineMap.get_identity(len(nir.memref_shape(value)))))


def _squeezed(value: ir.Value, before: ir.Operation) -> ir.Value:
    """A view of `value` without its unit dims, made just before `before`."""
    shape = nir.memref_shape(value)
    groups: list[list[int]] = []
    pending: list[int] = []
    for axis, size in enumerate(shape):
        pending.append(axis)
        if size != 1:
            groups.append(pending)
            pending = []
    groups[-1].extend(pending)
    t = ir.MemRefType(value.type)
    result = ir.MemRefType.get([d for d in shape if d != 1], t.element_type, None, t.memory_space)
    with ir.InsertionPoint(before):
        return memref.CollapseShapeOp(result, value, groups).result
