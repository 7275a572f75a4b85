"""Table-driven op descriptions and the one generic checker that runs them.

IRDL (the `*.irdl.mlir` files) checks operand kinds and that every attribute
is present with the right kind. What it cannot see is checked here from a
small per-op table (`OpSpec`): the memory space of each memref operand, the
allowed element types, the exact attribute types (`i64`, `f64`), and
attribute ranges whose limits come from the target. Shape relations and other
op-specific rules are plain functions listed in `OpSpec.checks`.

`register(spec)` hooks a spec into `npu.dialects.rules`, so `npu.dialects.verify`
runs it on every op of that name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

from mlir import ir

from npu.dialects.rules import RuleError, rule
from npu.ir.accessors import (ELEMENT_BYTES, element_type_name, float_attr, int_array_attr, int_attr,
                              memory_space, memref_element, str_attr)
from npu.target import Target, get_target

# Element types of the dialects, and the subsets most ops accept.
ELEMENT_TYPES = ("f16", "f32", "i8", "i32")
FLOAT_TYPES = ("f16", "f32")
ARITH_TYPES = ("f16", "f32", "i32")

# Conversions (src, dst) the vector unit does in one cce/hivm vconv.
CAST_PAIRS: tuple[tuple[str, str], ...] = (
    ("f16", "f32"), ("f32", "f16"), ("f16", "i32"), ("f32", "i32"), ("i8", "f16"), ("f16", "i8"),
    ("i32", "f32"))
# Conversions of ascend.cast: every ordered pair of distinct element types
# (the lowering chains vconvs through f16/f32 where there is no direct one).
ASCEND_CAST_PAIRS: tuple[tuple[str, str], ...] = tuple(
    (a, b) for a in ELEMENT_TYPES for b in ELEMENT_TYPES if a != b)
# Predicates of ascend.cmp and cce.vcmp.
CMP_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")

# A bound of an attribute range: a number, or computed from the target and op.
BoundFn = Callable[[Target, ir.Operation], int]


@dataclass(frozen=True)
class Bound:
    """A limit computed from the target (or the instruction encoding) and the op;
    `doc` names where it comes from in error messages."""

    value: BoundFn
    doc: str


def _bound_value(b: int | Bound | None, target: Target, op: ir.Operation) -> int | None:
    if b is None or isinstance(b, int):
        return b
    return b.value(target, op)


@dataclass(frozen=True)
class Range:
    """Inclusive range of an integer attribute (or of every element of an array)."""

    lo: int | Bound | None = 0
    hi: int | Bound | None = None


# Attribute kinds beyond what IRDL checks (IRDL: "is an integer / float ...").
I64, F64, BOOL, STR, I64_ARRAY, TYPE = "i64", "f64", "bool", "str", "i64_array", "type"


@dataclass(frozen=True)
class Operand:
    """A named operand; for a memref, the memory space it must live in (None: any)."""

    name: str
    space: str | None = None


# A check function: raise RuleError with a specific message.
Check = Callable[[ir.Operation, Target], None]


@dataclass(frozen=True)
class OpSpec:
    name: str
    operands: tuple[Operand, ...] = ()
    # Allowed element-type signatures, one type per memref operand in order;
    # empty means "not checked here".
    dtypes: tuple[tuple[str, ...], ...] = ()
    attrs: Mapping[str, str] = field(default_factory=dict)
    ranges: Mapping[str, Range] = field(default_factory=dict)
    checks: tuple[Check, ...] = ()
    static_shapes: bool = False
    variadic: bool = False  # any number of operands (IRDL checks their types)
    # IRDL types every operand as a scalar (hivm's i64s): no memref to check
    scalar_operands: bool = False


def same_dtype(n: int, types: Iterable[str]) -> tuple[tuple[str, ...], ...]:
    """Signatures where all `n` memref operands share one of `types`."""
    return tuple((t,) * n for t in types)


# ----------------------------------------------------------------------------
# Accessors used by the checks
# ----------------------------------------------------------------------------


def memref_types(op: ir.Operation) -> list[ir.MemRefType]:
    return [ir.MemRefType(v.type) for v in op.operands if isinstance(v.type, ir.MemRefType)]


def element_bytes(dtype: str) -> int:
    """Bytes of an element type; 0 when it is not one the dialects know."""
    return ELEMENT_BYTES.get(dtype, 0)


def lanes_of(op: ir.Operation, target: Target) -> int:
    """Lanes of one vector repeat: set by the widest element type of the memref operands."""
    widest = max((element_bytes(memref_element(t)) for t in memref_types(op)), default=0)
    if widest == 0:
        raise RuleError("cannot determine the vector width: no memref operand with a known element type")
    return target.lanes(widest)


MAX_REPEAT = Bound(lambda t, op: t.max_repeat, "target max_repeat")
LANES = Bound(lambda t, op: lanes_of(op, t), "lanes of one repeat for this element type")
LAST_EVENT = Bound(lambda t, op: t.events_per_pipe_pair - 1, "target events_per_pipe_pair - 1")


def check_sync_pipes(op: ir.Operation, target: Target) -> None:
    """set_flag / wait_flag synchronise two different pipes."""
    src, dst = str_attr(op, "src"), str_attr(op, "dst")
    if src == dst:
        raise RuleError(f"src and dst pipes must differ (got '{src}' for both); "
                        f"use pipe_barrier to order one pipe")


# ----------------------------------------------------------------------------
# The generic checker
# ----------------------------------------------------------------------------


def _fmt_sig(sig: Sequence[str]) -> str:
    return "(" + ", ".join(sig) + ")"


def _shape_text(t: ir.MemRefType) -> str:
    return "".join(f"{d}x" if d >= 0 else "?x" for d in t.shape)


def _check_operands(spec: OpSpec, op: ir.Operation) -> None:
    if spec.variadic:
        return
    if len(op.operands) != len(spec.operands):
        # IRDL reports this first; kept for ops built without verification.
        raise RuleError(f"expects {len(spec.operands)} operands, got {len(op.operands)}")
    if spec.scalar_operands:
        return
    for i, (value, want) in enumerate(zip(op.operands, spec.operands)):
        if not isinstance(value.type, ir.MemRefType):
            continue
        t = ir.MemRefType(value.type)
        if t.memory_space is None:
            # The dialects' docs require one: "gm" is not assumed, so a
            # forgotten space cannot silently put a buffer in the wrong memory.
            example = want.space or "gm"
            raise RuleError(f"operand #{i} ('{want.name}') has no memory space; write it in the "
                            f"type, e.g. memref<{_shape_text(t)}{t.element_type}, \"{example}\">")
        if want.space is not None and memory_space(t) != want.space:
            raise RuleError(f"operand #{i} ('{want.name}') must be in memory space "
                            f"'{want.space}', got '{memory_space(t)}'")
        if spec.static_shapes and not t.has_static_shape:
            raise RuleError(f"operand #{i} ('{want.name}') must have a static shape, got {t}")
        if not _is_strided(t):
            raise RuleError(f"operand #{i} ('{want.name}') has the layout {t.layout}, which is "
                            "not strided: operands are row-major or strided<...> memrefs, the "
                            "address of an element must be offset + sum(index * stride)")


def _is_strided(t: ir.MemRefType) -> bool:
    try:
        t.get_strides_and_offset()
    except RuntimeError:  # MLIR's "Failed to extract strides and offset"
        return False
    return True


def _check_dtypes(spec: OpSpec, op: ir.Operation) -> None:
    if not spec.dtypes:
        return
    names = [o.name for o, v in zip(spec.operands, op.operands) if isinstance(v.type, ir.MemRefType)]
    got = tuple(memref_element(t) for t in memref_types(op))
    if got in spec.dtypes:
        return
    if all(len(set(s)) == 1 for s in spec.dtypes) and len(got) > 1:
        allowed = ", ".join(s[0] for s in spec.dtypes)
        expect = f"all operands must have the same element type, one of {allowed}"
    elif len(got) == 1:
        expect = f"element type must be one of {', '.join(s[0] for s in spec.dtypes)}"
    else:
        expect = "supported: " + ", ".join(_fmt_sig(s) for s in spec.dtypes)
    shown = ", ".join(f"{n}: {t}" for n, t in zip(names, got))
    raise RuleError(f"unsupported element types ({shown}); {expect}")


_KIND_TEXT = {I64: "a 64-bit integer (e.g. `3 : i64`)", F64: "an f64 float (e.g. `1.0 : f64`)",
              BOOL: "a bool", STR: "a string", I64_ARRAY: "an array<i64: ...>", TYPE: "a type"}


def _kind_ok(attr: ir.Attribute, kind: str) -> bool:
    if kind == BOOL:
        return isinstance(attr, ir.BoolAttr)
    if kind == I64:
        return (isinstance(attr, ir.IntegerAttr) and not isinstance(attr, ir.BoolAttr)
                and element_type_name(ir.IntegerAttr(attr).type) == "i64")
    if kind == F64:
        return isinstance(attr, ir.FloatAttr) and element_type_name(ir.FloatAttr(attr).type) == "f64"
    if kind == STR:
        return isinstance(attr, ir.StringAttr)
    if kind == I64_ARRAY:
        return isinstance(attr, ir.DenseI64ArrayAttr)
    if kind == TYPE:
        return isinstance(attr, ir.TypeAttr)
    raise ValueError(f"unknown attribute kind {kind!r}")


def _check_attrs(spec: OpSpec, op: ir.Operation, target: Target) -> None:
    for name, kind in spec.attrs.items():
        if name not in op.attributes:
            raise RuleError(f"requires attribute '{name}'")
        try:
            attr = op.attributes[name]
        except TypeError:  # the bindings cannot represent it (e.g. array<ui8: ...>)
            raise RuleError(f"attribute '{name}' must be {_KIND_TEXT[kind]}, got a dense array "
                            "of an unsupported element type") from None
        if not _kind_ok(attr, kind):
            raise RuleError(f"attribute '{name}' must be {_KIND_TEXT[kind]}, got {attr}")
    for name, rng in spec.ranges.items():
        values = int_array_attr(op, name) if spec.attrs.get(name) == I64_ARRAY else [int_attr(op, name)]
        lo = _bound_value(rng.lo, target, op)
        hi = _bound_value(rng.hi, target, op)
        what = f"attribute '{name}'" + (" entries" if spec.attrs.get(name) == I64_ARRAY else "")
        for v in values:
            if (lo is not None and v < lo) or (hi is not None and v > hi):
                if hi is None:
                    raise RuleError(f"{what} must be >= {lo}, got {v}")
                src = f" ({rng.hi.doc})" if isinstance(rng.hi, Bound) else ""
                raise RuleError(f"{what} must be in [{lo}, {hi}]{src}, got {v}")


def check(spec: OpSpec, op: ir.Operation, target: Target | None = None) -> None:
    """Run every rule of `spec` on `op`; raise RuleError on the first violation."""
    target = target or get_target()
    _check_operands(spec, op)
    _check_dtypes(spec, op)
    _check_attrs(spec, op, target)
    for fn in spec.checks:
        fn(op, target)


def register(specs: Iterable[OpSpec]) -> dict[str, OpSpec]:
    """Register each spec's checker with the rule registry; returns name -> spec."""
    table = {}
    for spec in specs:
        table[spec.name] = spec
        rule(spec.name)(lambda op, spec=spec: check(spec, op))
    return table
