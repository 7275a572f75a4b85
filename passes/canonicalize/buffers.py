"""Def-use on GM buffers for `npu-canonicalize`: ascend ops are
destination-passing (the last operand is written), so a value's "uses" are
the ops touching its buffer. A rewrite may only move or drop a computation
whose buffer is a temporary written by one op and read by one other."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import memref

from npu import ir as nir
from npu.passes.hoist_casts import touching


@dataclass(frozen=True)
class Link:
    """A temporary `root` written by `writer` (all of it, through its last
    operand) and read by `reader` alone, both in one block, writer first."""

    root: ir.Value
    writer: ir.Operation
    reader: ir.Operation


def is_temporary(root: ir.Value) -> bool:
    owner = nir.defining_op(root)
    return owner is not None and owner.name == "memref.alloc"


def plain(value: ir.Value) -> bool:
    """A dense buffer from its first element (the root or a reshape of it)."""
    return nir.is_contiguous(value) and nir.memref_layout(value)[1] == 0


def writes(op: ir.Operation, root: ir.Value) -> bool:
    return op.name.startswith("ascend.") and nir.view_root(op.operands[-1]) == root


def link(value: ir.Value) -> Link | None:
    """The Link of `value`'s buffer, or None when it is not a temporary
    with exactly one whole writer and one reader."""
    root = nir.view_root(value)
    if not is_temporary(root) or not plain(value):
        return None
    ops = touching(root)
    if len(ops) != 2:
        return None
    writer, reader = (ops[0], ops[1]) if writes(ops[0], root) else (ops[1], ops[0])
    if (not writes(writer, root) or writes(reader, root) or not writer.name.startswith("ascend.")
            or writer.parent != reader.parent or not writer.is_before_in_block(reader)
            or not plain(writer.operands[-1])
            or nir.memref_shape(writer.operands[-1]) != nir.memref_shape(root)):
        return None
    return Link(root, writer, reader)


def producer(value: ir.Value, name: str, reader: ir.Operation) -> ir.Operation | None:
    """The op `name` computing `value` for `reader` alone, or None."""
    found = link(value)
    if found is None or found.writer.name != name or found.reader != reader:
        return None
    return found.writer


def consumer(value: ir.Value, name: str, writer: ir.Operation) -> ir.Operation | None:
    """The op `name` reading `value` (all of it, alone), written by `writer` alone."""
    found = link(value)
    if found is None or found.reader.name != name or found.writer != writer:
        return None
    if any(plain(v) and nir.view_root(v) == found.root and
           nir.memref_shape(v) == nir.memref_shape(value) for v in found.reader.operands[:-1]):
        return found.reader
    return None


def _in_block_of(op: ir.Operation, anchor: ir.Operation) -> ir.Operation | None:
    """`op`, or the op holding it, in `anchor`'s block (None: elsewhere)."""
    home = _op(anchor.parent)
    while op is not None and _op(op.parent) != home:
        op = _op(op.parent) if op.parent is not None else None
    return op


def _op(x):
    return getattr(x, "operation", x)


def still_holds(value: ir.Value, start: ir.Operation, end: ir.Operation) -> bool:
    """No op between `start` and `end` (of one block) writes `value`'s
    buffer: `end` may read it in place of what `start` read, or write it
    early (for a destination: nothing between touches it at all)."""
    root = nir.view_root(value)
    for op in touching(root):
        top = _in_block_of(op, start)
        if top is None or top in (start, end):
            continue
        if start.is_before_in_block(top) and top.is_before_in_block(end) and writes(op, root):
            return False
    return True


def untouched_between(value: ir.Value, start: ir.Operation, end: ir.Operation) -> bool:
    """No op between `start` and `end` reads or writes `value`'s buffer."""
    root = nir.view_root(value)
    for op in touching(root):
        top = _in_block_of(op, start)
        if top is None or top in (start, end):
            continue
        if start.is_before_in_block(top) and top.is_before_in_block(end):
            return False
    return True


def erase_if_dead(value: ir.Value) -> None:
    """Erase the alloc (and views) of `value`'s buffer once nothing touches it."""
    root = nir.view_root(value)
    if not is_temporary(root) or touching(root):
        return
    for op in reversed(nir.view_closure(root)):
        op.erase()


def fresh_like(value: ir.Value, before: ir.Operation) -> ir.Value:
    """A new GM temporary of `value`'s shape and element type, allocated
    just before `before`."""
    with before.context, before.location, ir.InsertionPoint(before):
        return nir.alloc(nir.memref_shape(value), nir.memref_element(value),
                         nir.memory_space(value))


def scalar_op(name: str, src: ir.Value, dst: ir.Value, scalar: float,
              at: ir.Operation, after: bool = False) -> ir.Operation:
    """`name`(src -> dst) {scalar} (muls, adds) created before (or after) `at`."""
    point = ir.InsertionPoint.after(at) if after else ir.InsertionPoint(at)
    with at.context, at.location, point:
        return nir.create_op(name, [src, dst], scalar=float(scalar))


def reshaped(value: ir.Value, shape: list[int]) -> ir.Value:
    """A view of the contiguous `value` with `shape` (same element count)."""
    if nir.memref_shape(value) == shape:
        return value
    flat = nir.flatten_memref(value)
    t = ir.MemRefType(flat.type)
    if list(t.shape) == shape:
        return flat
    i64 = ir.IntegerType.get_signless(64)
    result = ir.MemRefType.get(shape, t.element_type, None, t.memory_space)
    group = ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in range(len(shape))])
    return memref.ExpandShapeOp(result, flat, ir.ArrayAttr.get([group]), [], shape).result
