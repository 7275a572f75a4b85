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

A reshape between them that splits or merges dims (a conv's NC1HWC0 result
turned to NCHW, [C1, HW, C0] -> [C1, C0, HW], read as [1, C, H, W] by
ConvNeXt's permute to NHWC) composes too, over the finest dims both shapes
are groupings of: there the two are one permutation ([C1, HW, C0] ->
[HW, C1, C0], whole C0 runs moved), read and written through reshapes of
both buffers (`_refined`).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import memref

from npu import ir as nir
from npu.passes.canonicalize import buffers as buf
from npu.passes.transpose_general import collapse_permutation


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
        src, perm = composed[:2]
        dead = op.operands[0]
        with op.context, op.location, ir.InsertionPoint(op):
            if len(composed) == 4:  # over refined dims: both buffers read through reshapes
                src = buf.reshaped(first.operands[0], composed[2])
                op.operands[len(op.operands) - 1] = buf.reshaped(op.operands[-1], composed[3])
            elif src is None:
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
        return _refined(first, second)
    ny = [i for i, d in enumerate(y) if d != 1]  # the axis of y each axis of v is
    nx = [a for a, d in enumerate(x) if d != 1]
    q1 = [nx.index(p1[i]) for i in ny]           # v = transpose(squeezed x, q1)
    return (None if 1 in x else x_value), [q1[p] for p in p2]


def _refined(first: ir.Operation, second: ir.Operation) -> tuple | None:
    """(None, the permutation, the input's and the output's shapes) of the
    two transposes as one over the finest dims that the first's result and
    the second's operand (a reshape of it) are both row-major groupings of,
    dims that stay adjacent merged (`collapse_permutation`); None when no
    such dims exist or a buffer is not a plain dense one."""
    x_value, z_value = first.operands[0], second.operands[-1]
    if not (_identity_layout(x_value) and buf.plain(z_value)):
        return None
    p1 = nir.int_array_attr(first, "permutation")
    p2 = nir.int_array_attr(second, "permutation")
    refined = _common_dims(nir.memref_shape(first.operands[-1]), nir.memref_shape(second.operands[0]))
    if refined is None:
        return None
    sizes, of_y, of_v = refined
    x_order = [d for axis in range(len(p1)) for d in of_y[p1.index(axis)]]
    z_order = [d for axis in p2 for d in of_v[axis]]
    shape, perm = collapse_permutation([sizes[d] for d in x_order], [x_order.index(d) for d in z_order])
    return None, perm, shape, [shape[p] for p in perm]


def _common_dims(y: list[int], v: list[int]) -> tuple[list[int], list[list[int]], list[list[int]]] | None:
    """(the sizes, each dim of y's and of v's refined dims), unit dims
    dropped, or None when y and v are not both groupings of one list."""
    sizes: list[int] = []
    of_y: list[list[int]] = [[] for _ in y]
    of_v: list[list[int]] = [[] for _ in v]
    ys = [i for i, d in enumerate(y) if d != 1]
    vs = [j for j, d in enumerate(v) if d != 1]
    a = b = 0
    left_y, left_v = (y[ys[0]] if ys else 1), (v[vs[0]] if vs else 1)
    while a < len(ys) and b < len(vs):
        size = min(left_y, left_v)
        if max(left_y, left_v) % size:
            return None
        of_y[ys[a]].append(len(sizes))
        of_v[vs[b]].append(len(sizes))
        sizes.append(size)
        left_y, left_v = left_y // size, left_v // size
        if left_y == 1:
            a += 1
            left_y = y[ys[a]] if a < len(ys) else 1
        if left_v == 1:
            b += 1
            left_v = v[vs[b]] if b < len(vs) else 1
    return (sizes, of_y, of_v) if a == len(ys) and b == len(vs) else None


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
