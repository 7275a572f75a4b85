"""Shared IR helpers: contexts, parsing with real file locations, walks,
attribute and type accessors, and op builders.

Passes, the simulator and the tools use these instead of re-writing a walk or
a builder each. Everything here is thin over the upstream `mlir` bindings.
"""

from __future__ import annotations

import functools

import re
from typing import Callable, Iterable, Iterator, Sequence

import math
import numbers

from mlir import ir
from mlir.dialects import arith, memref, scf

from npu import diagnostics

# ----------------------------------------------------------------------------
# Contexts and parsing
# ----------------------------------------------------------------------------

# The bindings have a Python class for dense arrays of i1/i8/i16/i32/i64/f32/
# f64 only, and their caster raises TypeError on any other element type
# (`array<ui8: 1>`, `array<bf16: 1.0>`, all valid MLIR). Every read of such an
# attribute (`op.attributes[...]`, iterating an ArrayAttr or DictAttr) then
# failed, or aborted the process when the read happened inside C++. Input is
# the user's: those arrays stay plain `ir.Attribute`s, which our verifiers
# reject with a located error where an array<i64: ...> is expected.
# i64 first: nearly every array read is one, and each failed cast raises.
_DENSE_ARRAY_CLASSES = (ir.DenseI64ArrayAttr, ir.DenseI32ArrayAttr, ir.DenseBoolArrayAttr,
                        ir.DenseI8ArrayAttr, ir.DenseI16ArrayAttr, ir.DenseF32ArrayAttr,
                        ir.DenseF64ArrayAttr)


def _dense_array_or_plain(attr: ir.Attribute) -> ir.Attribute:
    for cls in _DENSE_ARRAY_CLASSES:
        try:
            return cls(attr)
        except ValueError:
            pass
    return attr


def _install_dense_array_caster() -> None:
    """Replace the upstream dense-array caster (process-wide, keyed by TypeID)."""
    with ir.Context():
        typeid = ir.DenseI64ArrayAttr.get([]).typeid
    ir.register_type_caster(typeid, replace=True)(_dense_array_or_plain)


_install_dense_array_caster()


def make_context() -> ir.Context:
    """A context with upstream dialects and ascend/cce/hivm loaded."""
    from npu.dialects import load_dialects

    ctx = ir.Context()
    load_dialects(ctx)
    diagnostics.attach_to_context(ctx)
    return ctx


class ParseError(Exception):
    pass


# Input MLIR's parser does not reject but aborts the process on (an assertion
# in the LLVM 22 build): a dense array of `index` (`array<index: 0, 1>`).
_PARSER_CRASHES = ((re.compile(r"array\s*<\s*index\b"),
                    "dense arrays of 'index' are not supported (use array<i64: ...>)"),)


def _reject_parser_crashes(text: str, ctx: ir.Context) -> None:
    """Report what would abort MLIR's parser as an ordinary located error."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        code = line.split("//", 1)[0]
        for pattern, message in _PARSER_CRASHES:
            m = pattern.search(code)
            if m:
                diagnostics.emit_error(message, ir.Location.file("-", lineno, m.start() + 1,
                                                                 context=ctx))
                raise ParseError()


def parse_module(text: str, ctx: ir.Context, first_line: int = 1) -> ir.Module:
    """Parse `text` whose first line is line `first_line` of the input file.

    Leading newlines keep locations those of the original file (needed for
    `--split-input-file`). Errors go to the current diagnostics engine and
    raise `ParseError`; our declarative verifiers run after a clean parse.
    """
    from npu.dialects import verify

    padded = "\n" * (first_line - 1) + text
    _reject_parser_crashes(padded, ctx)
    with ctx:
        try:
            module = ir.Module.parse(padded)
        except ir.MLIRError as e:
            from npu.dialects.irdl_errors import explain_in_text

            for d in e.error_diagnostics:
                diagnostics.current().emit_mlir(d, explain_in_text(d.message, padded, d.location))
            if not e.error_diagnostics:
                diagnostics.emit_error(str(e))
            raise ParseError() from None
    if not verify(module.operation):
        raise ParseError()
    return module


# ----------------------------------------------------------------------------
# Walking
# ----------------------------------------------------------------------------


def walk(op: ir.Operation | ir.OpView, predicate: Callable[[ir.Operation], bool] | None = None
         ) -> Iterator[ir.Operation]:
    """Pre-order walk over `op` and everything nested in it.

    Collects first, so callers may erase or replace the ops they get. Each op
    returned keeps the IR it belongs to alive (see `walk_held` for a faster
    walk without that).
    """
    op = op.operation
    found: list[ir.Operation] = []

    def visit(o: ir.Operation) -> None:
        if predicate is None or predicate(o):
            found.append(o)
        for region in o.regions:
            for block in region.blocks:
                for child in block.operations:
                    visit(child.operation)

    visit(op)
    return iter(found)


def walk_held(op: ir.Operation | ir.OpView, predicate: Callable[[ir.Operation], bool] | None = None
              ) -> list[ir.Operation]:
    """`list(walk(op, predicate))` by MLIR's own walk, about three times as
    fast, for passes (whose module the pipeline holds): the ops returned do
    not keep their module alive, so a caller must hold it while using them."""
    op = op.operation
    found: list[ir.Operation] = []
    raised: list[BaseException] = []
    advance, interrupt = ir.WalkResult.ADVANCE, ir.WalkResult.INTERRUPT

    if predicate is None:
        def visit(o: ir.Operation) -> ir.WalkResult:
            found.append(o)
            return advance
    else:
        def visit(o: ir.Operation) -> ir.WalkResult:
            try:
                if predicate(o):
                    found.append(o)
            except BaseException as e:  # re-raised as itself, not wrapped by the bindings
                raised.append(e)
                return interrupt
            return advance

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    if raised:
        raise raised[0]
    if found and found[0] == op:
        found[0] = op  # the object given, not a new one
    return found


def ops_named(root: ir.Operation | ir.OpView, *names: str) -> list[ir.Operation]:
    wanted = set(names)
    return list(walk(root, lambda o: o.name in wanted))


def replace_ops(root: ir.Operation | ir.OpView, names: Iterable[str],
                build: Callable[[ir.Operation], None]) -> None:
    """Replace each op named one of `names`: `build(op)` creates the replacement
    just before it, under its location (so errors point at the user's source),
    then the op is erased."""
    for op in ops_named(root, *names):
        with op.location, ir.InsertionPoint(op):
            build(op)
        op.erase()


def ops_in_dialect(root: ir.Operation | ir.OpView, dialect: str) -> list[ir.Operation]:
    prefix = dialect + "."
    return list(walk(root, lambda o: o.name.startswith(prefix)))


def functions(module: ir.Module | ir.Operation) -> list[ir.Operation]:
    op = module.operation
    return [o.operation for o in op.regions[0].blocks[0].operations if o.operation.name == "func.func"]


def symbol_name(func_op: ir.Operation) -> str:
    return ir.StringAttr(func_op.attributes["sym_name"]).value


# Argument attribute of the GM workspace `npu-plan-gm` appends: scratch bytes
# the caller provides (the simulator allocates it), neither input nor output.
WORKSPACE_ATTR = "npu.workspace"


def arg_attrs(func_op: ir.Operation, index: int) -> dict[str, ir.Attribute]:
    """The attribute dictionary of argument `index` of a func.func."""
    if "arg_attrs" not in func_op.attributes:
        return {}
    attrs = ir.ArrayAttr(func_op.attributes["arg_attrs"])
    if index >= len(attrs):
        return {}
    d = ir.DictAttr(attrs[index])
    return {d[i].name: d[i].attr for i in range(len(d))}


def workspace_args(func_op: ir.Operation) -> list[int]:
    """Indices of the arguments marked as GM workspace."""
    n = len(func_op.regions[0].blocks[0].arguments) if func_op.regions[0].blocks else 0
    return [i for i in range(n) if WORKSPACE_ATTR in arg_attrs(func_op, i)]


# A multi-core kernel (npu-split-cores): `npu.block_dim = N : i64` on the
# func.func says how many cores it is launched on, and its one `index`
# argument marked `{npu.block_idx}` holds each instance's core number.
BLOCK_IDX_ATTR = "npu.block_idx"
BLOCK_DIM_ATTR = "npu.block_dim"


def append_argument(func_op: ir.Operation, arg_type: ir.Type,
                    attrs: dict[str, ir.Attribute] | None = None) -> ir.Value:
    """A new last argument of `func_op` (its type and argument attributes
    kept in step with the block)."""
    block = func_op.regions[0].blocks[0]
    value = block.add_argument(arg_type, func_op.location)
    ftype = ir.FunctionType(ir.TypeAttr(func_op.attributes["function_type"]).value)
    func_op.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get(list(ftype.inputs) + [arg_type], list(ftype.results)))
    n_args = len(block.arguments)
    old = (list(ir.ArrayAttr(func_op.attributes["arg_attrs"]))
           if "arg_attrs" in func_op.attributes else [])
    old += [ir.DictAttr.get({})] * (n_args - 1 - len(old))
    func_op.attributes["arg_attrs"] = ir.ArrayAttr.get(old + [ir.DictAttr.get(attrs or {})])
    return value


def erase_argument(func_op: ir.Operation, index: int) -> None:
    """Remove argument `index` (unused) of `func_op`, its type and attributes."""
    block = func_op.regions[0].blocks[0]
    block.erase_argument(index)
    ftype = ir.FunctionType(ir.TypeAttr(func_op.attributes["function_type"]).value)
    inputs = list(ftype.inputs)
    del inputs[index]
    func_op.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, list(ftype.results)))
    if "arg_attrs" in func_op.attributes:
        attrs = list(ir.ArrayAttr(func_op.attributes["arg_attrs"]))
        if index < len(attrs):
            del attrs[index]
        func_op.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)


def constant_data(attr: ir.Attribute, shape: Sequence[int], element: str):
    """The numpy array of an `npu.constant` argument's dense elements."""
    import numpy as np

    from npu.ir import NUMPY_DTYPES

    dense = ir.DenseElementsAttr(attr)
    dtype = NUMPY_DTYPES[element]
    if dense.is_splat:
        return np.full(tuple(shape), np.array(dense.get_splat_value().value, dtype))
    return np.array(dense).astype(dtype).reshape(tuple(shape))


def block_idx_arg(func_op: ir.Operation) -> int | None:
    """Index of the argument that receives the block index, if any."""
    n = len(func_op.regions[0].blocks[0].arguments) if func_op.regions[0].blocks else 0
    found = [i for i in range(n) if BLOCK_IDX_ATTR in arg_attrs(func_op, i)]
    return found[0] if found else None


def block_dim(func_op: ir.Operation) -> int:
    """How many cores the kernel is launched on (1 without `npu.block_dim`)."""
    if BLOCK_DIM_ATTR not in func_op.attributes:
        return 1
    return ir.IntegerAttr(func_op.attributes[BLOCK_DIM_ATTR]).value


# ----------------------------------------------------------------------------
# Types and attributes
# ----------------------------------------------------------------------------

ELEMENT_BYTES = {"f16": 2, "f32": 4, "i8": 1, "i32": 4, "i64": 8, "bf16": 2, "i16": 2}
def __getattr__(name: str):
    """`NUMPY_DTYPES` imports numpy on first use: the tools that only parse,
    transform and print IR never need it."""
    if name == "NUMPY_DTYPES":
        import numpy as np

        table = {"f16": np.float16, "f32": np.float32, "i8": np.int8, "i32": np.int32,
                 "i64": np.int64, "i16": np.int16}
        globals()["NUMPY_DTYPES"] = table
        return table
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def element_type_name(t: ir.Type) -> str:
    return str(t)


def is_block_argument(value: ir.Value) -> bool:
    return isinstance(value.owner, ir.Block)


def defining_op(value: ir.Value) -> ir.Operation | None:
    """The operation producing `value`, None for a block argument."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation


# Ops whose result aliases (views) the bytes of their first operand.
VIEW_OPS = ("memref.subview", "memref.reinterpret_cast", "memref.view", "memref.collapse_shape",
            "memref.expand_shape", "memref.cast", "memref.memory_space_cast")


def view_root(value: ir.Value) -> ir.Value:
    """The buffer behind a chain of views."""
    while True:
        op = defining_op(value)
        if op is None or op.name not in VIEW_OPS:
            return value
        value = op.operands[0]


def memref_type(value_or_type: ir.Value | ir.Type) -> ir.MemRefType:
    t = value_or_type.type if isinstance(value_or_type, ir.Value) else value_or_type
    return ir.MemRefType(t)


def is_memref(t: ir.Type) -> bool:
    return isinstance(t, ir.MemRefType)


def memory_space(t: ir.Type | ir.Value) -> str:
    """Memory space name of a memref ("gm" when none is given)."""
    mt = memref_type(t)
    space = mt.memory_space
    if space is None:
        return "gm"
    if isinstance(space, ir.StringAttr):
        return ir.StringAttr(space).value
    return str(space)


def memref_element(t: ir.Type | ir.Value) -> str:
    return element_type_name(memref_type(t).element_type)


def memref_shape(t: ir.Type | ir.Value) -> list[int]:
    return list(memref_type(t).shape)


def element_bytes(type_name: str) -> int:
    return ELEMENT_BYTES[type_name]


def memref_layout(t: ir.Type | ir.Value) -> tuple[list[int], int]:
    """(strides, offset) in elements; dynamic entries are None."""
    mt = memref_type(t)
    strides, offset = mt.get_strides_and_offset()
    dyn = ir.ShapedType.get_dynamic_stride_or_offset()
    return [None if s == dyn else s for s in strides], (None if offset == dyn else offset)


def int_attr(op: ir.Operation, name: str) -> int:
    return ir.IntegerAttr(op.attributes[name]).value


def float_attr(op: ir.Operation, name: str) -> float:
    return ir.FloatAttr(op.attributes[name]).value


def str_attr(op: ir.Operation, name: str) -> str:
    return ir.StringAttr(op.attributes[name]).value


def bool_attr(op: ir.Operation, name: str) -> bool:
    return ir.BoolAttr(op.attributes[name]).value


def int_array_attr(op: ir.Operation, name: str) -> list[int]:
    return list(ir.DenseI64ArrayAttr(op.attributes[name]))


def has_attr(op: ir.Operation, name: str) -> bool:
    return name in op.attributes


# ----------------------------------------------------------------------------
# Builders (call inside `with ctx, loc, ir.InsertionPoint(...)`)
# ----------------------------------------------------------------------------


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
    return ir.Operation.create(name, results=list(results), operands=list(operands),
                               attributes={k: to_attr(v) for k, v in attrs.items()})


def memref_of(shape: Sequence[int], element: str | ir.Type, space: str,
              layout: ir.Attribute | None = None) -> ir.MemRefType:
    et = ir.Type.parse(element) if isinstance(element, str) else element
    return ir.MemRefType.get(list(shape), et, layout, ir.StringAttr.get(space))


def alloc(shape: Sequence[int], element: str | ir.Type, space: str) -> ir.Value:
    return memref.AllocOp(memref_of(shape, element, space), [], []).result


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
    dynamic_offsets = [o for o in offsets if not isinstance(o, int)]
    src_strides, src_off = src_t.get_strides_and_offset()
    # Result layout: offset = src_off + sum(off_i * stride_i), strides = src_stride_i * step_i.
    if src_off == dyn or any(o == dyn for o in static_offsets):
        res_off = dyn
    else:
        res_off = src_off + sum(o * s for o, s in zip(static_offsets, src_strides))
    res_strides = [s * st for s, st in zip(src_strides, strides)]
    layout = ir.StridedLayoutAttr.get(res_off, res_strides)
    result_t = ir.MemRefType.get(list(sizes), src_t.element_type, layout, src_t.memory_space)
    return memref.SubViewOp(result_t, source, dynamic_offsets, [], [],
                            static_offsets, list(sizes), strides).result


def flatten_memref(value: ir.Value) -> ir.Value:
    """A 1-D view of a contiguous (identity-layout) memref: collapse_shape for
    rank >= 2, expand_shape to `[1]` for rank 0, the value itself for rank 1."""
    mt = memref_type(value)
    rank = len(mt.shape)
    if rank == 1:
        return value
    numel = math.prod(mt.shape) if rank else 1
    result_t = ir.MemRefType.get([numel], mt.element_type, None, mt.memory_space)
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


def form_group_region(kind_attr: str, figures: dict[str, int], location: ir.Location,
                      before: ir.Operation, internal: list[ir.Value],
                      members: list[ir.Operation]) -> ir.Operation:
    """Wrap `members` (and the allocs and views of the `internal` tensors,
    which never leave the group) in an `scf.execute_region {kind_attr =
    {figures}}` placed at `before`: the fusion passes' one form of a group."""
    with before.context, location, ir.InsertionPoint(before):
        region_op = ir.Operation.create(
            "scf.execute_region", results=[], operands=[], regions=1,
            attributes={kind_attr: ir.DictAttr.get({k: i64_attr(v) for k, v in figures.items()})})
        block = region_op.regions[0].blocks.append()
        with ir.InsertionPoint(block):
            terminator = ir.Operation.create("scf.yield", results=[], operands=[])
    for root in internal:
        for op in view_closure(root):
            op.move_before(terminator)
    for op in members:
        op.move_before(terminator)
    return region_op
