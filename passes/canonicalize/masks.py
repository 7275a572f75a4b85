"""A constant bias and a mask added to the scores, combined once.

T5's relative position bias B (a constant once the exporters' shape
plumbing is folded) and the key mask M = where(keep, 0, c) are added to
every layer's scores. The eager export adds them one after the other in
every layer, `(S + B) + M`; the sdpa export combines them once,
`where(keep, B, c)`, and adds that: one add per layer instead of two, on
the tensor the fused attention takes as its bias. Both spellings reach the
same kernels once each `(S + B) + M` becomes `S + where(keep, B, c)`, one
`where` per bias shared by every layer.

Rounding accepted: where the mask keeps a score nothing changes (B + 0 is
B). Where it masks, every element b of B must satisfy b + c == c exactly in
the element type (checked on the host: c is -inf or a huge negative like
the f32 minimum), so the masked score is S + c instead of (S + B) + c: both
are c unless a score reaches 2^-24 of |c|.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.passes.canonicalize import buffers as buf


def combine_mask_biases(func: ir.Operation) -> list[ir.Operation]:
    """Every `add(add(S, B), M)` of a constant B and a mask M rewritten to
    `add(S, where(keep, B, c))`; returns the adds changed."""
    changed: list[ir.Operation] = []
    # (mask's select, B's buffer and shape) -> where(keep, B, c)
    combined: dict[tuple, ir.Value] = {}
    for outer in [o.operation for o in func.regions[0].blocks[0].operations]:
        if outer.name != "ascend.add":
            continue
        found = _match(outer)
        if found is None:
            continue
        inner, bias_index, select = found
        if not nir.hoist_definition(outer.operands[-1], inner):
            continue  # the result's buffer is made by another op in between
        bias = inner.operands[bias_index]
        key = (select, nir.view_root(bias), tuple(nir.memref_shape(bias)))
        if key not in combined:
            combined[key] = _combine(select, bias, inner)
        inner.operands[bias_index] = combined[key]
        temp = inner.operands[-1]
        inner.operands[len(inner.operands) - 1] = outer.operands[-1]
        outer.erase()
        buf.erase_if_dead(temp)
        changed.append(inner)
    for select in {key[0]: None for key in combined}:
        _erase_if_unread(select)
    return changed


def _match(outer: ir.Operation) -> tuple[ir.Operation, int, ir.Operation] | None:
    """(inner add, index of B among its operands, the mask's select) when
    `outer` adds a mask to a temporary that `add(S, B)` wrote for it alone."""
    for i in (0, 1):
        link = buf.link(outer.operands[i])
        if link is None or link.writer.name != "ascend.add" or link.reader != outer:
            continue
        inner = link.writer
        select = _mask_select(outer.operands[1 - i], inner)
        if select is None or not buf.untouched_between(outer.operands[-1], inner, outer):
            continue
        for j in (0, 1):
            bias = inner.operands[j]
            if (nir.memref_shape(bias) == nir.memref_shape(inner.operands[-1])
                    and _exact(_constant(bias), select)):
                return inner, j, select
    return None


def _mask_select(mask: ir.Value, before: ir.Operation) -> ir.Operation | None:
    """The `select(keep, x, y)` that alone writes all of `mask` before
    `before`, one of x and y constant 0 and the other one constant c, with
    `keep` written by one op before it; None otherwise."""
    root = nir.view_root(mask)
    if not buf.is_temporary(root) or not buf.plain(mask):
        return None
    writers = [op for op in buf.touching(root) if buf.writes(op, root)]
    if len(writers) != 1 or writers[0].name != "ascend.select":
        return None
    select = writers[0]
    if select.parent != before.parent or not select.is_before_in_block(before):
        return None
    if nir.memref_shape(select.operands[-1]) != nir.memref_shape(root):
        return None
    if _fill(select) is None:
        return None
    keep = nir.view_root(select.operands[0])
    keep_writers = [op for op in buf.touching(keep) if buf.writes(op, keep)]
    if buf.is_temporary(keep) and (len(keep_writers) != 1
                                   or not keep_writers[0].is_before_in_block(select)):
        return None
    return select


def _fill(select: ir.Operation) -> tuple[int, float] | None:
    """(index among the select's operands 1 and 2 of the constant c, c)
    when the other one is constant 0 and c is one value everywhere."""
    values = [_constant(select.operands[k]) for k in (1, 2)]
    if any(v is None or v.size == 0 or not np.all(v == v.flat[0]) for v in values):
        return None
    zero = [k for k in (0, 1) if values[k].flat[0] == 0]
    if len(zero) != 1:
        return None
    k = 1 - zero[0]
    return k + 1, values[k].flat[0]


def _exact(bias: np.ndarray | None, select: ir.Operation) -> bool:
    """Every element b of the constant bias gives b + c == c (c: the
    mask's fill), in the element type of the select's result."""
    if bias is None:
        return False
    _, c = _fill(select)
    dtype = nir.numpy_dtypes()[nir.memref_element(select.operands[-1])]
    if bias.dtype != dtype or not np.isfinite(bias).all():
        return False
    fill = np.asarray(c, dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.all(bias + fill == fill))


def _constant(value: ir.Value) -> np.ndarray | None:
    """The data of a constant function argument, in `value`'s shape (a
    reshape of the argument), or None."""
    if not buf.plain(value):
        return None
    data = nir.constant_argument(nir.view_root(value))
    return None if data is None else np.asarray(data).reshape(nir.memref_shape(value))


def _combine(select: ir.Operation, bias: ir.Value, first: ir.Operation) -> ir.Value:
    """A new buffer of B's shape holding where(keep, B, c), computed right
    before `first`, the first add that reads it (the mask's select and B's
    view come before that add)."""
    index, _ = _fill(select)
    combined = buf.fresh_like(bias, first)
    operands = [select.operands[0], select.operands[1], select.operands[2], combined]
    operands[3 - index] = bias  # B where the mask kept 0
    with first.context, select.location, ir.InsertionPoint(first):
        nir.create_op("ascend.select", operands)
    return combined


def _erase_if_unread(select: ir.Operation) -> None:
    """Drop the mask's select (and its buffer) once nothing reads the mask."""
    root = nir.view_root(select.operands[-1])
    if any(op != select for op in buf.touching(root)):
        return
    select.erase()
    buf.erase_if_dead(root)
