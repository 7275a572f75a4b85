"""Type and attribute accessors."""

from __future__ import annotations

import functools
import math

from mlir import ir


ELEMENT_BYTES = {"f16": 2, "f32": 4, "i8": 1, "i32": 4, "i64": 8, "bf16": 2, "i16": 2}


# The names of the element types that print as a fixed word, by the class
# the bindings give them: printing a type costs about 4 us (45k element
# types were printed per BERT-12 compile), a dictionary hit 0.1.
_FIXED_NAMES = {ir.F16Type: "f16", ir.F32Type: "f32", ir.BF16Type: "bf16", ir.F64Type: "f64",
                ir.IndexType: "index"}


def element_type_name(t: ir.Type) -> str:
    """The type as MLIR prints it (`f16`, `i32`, `ui8`, ...)."""
    cls = type(t)
    name = _FIXED_NAMES.get(cls)
    if name is not None:
        return name
    if cls is ir.IntegerType and t.is_signless:
        return f"i{t.width}"
    return str(t)


def is_block_argument(value: ir.Value) -> bool:
    return isinstance(value.owner, ir.Block)


def defining_op(value: ir.Value) -> ir.Operation | None:
    """The operation producing `value`, None for a block argument."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation


# Names of the registered ops seen without regions: a registered op's name
# fixes how many it has, and asking an op for its regions costs a binding
# call that walks over many ops repeat (see `has_regions`).
LEAF_OP_NAMES: set[str] = set()


def has_regions(op: ir.Operation) -> bool:
    """`len(op.regions) > 0`, answered from `LEAF_OP_NAMES` where it can."""
    name = op.name
    if name in LEAF_OP_NAMES:
        return False
    if len(op.regions):
        return True
    if not op.context.allow_unregistered_dialects:  # an unregistered op's name fixes nothing
        LEAF_OP_NAMES.add(name)
    return False


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


def memref_bytes(t: ir.Type | ir.Value) -> int:
    """The bytes of a static memref's elements (its shape, not its strides)."""
    return math.prod(memref_shape(t)) * element_bytes(memref_element(t))


@functools.cache
def numpy_dtypes() -> dict[str, type]:
    """The numpy scalar type of each element type name (`npu.ir.NUMPY_DTYPES`).

    Imports numpy on first use: the tools that only parse, transform and
    print IR never need it."""
    import numpy as np

    return {"f16": np.float16, "f32": np.float32, "i8": np.int8, "i32": np.int32,
            "i64": np.int64, "i16": np.int16}


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


def constant_int(value: ir.Value) -> int | None:
    """The value of an integer or index `arith.constant`, else None."""
    op = defining_op(value)
    if op is None or op.name != "arith.constant":
        return None
    return ir.IntegerAttr(op.attributes["value"]).value


__all__ = ["ELEMENT_BYTES", "LEAF_OP_NAMES", "VIEW_OPS", "bool_attr", "constant_int", "defining_op",
           "element_bytes", "element_type_name", "float_attr", "has_attr", "has_regions",
           "int_array_attr", "int_attr", "is_block_argument", "is_memref", "memory_space",
           "memref_bytes", "memref_element", "memref_layout", "memref_shape", "memref_type", "numpy_dtypes",
           "str_attr", "view_root"]
