"""Rules, op tables and shape helpers of the `ascend` dialect.

All operands are static-shape memrefs in "gm"; the last one is the output.
The table gives element types per op; the functions below check the shape
relations (Nz matmul, fractalize, broadcasting, transpose, reduce) and are
also what the lowerings and the reference semantics use to compute shapes,
so that "what the verifier accepts" and "what a pass assumes" are one code.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple, Sequence

import numpy as np
from mlir import ir

from npu.dialects.ascend_conv import CONV_OPS, conv_specs
from npu.dialects.ascend_int8 import INT8_MATMUL_SIGNATURE, matmul_blocks, reduction_block
from npu.dialects.opspec import (
    ARITH_TYPES, ASCEND_CAST_PAIRS, ELEMENT_TYPES, F64, FLOAT_TYPES, I64, I64_ARRAY, STR, OpSpec,
    Operand,
    int_array_attr, int_attr, float_attr, memref_element, memref_types, register, same_dtype)
from npu.dialects.ascend_pool import POOL2D, pool_specs
from npu.dialects.rules import RuleError
from npu.ir.accessors import memref_shape
from npu.target import Target, get_target

# ----------------------------------------------------------------------------
# Op names per category
# ----------------------------------------------------------------------------

MATMUL = "ascend.matmul"
BATCH_MATMUL = "ascend.batch_matmul"
MATMUL_OPS = (MATMUL, BATCH_MATMUL)
FRACTALIZE = "ascend.fractalize"
DEFRACTALIZE = "ascend.defractalize"
LAYOUT_OPS = (FRACTALIZE, DEFRACTALIZE)

# Binary elementwise op -> the cce vector instruction computing it.
BINARY_TO_CCE: Mapping[str, str] = {
    "ascend.add": "cce.vadd", "ascend.sub": "cce.vsub", "ascend.mul": "cce.vmul",
    "ascend.div": "cce.vdiv", "ascend.max": "cce.vmax", "ascend.min": "cce.vmin"}
# Op with a scalar attribute -> its cce instruction.
SCALAR_TO_CCE: Mapping[str, str] = {
    "ascend.adds": "cce.vadds", "ascend.muls": "cce.vmuls",
    "ascend.maxs": "cce.vmaxs", "ascend.mins": "cce.vmins"}
# Unary op -> its single cce instruction; neg, tanh and sigmoid have none
# (they are compositions, see UNARY_COMPOSITE).
UNARY_TO_CCE: Mapping[str, str] = {
    "ascend.relu": "cce.vrelu", "ascend.abs": "cce.vabs", "ascend.exp": "cce.vexp",
    "ascend.ln": "cce.vln", "ascend.sqrt": "cce.vsqrt", "ascend.rsqrt": "cce.vrsqrt",
    "ascend.reciprocal": "cce.vrec"}
UNARY_COMPOSITE = ("ascend.neg", "ascend.tanh", "ascend.sigmoid", "ascend.erf")

ELEMENTWISE_BINARY = tuple(BINARY_TO_CCE)
SCALAR = tuple(SCALAR_TO_CCE)
UNARY = tuple(UNARY_TO_CCE) + UNARY_COMPOSITE
CAST = "ascend.cast"
CLAMP = "ascend.clamp"
TRANSPOSE = "ascend.transpose"
REDUCE = ("ascend.reduce_sum", "ascend.reduce_max", "ascend.reduce_min")
CMP = "ascend.cmp"
SELECT = "ascend.select"
BROADCAST = "ascend.broadcast"
GATHER = "ascend.gather"
GATHER_ELEMENTS = "ascend.gather_elements"
# Everything `npu-lower-elementwise` handles.
ELEMENTWISE = ELEMENTWISE_BINARY + SCALAR + UNARY + (CAST, CLAMP, CMP, SELECT, BROADCAST)
SLICE = "ascend.slice"
INSERT_SLICE = "ascend.insert_slice"
SLICE_OPS = (SLICE, INSERT_SLICE)  # what `npu-lower-slices` handles
ALL_OPS = (MATMUL_OPS + LAYOUT_OPS + ELEMENTWISE + (TRANSPOSE,) + REDUCE + (GATHER, GATHER_ELEMENTS)
           + SLICE_OPS + CONV_OPS + (POOL2D,))

# (a, b, c) element types of matmul / batch_matmul.
MATMUL_SIGNATURES = (("f16", "f16", "f32"), ("f16", "f16", "f16"), INT8_MATMUL_SIGNATURE)

# ----------------------------------------------------------------------------
# Shape helpers
# ----------------------------------------------------------------------------


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def nz_shape(rows: int, cols: int, target: Target | None = None,
             element: str = "f16") -> list[int]:
    """Nz shape `[ceil(cols/c0), ceil(rows/f), f, c0]` of a rows x cols matrix:
    c0 = f, or 32 for int8 (a matmul's A operand: 16 x 32 blocks)."""
    t = target or get_target()
    f = t.fractal
    c0 = t.fractal_k_int8 if element == "i8" else f
    return [ceil_div(cols, c0), ceil_div(rows, f), f, c0]


def fractalized_shape(nd_shape: Sequence[int], target: Target | None = None,
                      element: str = "f16") -> list[int]:
    """Shape `ascend.fractalize` produces from an ND `[..., R, C]` shape of `element`s."""
    if len(nd_shape) < 2:
        raise ValueError(f"fractalize needs a matrix [..., R, C], got shape {list(nd_shape)}")
    return list(nd_shape[:-2]) + nz_shape(nd_shape[-2], nd_shape[-1], target, element)


class MatmulDims(NamedTuple):
    """Padded problem size in elements (thesis naming: A is M x N, B N x K)."""

    m: int
    n: int
    k: int
    batch: int


def matmul_dims(op: ir.Operation, target: Target | None = None) -> MatmulDims:
    """(M, N, K, batch) of a verified matmul / batch_matmul (batch 1 for matmul)."""
    target = target or get_target()
    f = target.fractal
    types = memref_types(op)
    k0 = reduction_block([memref_element(t) for t in types], target)
    a, b, _ = (memref_shape(t) for t in types)
    batch = a[0] if op.name == BATCH_MATMUL else 1
    n1, m1 = a[-4], a[-3]
    k1 = b[-4]
    return MatmulDims(m1 * f, n1 * k0, k1 * f, batch)


def broadcastable(shape: Sequence[int], to: Sequence[int]) -> bool:
    """numpy rule: `shape` right-aligned with `to`, each dim equal or 1."""
    if len(shape) > len(to):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(to)))


def reduced_shape(shape: Sequence[int], axis: int = -1, keepdims: bool = False) -> list[int]:
    """Shape after reducing `axis` (negative: from the end): the axis removed
    (`[1]` when nothing is left) or, with `keepdims`, kept as size 1."""
    axis = normalize_axis(axis, len(shape))
    if keepdims:
        return [1 if i == axis else d for i, d in enumerate(shape)]
    return [d for i, d in enumerate(shape) if i != axis] or [1]


def normalize_axis(axis: int, rank: int) -> int:
    """`axis` in [0, rank); raises ValueError when out of range."""
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for rank {rank}")
    return axis % rank


def reduce_axis(op: ir.Operation) -> int:
    """The (normalized) axis of a verified reduce op; the last one by default."""
    rank = len(memref_shape(memref_types(op)[0]))
    axis = int_attr(op, "axis") if "axis" in op.attributes else -1
    return normalize_axis(axis, rank)


def broadcast_shape(*shapes: Sequence[int]) -> list[int] | None:
    """numpy's broadcast of `shapes`, or None when they do not broadcast."""
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0} - {1}
        if len(dims) > 1:
            return None
        out.append(dims.pop() if dims else 1)
    return out


def transposed_shape(shape: Sequence[int], permutation: Sequence[int]) -> list[int]:
    return [shape[p] for p in permutation]


# ----------------------------------------------------------------------------
# Rules
# ----------------------------------------------------------------------------


def _shapes(op: ir.Operation) -> list[list[int]]:
    return [memref_shape(t) for t in memref_types(op)]


def _check_nz_operands(op: ir.Operation, target: Target) -> list[list[int]]:
    """Each matmul operand is (batch +) [outer, inner, r0, c0] with the blocks
    of its element types (16x16; int8 a 16x32, b 32x16); returns the shapes."""
    rank = 5 if op.name == BATCH_MATMUL else 4
    shapes = _shapes(op)
    blocks = matmul_blocks([memref_element(t) for t in memref_types(op)], target)
    form = "[B, X1, Y1, %d, %d]" if rank == 5 else "[X1, Y1, %d, %d]"
    for i, (name, shape, block) in enumerate(zip(("a", "b", "c"), shapes, blocks)):
        if len(shape) != rank or tuple(shape[-2:]) != block:
            raise RuleError(f"operand #{i} ('{name}') must be an Nz fractal matrix "
                            f"{form % block}, got shape {shape}")
    return shapes


def _check_matmul(op: ir.Operation, target: Target) -> None:
    """A [N1,M1,f,f] x B [K1,N1,f,f] -> C [K1,M1,f,f] (thesis naming)."""
    a, b, c = _check_nz_operands(op, target)
    if op.name == BATCH_MATMUL and not a[0] == b[0] == c[0]:
        raise RuleError(f"batch sizes differ: a {a[0]}, b {b[0]}, c {c[0]}")
    n1_a, m1_a = a[-4], a[-3]
    k1_b, n1_b = b[-4], b[-3]
    k1_c, m1_c = c[-4], c[-3]
    if n1_a != n1_b:
        raise RuleError(f"reduction blocks differ: a [N1, M1, ...] has N1 = {n1_a}, "
                        f"b [K1, N1, ...] has N1 = {n1_b}")
    if (k1_c, m1_c) != (k1_b, m1_a):
        raise RuleError(f"result c must be [K1, M1, ...] = [{k1_b}, {m1_a}, ...], "
                        f"got [{k1_c}, {m1_c}, ...]")


def _check_nz_pair(nd: list[int], nz: list[int], nd_name: str, nz_name: str,
                   target: Target, element: str) -> None:
    """The ND operand is a matrix and the Nz operand has its fractal shape."""
    if len(nd) < 2:
        raise RuleError(f"{nd_name} must be a matrix [..., R, C], got shape {nd}")
    want = fractalized_shape(nd, target, element)
    if nz != want:
        f, c0 = want[-2:]
        raise RuleError(f"{nz_name} must have the Nz shape {want} of {nd_name} {nd} "
                        f"([..., ceil(C/{c0}), ceil(R/{f}), {f}, {c0}]), got {nz}")


def _element(op: ir.Operation) -> str:
    return memref_element(memref_types(op)[0])


def _check_fractalize(op: ir.Operation, target: Target) -> None:
    src, dst = _shapes(op)
    _check_nz_pair(src, dst, "src", "dst", target, _element(op))


def _check_defractalize(op: ir.Operation, target: Target) -> None:
    src, dst = _shapes(op)
    _check_nz_pair(dst, src, "dst", "src", target, _element(op))


def _check_broadcast(op: ir.Operation, target: Target) -> None:
    """Every input broadcasts (numpy rule) to the output's shape."""
    *ins, out = _shapes(op)
    names = _INPUT_NAMES[op.name]
    for i, (name, shape) in enumerate(zip(names, ins)):
        if not broadcastable(shape, out):
            raise RuleError(f"operand #{i} ('{name}') of shape {shape} cannot be broadcast "
                            f"to the output shape {out}")


def _check_same_shape(op: ir.Operation, target: Target) -> None:
    src, dst = _shapes(op)
    if src != dst:
        raise RuleError(f"output shape {dst} must equal the input shape {src}")


def _check_clamp_bounds(op: ir.Operation, target: Target) -> None:
    lo, hi = float_attr(op, "min"), float_attr(op, "max")
    if not lo <= hi:
        raise RuleError(f"'min' ({lo}) must not exceed 'max' ({hi})")


def _check_transpose(op: ir.Operation, target: Target) -> None:
    src, dst = _shapes(op)
    perm = int_array_attr(op, "permutation")
    if sorted(perm) != list(range(len(src))):
        raise RuleError(f"'permutation' {perm} is not a permutation of the {len(src)} "
                        f"dimensions of the input")
    want = transposed_shape(src, perm)
    if dst != want:
        raise RuleError(f"output shape must be {want} (input {src} permuted by {perm}), got {dst}")


def gathered_shape(table: Sequence[int], indices: Sequence[int], axis: int) -> list[int]:
    """The output shape of `ascend.gather` (numpy's `take`) along normalised `axis`."""
    return list(table[:axis]) + list(indices) + list(table[axis + 1:])


def _check_gather(op: ir.Operation, target: Target) -> None:
    table, indices, out = _shapes(op)
    axis = int_attr(op, "axis")
    if not table:
        raise RuleError("cannot gather from a rank-0 table")
    try:
        a = normalize_axis(axis, len(table))
    except ValueError:
        raise RuleError(f"'axis' {axis} is out of range for the table of rank {len(table)}") from None
    want = gathered_shape(table, indices, a)
    if out != want:
        raise RuleError(f"output shape must be {want} (table {table} with axis {a} replaced by "
                        f"the indices' shape {indices}), got {out}")
    if table[a] == 0 and int(np.prod(indices, dtype=np.int64)):
        raise RuleError(f"cannot gather indices from axis {a} of size 0")


def _check_gather_elements(op: ir.Operation, target: Target) -> None:
    data, indices, out = _shapes(op)
    axis = int_attr(op, "axis")
    if not data or len(indices) != len(data):
        raise RuleError(f"indices must have the data's rank {len(data)} (at least 1), got "
                        f"{len(indices)}")
    try:
        a = normalize_axis(axis, len(data))
    except ValueError:
        raise RuleError(f"'axis' {axis} is out of range for the data of rank {len(data)}") from None
    if out != indices:
        raise RuleError(f"output shape must be the indices' shape {indices}, got {out}")
    bigger = [d for d in range(len(data)) if d != a and indices[d] > data[d]]
    if bigger:
        raise RuleError(f"indices dimension {bigger[0]} ({indices[bigger[0]]}) exceeds the data's "
                        f"({data[bigger[0]]}); only axis {a} may be longer")
    if data[a] == 0 and int(np.prod(indices, dtype=np.int64)):
        raise RuleError(f"cannot gather indices from axis {a} of size 0")


def slice_indices(in_shape: Sequence[int], out_shape: Sequence[int], offsets: Sequence[int],
                  strides: Sequence[int], big: str = "input") -> str | None:
    """Why `in[offsets + i * strides]` does not fit `in` for every index i
    of `out` (None when it does): the rule of `ascend.slice`."""
    if not (len(in_shape) == len(out_shape) == len(offsets) == len(strides)):
        return (f"input rank {len(in_shape)}, output rank {len(out_shape)}, {len(offsets)} "
                f"offsets and {len(strides)} strides must agree")
    for d, (n, m, o, s) in enumerate(zip(in_shape, out_shape, offsets, strides)):
        if s == 0:
            return f"stride of dimension {d} is 0"
        last = o + (m - 1) * s
        if m and not (0 <= o < n and 0 <= last < n):
            return (f"dimension {d}: indices {o}, {o + s}, ..., {last} leave the {big}'s "
                    f"0..{n - 1}")
    return None


def _check_slice(op: ir.Operation, target: Target) -> None:
    src, dst = _shapes(op)
    why = slice_indices(src, dst, int_array_attr(op, "offsets"), int_array_attr(op, "strides"))
    if why:
        raise RuleError(why)


def _check_insert_slice(op: ir.Operation, target: Target) -> None:
    src, dst = _shapes(op)
    offsets = int_array_attr(op, "offsets")
    why = slice_indices(dst, src, offsets, [1] * len(offsets), big="output")
    if why:
        raise RuleError(f"the input does not fit the output at the offsets: {why}")


def _check_reduce_axis_attr(op: ir.Operation, target: Target) -> None:
    """`axis` is optional, but when present an i64; so is a reduce_sum's
    `scale` (an f64 the rounded sum is multiplied by: a global average)."""
    if "axis" in op.attributes:
        a = op.attributes["axis"]
        if not (isinstance(a, ir.IntegerAttr) and str(ir.IntegerAttr(a).type) == "i64"):
            raise RuleError(f"attribute 'axis' must be a 64-bit integer (e.g. `1 : i64`), got {a}")
    if "scale" in op.attributes:
        a = op.attributes["scale"]
        if op.name != "ascend.reduce_sum":
            raise RuleError("only reduce_sum takes a 'scale'")
        if not (isinstance(a, ir.FloatAttr) and str(ir.FloatAttr(a).type) == "f64"):
            raise RuleError(f"attribute 'scale' must be a 64-bit float (e.g. `0.5 : f64`), got {a}")


def _check_reduce(op: ir.Operation, target: Target) -> None:
    src, dst = _shapes(op)
    axis = int_attr(op, "axis") if "axis" in op.attributes else -1
    if not src:
        raise RuleError("cannot reduce a rank-0 tensor")
    try:
        a = normalize_axis(axis, len(src))
    except ValueError:
        raise RuleError(f"'axis' {axis} is out of range for the input of rank {len(src)}") from None
    removed, kept = reduced_shape(src, a), reduced_shape(src, a, keepdims=True)
    if dst not in (removed, kept):
        keep = f" or {kept} (axis kept as size 1)" if kept != removed else ""
        raise RuleError(f"output shape must be {removed} (input {src} without axis {a}){keep}, "
                        f"got {dst}")


# ----------------------------------------------------------------------------
# The table
# ----------------------------------------------------------------------------


# Names of the inputs of the broadcasting ops, for messages.
_INPUT_NAMES = {**{n: ("lhs", "rhs") for n in ELEMENTWISE_BINARY}, CMP: ("lhs", "rhs"),
                SELECT: ("cond", "a", "b"), BROADCAST: ("in",)}


def _gm(*names: str) -> tuple[Operand, ...]:
    return tuple(Operand(n, "gm") for n in names)


def _specs() -> list[OpSpec]:
    def spec(name, operands, dtypes, attrs=None, checks=()):
        return OpSpec(name, _gm(*operands), dtypes, attrs or {}, {}, tuple(checks), static_shapes=True)

    specs = [spec(n, ("a", "b", "c"), MATMUL_SIGNATURES, checks=(_check_matmul,)) for n in MATMUL_OPS]
    # int8 fractalizes into a matmul A operand's 16 x 32 blocks; i32 (an int8
    # matmul's C) moves like f32.
    specs.append(spec(FRACTALIZE, ("src", "dst"), same_dtype(2, FLOAT_TYPES + ("i8", "i32")),
                      checks=(_check_fractalize,)))
    specs.append(spec(DEFRACTALIZE, ("src", "dst"), same_dtype(2, FLOAT_TYPES + ("i32",)),
                      checks=(_check_defractalize,)))
    for n in ELEMENTWISE_BINARY:
        types = FLOAT_TYPES if n == "ascend.div" else ARITH_TYPES
        specs.append(spec(n, ("lhs", "rhs", "out"), same_dtype(3, types), checks=(_check_broadcast,)))
    for n in SCALAR:
        specs.append(spec(n, ("in", "out"), same_dtype(2, FLOAT_TYPES), {"scalar": F64},
                          (_check_same_shape,)))
    for n in UNARY:
        specs.append(spec(n, ("in", "out"), same_dtype(2, FLOAT_TYPES), checks=(_check_same_shape,)))
    specs.append(spec(CAST, ("in", "out"), ASCEND_CAST_PAIRS, {"round_mode": STR},
                      (_check_same_shape,)))
    specs.append(spec(CMP, ("lhs", "rhs", "out"), tuple((t, t, "i8") for t in ARITH_TYPES),
                      {"predicate": STR}, (_check_broadcast,)))
    specs.append(spec(SELECT, ("cond", "a", "b", "out"), tuple(("i8", t, t, t) for t in ARITH_TYPES),
                      checks=(_check_broadcast,)))
    specs.append(spec(BROADCAST, ("in", "out"), same_dtype(2, ARITH_TYPES),
                      checks=(_check_broadcast,)))
    specs.append(spec(CLAMP, ("in", "out"), same_dtype(2, FLOAT_TYPES), {"min": F64, "max": F64},
                      (_check_same_shape, _check_clamp_bounds)))
    specs.append(spec(TRANSPOSE, ("in", "out"), same_dtype(2, ARITH_TYPES), {"permutation": I64_ARRAY},
                      (_check_transpose,)))
    specs.append(spec(GATHER, ("table", "indices", "out"),
                      tuple((t, "i32", t) for t in ELEMENT_TYPES), {"axis": I64}, (_check_gather,)))
    specs.append(spec(GATHER_ELEMENTS, ("data", "indices", "out"),
                      tuple((t, "i32", t) for t in ELEMENT_TYPES), {"axis": I64},
                      (_check_gather_elements,)))
    specs.append(spec(SLICE, ("in", "out"), same_dtype(2, ELEMENT_TYPES),
                      {"offsets": I64_ARRAY, "strides": I64_ARRAY}, (_check_slice,)))
    specs.append(spec(INSERT_SLICE, ("in", "out"), same_dtype(2, ELEMENT_TYPES),
                      {"offsets": I64_ARRAY}, (_check_insert_slice,)))
    for n in REDUCE:
        specs.append(OpSpec(n, _gm("in", "out"), same_dtype(2, FLOAT_TYPES), {}, {},
                            (_check_reduce_axis_attr, _check_reduce), static_shapes=True))
    return specs


SPECS = register(_specs() + conv_specs() + pool_specs())
assert set(SPECS) == set(ALL_OPS)
