"""A transpose of a buffer that insert_slices fill, written as the inserts
into the transpose's result.

ShuffleNet's unit concatenates its two halves along channels and shuffles
them: Concat -> Reshape [1, 2, C/2, H, W] -> Transpose (0, 2, 1, 3, 4). In
GM that is two insert_slices into the concat buffer, then a transpose of the
whole buffer: three passes over the map. Each half is one value of the
group dim, so its box in the transposed layout is [1, C/2, 1, H, W] at
(0, 0, i, 0, 0): the same elements in the same order (the permutation only
moves a unit dim of the box). Each insert then writes straight into the
transpose's result (planes C/2 apart), and the concat buffer and the
transpose go: two passes. Taken when the buffer is a temporary that only
the inserts write and only the transpose reads (through one reshape that
splits its dims), and every insert's box is such a box. Exact: values only
move.
"""

from __future__ import annotations

import math

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.passes.canonicalize import buffers as buf
from npu.passes.hoist_casts import touching


def insert_transposed(func: ir.Operation) -> list[ir.Operation]:
    """Returns the inserts moved onto a transpose's result."""
    changed = []
    for op in [o.operation for o in func.regions[0].blocks[0].operations]:
        if op.name != "ascend.transpose":
            continue
        moves = _moves(op)
        if moves is None:
            continue
        out = op.operands[-1]
        first = min((ins for ins, _, _ in moves), key=_position)
        for view in reversed(_chain(out)):  # the result's buffer exists before the first insert
            if nir.defining_op(view) is not None and first.is_before_in_block(nir.defining_op(view)):
                nir.defining_op(view).move_before(first)
        with op.context, op.location:
            for ins, offsets, sizes in moves:
                with ir.InsertionPoint(ins):
                    src = buf.reshaped(ins.operands[0], sizes)
                    nir.create_op("ascend.insert_slice", [src, out],
                                  offsets=ir.DenseI64ArrayAttr.get(offsets))
        dead = op.operands[0]
        op.erase()
        for ins, _, _ in moves:
            changed.append(ins)
            ins.erase()
        buf.erase_if_dead(dead)
    return changed


def _moves(op: ir.Operation) -> list[tuple[ir.Operation, list[int], list[int]]] | None:
    """Each insert into the transpose's input buffer with its box in the
    result, or None when the rewrite does not apply."""
    v = op.operands[0]
    root = nir.view_root(v)
    if not buf.is_temporary(root) or not buf.plain(v) or not nir.is_contiguous(op.operands[-1]):
        return None
    users = touching(root)
    inserts = [u for u in users if u != op]
    if (not inserts or op not in users or any(
            u.name != "ascend.insert_slice" or nir.view_root(u.operands[-1]) != root
            or u.operands[-1] != root or u.parent != op.parent or not u.is_before_in_block(op)
            for u in inserts)):
        return None
    first = min(inserts, key=_position)
    if not buf.untouched_between(op.operands[-1], first, op) or any(
            nir.defining_op(x) is not None and (nir.defining_op(x).parent != op.parent or (
                nir.defining_op(x).name not in nir.VIEW_OPS + ("memref.alloc",)))
            for x in _chain(op.operands[-1])):
        return None
    groups = _expansion(nir.memref_shape(root), nir.memref_shape(v))
    perm = nir.int_array_attr(op, "permutation")
    if groups is None:
        return None
    moves = []
    for ins in inserts:
        box = _box(nir.int_array_attr(ins, "offsets"), nir.memref_shape(ins.operands[0]),
                   groups, nir.memref_shape(v))
        if box is None:
            return None
        offsets, sizes = box
        kept = [d for d in perm if sizes[d] != 1]
        if (kept != sorted(kept) or not buf.plain(ins.operands[0])
                or not isinstance(ir.MemRefType(ins.operands[0].type).layout, ir.AffineMapAttr)):
            return None  # the box's elements would change order
        moves.append((ins, [offsets[d] for d in perm], [sizes[d] for d in perm]))
    return moves


def _expansion(big: list[int], view: list[int]) -> list[list[int]] | None:
    """The dims of `view` each dim of `big` splits into (consecutive), or None."""
    groups, k = [], 0
    for size in big:
        group, prod = [], 1
        while k < len(view) and (prod < size or (not group and view[k] == size == 1)):
            group.append(k)
            prod *= view[k]
            k += 1
        if prod != size or not group:
            return None
        groups.append(group)
    return groups if k == len(view) else None


def _box(offsets: list[int], sizes: list[int], groups: list[list[int]], view: list[int]
         ) -> tuple[list[int], list[int]] | None:
    """The box [offsets, offsets + sizes) of the big buffer as a box of the
    view (each big dim split into its group), or None when it is not one."""
    out_off, out_size = [0] * len(view), [0] * len(view)
    for o, n, group in zip(offsets, sizes, groups):
        dims = [view[g] for g in group]
        j = len(dims)  # dims[j:] taken whole, dims[j - 1] cut, dims[:j - 1] fixed
        while j > 0 and o % math.prod(dims[j - 1:]) == 0 and n % math.prod(dims[j - 1:]) == 0:
            j -= 1
        inner = math.prod(dims[j:])
        for g, d in zip(group[j:], dims[j:]):
            out_off[g], out_size[g] = 0, d
        if j == 0:
            continue
        lo, hi = o // inner, (o + n) // inner - 1  # in units of the inner block
        if o % inner or n % inner or lo // dims[j - 1] != hi // dims[j - 1]:
            return None
        out_off[group[j - 1]], out_size[group[j - 1]] = lo % dims[j - 1], hi - lo + 1
        fixed = np.unravel_index(lo // dims[j - 1], dims[:j - 1]) if j > 1 else ()
        for g, x in zip(group[:j - 1], fixed):
            out_off[g], out_size[g] = int(x), 1
    return out_off, out_size


def _position(op: ir.Operation) -> int:
    return [o.operation for o in op.block.operations].index(op)


def _chain(value: ir.Value) -> list[ir.Value]:
    """`value` and the values it views, back to its buffer."""
    chain = [value]
    while (owner := nir.defining_op(chain[-1])) is not None and owner.name in nir.VIEW_OPS:
        chain.append(owner.operands[0])
    return chain
