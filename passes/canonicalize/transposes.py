"""Consecutive transposes composed into one.

K^T reaches the scores by one `Transpose` ([B,S,H,D] -> [B,H,D,S]) or by
two (HF: transpose(1, 2) to heads, then transpose(-1, -2); or a batched
matmul reading its B operand transposed, which the linalg -> ascend
conversion materialises as a transpose of the [B,H,S,D] heads). The fused
attention reads K^T's rows straight from the projection when one transpose
makes them (`npu.costmodel.attention.pattern._head_transpose`); two in a
row, the first read only by the second, are one transpose with the
composed permutation, and an identity permutation is no transpose at all.
Exact: values only move.
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.passes.canonicalize import buffers as buf


def compose_transposes(func: ir.Operation) -> list[ir.Operation]:
    """Returns the transposes changed."""
    changed = []
    for op in [o.operation for o in func.regions[0].blocks[0].operations]:
        if op.name != "ascend.transpose":
            continue
        first = buf.producer(op.operands[0], "ascend.transpose", op)
        if first is None or nir.memref_shape(op.operands[0]) != nir.memref_shape(first.operands[-1]):
            continue
        p1 = nir.int_array_attr(first, "permutation")
        p2 = nir.int_array_attr(op, "permutation")
        dead = op.operands[0]
        op.operands[0] = first.operands[0]
        with op.context, op.location:
            op.attributes["permutation"] = ir.DenseI64ArrayAttr.get([p1[p] for p in p2])
        first.erase()
        buf.erase_if_dead(dead)
        changed.append(op)
    return changed
