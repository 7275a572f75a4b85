"""Walks over ops, and the function-level queries and edits built on them.

`walk` and `walk_held` themselves live in `npu.dialects.walks`, which needs
only the `mlir` bindings (the dialects' verifier walks with them, and this
package's parsing runs that verifier); they are re-exported here.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator, Sequence

from mlir import ir

from npu.dialects.walks import walk, walk_held

from .accessors import element_type_name, is_block_argument, numpy_dtypes


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
# On a function argument: the dense value it always holds (a weight made on
# the host), passed by the caller like an input.
CONSTANT_ATTR = "npu.constant"
# On an imported `arith.constant` (a zero splat): the key of its data in the
# table the ONNX import keeps apart (`npu.frontend.onnx_weights`).
WEIGHT_ATTR = "npu.weight"


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
# On the module: npu-fuse computed an epilogue in f16 where the source says
# f32 (epilogue-f16), a rounding the numpy reference does not make.
F16_EPILOGUES_ATTR = "npu.f16_epilogues"
BLOCK_IDX_ATTR = "npu.block_idx"
# Set by npu-split-cores on an op whose lowering divides the work over the
# cores itself (its operands stay whole): `array<i64: parts, inner>`, this
# core's part being (block index / inner) % parts. What a part is belongs to
# the op: a conv's run of output rows, a transpose's run of source columns.
CORE_PART_ATTR = "npu.core_part"
# Beside it, where an op's parts may cut more than one of its dims: which one,
# as the split's axis name (a [.., k, j, l] -> [.., j, k, l] transpose's runs
# of j, `SOURCE_J_AXIS`, without it its runs of k; a last-two swap's runs of
# source rows, `SOURCE_ROWS_AXIS`, without it its runs of source columns).
CORE_AXIS_ATTR = "npu.core_axis"
SOURCE_J_AXIS = "sj"
SOURCE_ROWS_AXIS = "sr"
# a transpose keeping its last dim (a channel shuffle): its runs of result rows
KEPT_ROWS_AXIS = "kr"
BLOCK_DIM_ATTR = "npu.block_dim"
# On a GM `memref.alloc` a lowering makes for its own op on a multi-core
# kernel (a transpose's rotation, a pool's column slices): the op's code runs
# on every core, so each core needs its own bytes; npu-plan-gm gives each
# core a slice of the workspace at its block index.
CORE_PRIVATE_ATTR = "npu.core_private"


def _edit_input_types(func_op: ir.Operation, edit) -> None:
    """`func_op`'s function type with `edit` applied to its list of input
    types (in place), its results kept."""
    ftype = ir.FunctionType(ir.TypeAttr(func_op.attributes["function_type"]).value)
    inputs = list(ftype.inputs)
    edit(inputs)
    func_op.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get(inputs, list(ftype.results)))


def append_argument(func_op: ir.Operation, arg_type: ir.Type,
                    attrs: dict[str, ir.Attribute] | None = None) -> ir.Value:
    """A new last argument of `func_op` (its type and argument attributes
    kept in step with the block)."""
    block = func_op.regions[0].blocks[0]
    value = block.add_argument(arg_type, func_op.location)
    _edit_input_types(func_op, lambda inputs: inputs.append(arg_type))
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
    _edit_input_types(func_op, lambda inputs: inputs.pop(index))
    if "arg_attrs" in func_op.attributes:
        attrs = list(ir.ArrayAttr(func_op.attributes["arg_attrs"]))
        if index < len(attrs):
            del attrs[index]
        func_op.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)


def constant_data(attr: ir.Attribute, shape: Sequence[int], element: str):
    """The numpy array of an `npu.constant` argument's dense elements: a
    read-only view of the attribute's storage when the types agree (the
    weights of a model are not copied again; the view keeps the context alive)."""
    import numpy as np

    dense = ir.DenseElementsAttr(attr)
    dtype = numpy_dtypes()[element]
    if dense.is_splat:
        return np.full(tuple(shape), np.array(dense.get_splat_value().value, dtype))
    return np.asarray(dense).astype(dtype, copy=False).reshape(tuple(shape))


def constant_attr(value: ir.Value):
    """The `npu.constant` attribute of the function argument `value` (a host
    constant's data), or None when it is not one (another value, or a
    loop's argument)."""
    if not is_block_argument(value):
        return None
    arg = ir.BlockArgument(value)
    func = arg.owner.owner.operation
    if func.name != "func.func":
        return None
    return arg_attrs(func, arg.arg_number).get(CONSTANT_ATTR)


def constant_argument(value: ir.Value):
    """The numpy data of the `npu.constant` function argument `value`, or
    None when it is not one (`constant_attr`)."""
    attr = constant_attr(value)
    if attr is None:
        return None
    mtype = ir.MemRefType(value.type)
    return constant_data(attr, list(mtype.shape), element_type_name(mtype.element_type))


def retype_constant(value: ir.Value, data) -> None:
    """Give the `npu.constant` argument `value` new data (a numpy array of
    its element type, any shape): its type, the function's type and the
    attribute follow, its position stays (the caller's constants come
    before the block index and the workspace). Its uses must accept the new
    type: only for an argument whose one reader is being rewritten."""
    arg = ir.BlockArgument(value)
    func_op, i = arg.owner.owner.operation, arg.arg_number
    with func_op.context, func_op.location:
        t = ir.MemRefType(value.type)
        new_type = ir.MemRefType.get(list(data.shape), t.element_type, None, t.memory_space)
        value.set_type(new_type)
        _edit_input_types(func_op, lambda inputs: inputs.__setitem__(i, new_type))
        attrs = list(ir.ArrayAttr(func_op.attributes["arg_attrs"]))
        d = dict(arg_attrs(func_op, i))
        d[CONSTANT_ATTR] = ir.DenseElementsAttr.get(
            data, type=ir.RankedTensorType.get(list(data.shape), t.element_type))
        attrs[i] = ir.DictAttr.get(d)
        func_op.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)


def block_idx_arg(func_op: ir.Operation) -> int | None:
    """Index of the argument that receives the block index, if any."""
    n = len(func_op.regions[0].blocks[0].arguments) if func_op.regions[0].blocks else 0
    if "arg_attrs" not in func_op.attributes:
        return None
    # The array read once (`arg_attrs` per argument read it again for each:
    # 0.05 CPU s of BERT-12's on 32 cores, 84 calls over 200 arguments).
    attrs = ir.ArrayAttr(func_op.attributes["arg_attrs"])
    return next((i for i in range(min(n, len(attrs))) if BLOCK_IDX_ATTR in ir.DictAttr(attrs[i])),
                None)


def ancestors(op: ir.Operation) -> Iterator[ir.Operation]:
    """The ops that hold `op`, innermost first, up to (not including) its
    function."""
    node = op.parent
    while node is not None and node.name != "func.func":
        yield node
        node = node.parent


def within(owner: ir.Operation | ir.OpView | ir.Block, op: ir.Operation) -> bool:
    """Whether `owner` (a value's or a use's owner: an op, or the block of a
    block argument) is `op` or lies inside it."""
    node = owner.owner if isinstance(owner, ir.Block) else owner
    while node is not None:
        if node.operation == op:
            return True
        node = node.operation.parent
    return False


def enclosing_function(op: ir.Operation) -> ir.Operation | None:
    """The `func.func` that holds `op`, or None when it is not in one."""
    node = op.parent
    while node is not None and node.name != "func.func":
        node = node.parent
    return node


def top_level(op: ir.Operation) -> ir.Operation:
    """The op of the function body that is `op` or holds it: where passes
    that move work between a function's ops (prefetch, fusion) compare
    program order."""
    for node in ancestors(op):
        op = node
    return op


def ends_function(op: ir.Operation | ir.OpView) -> bool:
    """Whether nothing but returns, yields and deallocs follows `op` in its
    function, through the regions that hold it (a guard of a share of the
    cores): nothing after it on the core hides its end."""
    op = op.operation
    while op.name != "func.func":
        ops = [o.operation for o in op.block.operations]
        after = ops[next(k for k, o in enumerate(ops) if o == op) + 1:]
        if any(o.name not in ("func.return", "scf.yield", "memref.dealloc") for o in after):
            return False
        op = op.parent.operation
    return True


def block_idx_value(op: ir.Operation) -> ir.Value | None:
    """The block index of the kernel that holds `op` (its function's
    `npu.block_idx` argument), or None outside a multi-core kernel."""
    node = enclosing_function(op)
    if node is None or (i := block_idx_arg(node)) is None:
        return None
    return node.regions[0].blocks[0].arguments[i]


def block_dim(func_op: ir.Operation) -> int:
    """How many cores the kernel is launched on (1 without `npu.block_dim`)."""
    if BLOCK_DIM_ATTR not in func_op.attributes:
        return 1
    return ir.IntegerAttr(func_op.attributes[BLOCK_DIM_ATTR]).value


__all__ = ["KEPT_ROWS_AXIS", "SOURCE_J_AXIS", "SOURCE_ROWS_AXIS", "BLOCK_DIM_ATTR", "BLOCK_IDX_ATTR", "CONSTANT_ATTR", "CORE_AXIS_ATTR", "CORE_PART_ATTR", "CORE_PRIVATE_ATTR", "F16_EPILOGUES_ATTR", "WEIGHT_ATTR", "WORKSPACE_ATTR", "ancestors", "append_argument", "arg_attrs",
           "block_dim", "block_idx_arg", "block_idx_value", "constant_argument", "constant_attr", "constant_data", "enclosing_function", "ends_function", "erase_argument", "functions",
           "ops_in_dialect", "ops_named", "replace_ops", "retype_constant", "symbol_name", "top_level", "walk", "walk_held",
           "workspace_args", "within"]
