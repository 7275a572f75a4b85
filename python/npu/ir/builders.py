"""Op and attribute builders (call inside `with ctx, loc, ir.InsertionPoint(...)`)."""

from __future__ import annotations

import functools
import math
import numbers
from typing import Iterable, Sequence

from mlir import ir
from mlir.dialects import arith, memref, scf

from .accessors import VIEW_OPS, defining_op, memref_layout, memref_shape, memref_type
from .walks import CORE_PRIVATE_ATTR, walk_held


def i64_attr(v: int) -> ir.Attribute:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(v))


def f64_attr(v: float) -> ir.Attribute:
    return ir.FloatAttr.get(ir.F64Type.get(), float(v))


def str_attr_of(v: str) -> ir.Attribute:
    return ir.StringAttr.get(v)


def bool_attr_of(v: bool) -> ir.Attribute:
    return ir.BoolAttr.get(bool(v))


def i64_array_attr(values: Sequence[int]) -> ir.Attribute:
    return ir.DenseI64ArrayAttr.get([int(v) for v in values])


def to_attr(v) -> ir.Attribute:
    """Python value -> attribute, following the dialects' conventions."""
    if isinstance(v, ir.Attribute):
        return v
    if isinstance(v, bool):
        return bool_attr_of(v)
    if isinstance(v, numbers.Integral):  # numpy's integers too
        return i64_attr(int(v))
    if isinstance(v, numbers.Real):
        return f64_attr(float(v))
    if isinstance(v, str):
        return str_attr_of(v)
    if isinstance(v, (list, tuple)):
        return i64_array_attr(v)
    if isinstance(v, ir.Type):
        return ir.TypeAttr.get(v)  # e.g. the `dtype` of hivm ops
    raise TypeError(f"no attribute for {v!r}")


def from_attr(a: ir.Attribute) -> bool | int | float | str:
    """A scalar attribute (bool, integer, float, string) as a Python value."""
    if isinstance(a, (ir.BoolAttr, ir.IntegerAttr, ir.FloatAttr, ir.StringAttr)):
        return a.value
    raise TypeError(f"not a scalar attribute: {a}")


def dict_attr_items(a: ir.Attribute) -> dict[str, bool | int | float | str]:
    """A dictionary attribute of scalars as a Python dict."""
    d = ir.DictAttr(a)
    return {d[i].name: from_attr(d[i].attr) for i in range(len(d))}


def dict_attr_of(values: dict) -> ir.Attribute:
    return ir.DictAttr.get({k: to_attr(v) for k, v in values.items()})


def create_op(name: str, operands: Iterable[ir.Value] = (), results: Sequence[ir.Type] = (),
              **attrs) -> ir.Operation:
    """Create a generic op (the form our IRDL ops take) at the current insertion point."""
    attributes = {}
    i64 = None
    for k, v in attrs.items():
        # integers (most attributes of cce ops) share one i64 type lookup
        if type(v) is int:
            if i64 is None:
                i64 = ir.IntegerType.get_signless(64)
            attributes[k] = ir.IntegerAttr.get(i64, v)
        else:
            attributes[k] = to_attr(v)
    return ir.Operation.create(name, results=list(results), operands=list(operands),
                               attributes=attributes)


def memref_of(shape: Sequence[int], element: str | ir.Type, space: str,
              layout: ir.Attribute | None = None) -> ir.MemRefType:
    et = ir.Type.parse(element) if isinstance(element, str) else element
    return ir.MemRefType.get(list(shape), et, layout, ir.StringAttr.get(space))


def alloc(shape: Sequence[int], element: str | ir.Type, space: str) -> ir.Value:
    return memref.AllocOp(memref_of(shape, element, space), [], []).result


def core_scratch(shape: Sequence[int], element: str | ir.Type) -> ir.Value:
    """A GM temporary of a lowering's own, private to each core on a
    multi-core kernel (`CORE_PRIVATE_ATTR`, placed by npu-plan-gm)."""
    op = memref.AllocOp(memref_of(shape, element, "gm"), [], [])
    op.operation.attributes[CORE_PRIVATE_ATTR] = ir.UnitAttr.get()
    return op.result


def index_const(v: int) -> ir.Value:
    return arith.ConstantOp(ir.IndexType.get(), int(v)).result


def for_loop(lb: int | ir.Value, ub: int | ir.Value, step: int | ir.Value = 1,
             iter_args: Sequence[ir.Value] = ()) -> scf.ForOp:
    """`scf.for`; callers build the body inside `with ir.InsertionPoint(loop.body)`
    and must end it with `scf.YieldOp(...)` (see `yield_`)."""
    def v(x):
        return x if isinstance(x, ir.Value) else index_const(x)
    return scf.ForOp(v(lb), v(ub), v(step), list(iter_args))


def yield_(values: Sequence[ir.Value] = ()) -> None:
    scf.YieldOp(list(values))


def subview(source: ir.Value, offsets: Sequence[int | ir.Value], sizes: Sequence[int],
            strides: Sequence[int] | None = None) -> ir.Value:
    """`memref.subview` with mixed static/dynamic offsets and static sizes.

    The result type carries the strided layout MLIR infers.
    """
    strides = list(strides) if strides is not None else [1] * len(sizes)
    src_t = memref_type(source)
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    static_offsets = [o if isinstance(o, int) else dyn for o in offsets]
    dynamic_offsets = [o if isinstance(o, ir.Value) else o.result  # (an op: its result)
                       for o in offsets if not isinstance(o, int)]
    src_strides, src_off = src_t.get_strides_and_offset()
    # Result layout: offset = src_off + sum(off_i * stride_i), strides = src_stride_i * step_i.
    if src_off == dyn or any(o == dyn for o in static_offsets):
        res_off = dyn
    else:
        res_off = src_off + sum(o * s for o, s in zip(static_offsets, src_strides))
    res_strides = [s * st for s, st in zip(src_strides, strides)]
    layout = ir.StridedLayoutAttr.get(res_off, res_strides)
    result_t = ir.MemRefType.get(list(sizes), src_t.element_type, layout, src_t.memory_space)
    # The op itself, as `memref.SubViewOp` builds it without its Python
    # checks and conversions (half its cost, 16k views on BERT-12 at 32 cores).
    return ir.Operation.create("memref.subview", results=[result_t],
                               operands=[source] + dynamic_offsets, attributes={
        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, len(dynamic_offsets), 0, 0]),
        "static_offsets": ir.DenseI64ArrayAttr.get(static_offsets),
        "static_sizes": ir.DenseI64ArrayAttr.get(list(sizes)),
        "static_strides": ir.DenseI64ArrayAttr.get(strides)}).result


def flatten_memref(value: ir.Value) -> ir.Value:
    """A 1-D view of a contiguous memref: collapse_shape for rank >= 2,
    expand_shape to `[1]` for rank 0, the value itself for rank 1. A source
    with an explicit strided layout (a contiguous subview) keeps its offset
    as `strided<[1], offset: o>` (o may be dynamic), the type collapse_shape
    verifies against."""
    mt = memref_type(value)
    rank = len(mt.shape)
    if rank == 1:
        return value
    numel = math.prod(mt.shape) if rank else 1
    layout = None
    if rank and isinstance(mt.layout, ir.StridedLayoutAttr):
        offset = memref_layout(mt)[1]
        dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
        layout = ir.StridedLayoutAttr.get(dynamic if offset is None else offset, [1])
    result_t = ir.MemRefType.get([numel], mt.element_type, layout, mt.memory_space)
    i64 = ir.IntegerType.get_signless(64)
    if rank == 0:
        return memref.ExpandShapeOp(result_t, value, ir.ArrayAttr.get([]), [], [1]).result
    group = ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in range(rank)])
    return memref.CollapseShapeOp(result_t, value, ir.ArrayAttr.get([group])).result


def is_contiguous(value: ir.Value | ir.Type) -> bool:
    """True when the memref's elements are dense and row-major (any offset):
    what `flatten_memref` and the 1-D views of the vector lowerings need."""
    strides, _ = memref_layout(value)
    expected = 1
    for size, stride in reversed(list(zip(memref_shape(value), strides))):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def clone_into(ops: list[ir.Operation], mapping: dict[ir.Value, ir.Value],
                skip: set[ir.Operation]) -> list[ir.Operation]:
    """Clone `ops` at the current insertion point, remapping operands (also in
    nested regions) through `mapping`, which learns the clones' results."""
    clones = []
    for op in ops:
        if op in skip:
            continue
        clone = op.clone()
        # most ops hold no region: skip MLIR's walk for them
        for inner in (walk_held(clone) if len(clone.regions) else (clone,)):
            operands = inner.operands
            for k, v in enumerate(operands):
                new = mapping.get(v)
                if new is not None:
                    operands[k] = new
        for old, new in zip(op.results, clone.results):
            mapping[old] = new
        clones.append(clone)
    return clones


def view_closure(root: ir.Value) -> list[ir.Operation]:
    """The alloc of `root` and every view derived from it, in block order."""
    alloc = defining_op(root)
    out = [alloc]
    pending = [root]
    while pending:
        v = pending.pop()
        for use in v.uses:
            user = use.owner.operation
            if user.name in VIEW_OPS and user not in out:
                out.append(user)
                pending.extend(user.results)
    return in_block_order(out)


def in_block_order(ops: list[ir.Operation]) -> list[ir.Operation]:
    """A few ops of one block in their order there: compared pairwise rather
    than by numbering the whole block (which made forming every group of a
    large function quadratic)."""
    return sorted(ops, key=functools.cmp_to_key(
        lambda a, b: 0 if a == b else -1 if a.is_before_in_block(b) else 1))


def hoist_definition(value: ir.Value, before: ir.Operation) -> bool:
    """Move the ops that define `value` (allocs, views, constants, and what
    their operands need) above `before` in its block when they come after
    it. Returns False, moving nothing, when one of them is not such an op."""
    pending, chain = [value], []
    while pending:
        op = defining_op(pending.pop())
        if op is None or op in chain or op.parent != before.parent \
                or op.is_before_in_block(before):
            continue
        if op.name not in VIEW_OPS + ("memref.alloc", "arith.constant"):
            return False
        chain.append(op)
        pending.extend(op.operands)
    for op in in_block_order(chain):
        op.move_before(before)
    return True


def form_group_region(kind_attr: str, figures: dict[str, int | str], location: ir.Location,
                      before: ir.Operation, internal: list[ir.Value],
                      members: list[ir.Operation]) -> ir.Operation:
    """Wrap `members` (and the allocs and views of the `internal` tensors,
    which never leave the group) in an `scf.execute_region {kind_attr =
    {figures}}` placed at `before`: the fusion passes' one form of a group."""
    with before.context, location, ir.InsertionPoint(before):
        region_op = ir.Operation.create(
            "scf.execute_region", results=[], operands=[], regions=1,
            attributes={kind_attr: ir.DictAttr.get({k: to_attr(v) for k, v in figures.items()})})
        block = region_op.regions[0].blocks.append()
        with ir.InsertionPoint(block):
            terminator = ir.Operation.create("scf.yield", results=[], operands=[])
    for root in internal:
        for op in view_closure(root):
            op.move_before(terminator)
    _record_members(region_op, location, members)
    for op in members:
        op.move_before(terminator)
    return region_op


# On the module: {a fused group's `file:line:col`: its members' locations},
# kept after the group is lowered, so a report can name what a kernel fused.
FUSED_MEMBERS_ATTR = "npu.fused_members"


def location_key(loc: ir.Location) -> str:
    """`file:line:col` of a location, as the simulator names instructions."""
    from npu.diagnostics import _location_parts

    filename, line, col = _location_parts(loc)
    return f"{filename}:{line}:{col}"


def fused_members(module: ir.Operation) -> dict[str, list[str]]:
    """The module's `FUSED_MEMBERS_ATTR` as {group: [member locations]}."""
    if FUSED_MEMBERS_ATTR not in module.attributes:
        return {}
    d = ir.DictAttr(module.attributes[FUSED_MEMBERS_ATTR])
    return {d[i].name: [ir.StringAttr(x).value for x in ir.ArrayAttr(d[i].attr)]
            for i in range(len(d))}


def _record_members(region_op: ir.Operation, location: ir.Location,
                    members: list[ir.Operation]) -> None:
    module = region_op
    while module.parent is not None:
        module = module.parent.operation
    if module.name != "builtin.module":
        return
    known = fused_members(module)
    key = location_key(location)
    names = list(dict.fromkeys([*known.get(key, []), *(location_key(m.location) for m in members)]))
    known[key] = names
    with module.context:
        module.attributes[FUSED_MEMBERS_ATTR] = ir.DictAttr.get(
            {k: ir.ArrayAttr.get([ir.StringAttr.get(n) for n in v]) for k, v in known.items()})


# What a group's region holds beside its members: their tensors and constants.
GROUP_BODY_OPS = ("memref.alloc", "scf.yield", "arith.constant") + VIEW_OPS


def enclosing_group(op: ir.Operation, kind_attr: str) -> ir.Operation | None:
    """The `scf.execute_region {kind_attr}` group directly holding `op`, if any."""
    parent = op.parent
    if parent is not None and parent.name == "scf.execute_region" and kind_attr in parent.attributes:
        return parent
    return None


def dissolve_group(region_op: ir.Operation, erased: list[ir.Operation]) -> None:
    """After a group's kernel is built inside it: erase `erased` (the members
    it replaces) and the tensors and constants only they used, and put what
    is left where the group is."""
    for op in erased:
        op.erase()
    block = region_op.regions[0].blocks[0]
    for op in reversed([o.operation for o in block.operations]):
        if op.name in GROUP_BODY_OPS and op.name != "scf.yield" and all(
                not list(r.uses) for r in op.results):
            op.erase()
    for op in [o.operation for o in block.operations]:
        if op.name != "scf.yield":
            op.move_before(region_op)
    region_op.erase()


__all__ = ["FUSED_MEMBERS_ATTR", "GROUP_BODY_OPS", "fused_members", "location_key", "alloc", "core_scratch", "bool_attr_of", "clone_into", "create_op", "dict_attr_items", "dict_attr_of", "dissolve_group",
           "enclosing_group", "f64_attr",
           "flatten_memref", "for_loop", "form_group_region", "from_attr", "hoist_definition",
           "i64_array_attr", "i64_attr", "in_block_order", "index_const", "is_contiguous",
           "memref_of", "str_attr_of", "subview", "to_attr", "view_closure", "yield_"]
