"""Reference semantics of the `ascend` dialect in numpy.

`evaluate(func_op, inputs)` runs an ascend-level `func.func` op by op and
returns the final contents of every argument. It is the oracle the simulator
tests compare against, so it is written from dialects/README.md alone, as
plainly as possible, and shares no code with the lowerings or the simulator.

Numerics (the contract's intent, made precise here):
* fp16 ops compute in float32 and round to the output type once per op;
  fp32 ops compute in float32; i32 ops wrap around.
* matmul / batch_matmul multiply fp16 values exactly and accumulate in fp32,
  then round once to C's type; i8 x i8 -> i32 is exact with i32
  accumulation (`npu.reference_int8`).
* reduce_sum accumulates in fp32 and rounds once; reductions take an
  optional `axis` (default the last) and the output may keep it as size 1.
  A reduce_sum's optional `scale` then multiplies the rounded sum as muls
  does (a global average pool's 1/(H*W) in the same kernel).
* conv2d multiplies fp16 input and weight exactly, accumulates in fp32; f32
  out adds the bias and rounds once, f16 out rounds, then adds the f16 bias
  (`npu.reference_conv`).
* erf is math.erf of the (fp32) value, rounded once.
* cmp writes 1/0 (i8) from the comparison of the values in their own type
  (NaN compares unequal to everything); select takes `a` where cond != 0.
* The `scalar` of adds/muls/maxs/mins is first converted to the operand's
  element type (the hardware's scalar register holds it in that type).
* cast: float -> int rounds with `round_mode` ("rint"/"none": nearest, ties
  to even; "round": nearest, ties away from zero; "floor", "ceil", "trunc")
  and saturates to the integer range, NaN -> 0; f32 -> f16 rounds with the
  same mode (directed rounding picks the neighbouring fp16 value in that
  direction); widening casts are exact.
* slice reads `in[offsets + i * strides]` (negative strides read backwards);
  insert_slice writes only its region of `out` (the rest keeps its value).
* `memref.alloc` in "gm" (a temporary) starts as NaN (floats) or 0 (integers),
  so reading a temporary before writing it shows up in the result.
* Views share their source's elements: `memref.expand_shape` /
  `collapse_shape` are reshapes of the (contiguous) source, `memref.view` is
  the typed tensor at a constant byte shift of an i8 buffer. A GM workspace
  argument (`npu.workspace`) the caller leaves out starts as all-ones bytes
  (NaN in f16/f32), is scratch, and is not among the results.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
from mlir import ir

from npu import diagnostics
from npu.reference_conv import conv2d_of
from npu.dialects.ascend_conv import NC1HWC0, layout
from npu.dialects.ascend_pool import Pool2d, pool2d_5hd_numpy, pool2d_numpy
from npu.reference_int8 import defractalize_blocks, fractalize_blocks, matmul_i8
from npu.ir import (NUMPY_DTYPES, float_attr, has_attr, int_array_attr, int_attr, memory_space,
                    memref_element, memref_shape, str_attr, workspace_args)


class EvaluationError(ValueError):
    """The function cannot be evaluated (an op outside the ascend level, bad
    inputs); the message is one `file:line:col: error: ...` line."""


def _fail(op: ir.Operation, message: str) -> EvaluationError:
    # Named like the tool's input (not "-"), as every other diagnostic.
    engine = diagnostics.DiagnosticEngine(display_name=diagnostics.current().display_name)
    located = engine.emit("error", message, op.location)
    return EvaluationError(located.format())


# ----------------------------------------------------------------------------
# Layout: Nz fractals
# ----------------------------------------------------------------------------


def fractalize(src: np.ndarray, dst_shape: Sequence[int]) -> np.ndarray:
    """ND `[..., R, C]` -> Nz `[..., C1, R1, f, c0]`, zero padding; the block
    (f x c0: 16 x 16, or int8's 16 x 32) from dst's shape."""
    return fractalize_blocks(src, dst_shape)


def defractalize(src: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Nz `[..., C1, R1, f, c0]` -> ND `[..., rows, cols]` (the padding dropped)."""
    return defractalize_blocks(src)[..., :rows, :cols].copy()


# ----------------------------------------------------------------------------
# Rounding
# ----------------------------------------------------------------------------


def _round_to_integral(x: np.ndarray, mode: str) -> np.ndarray:
    x = x.astype(np.float64)
    if mode in ("rint", "none"):
        return np.rint(x)  # ties to even
    if mode == "round":
        return np.copysign(np.floor(np.abs(x) + 0.5), x)  # ties away from zero
    if mode == "floor":
        return np.floor(x)
    if mode == "ceil":
        return np.ceil(x)
    if mode == "trunc":
        return np.trunc(x)
    raise ValueError(f"unknown round_mode '{mode}'")


def _to_int(x: np.ndarray, dtype, mode: str) -> np.ndarray:
    info = np.iinfo(dtype)
    r = _round_to_integral(x, mode)
    r = np.where(np.isnan(r), 0.0, np.clip(r, info.min, info.max))
    return r.astype(dtype)


def _to_f16(x: np.ndarray, mode: str) -> np.ndarray:
    """Round float values to fp16 with `mode`, from the two fp16 neighbours of x."""
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore"):
        nearest = x64.astype(np.float16)  # IEEE nearest-even (overflow -> inf)
    if mode in ("rint", "none"):
        return nearest
    n64 = nearest.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # nextafter(max) is inf: wanted
        below = np.where(n64 <= x64, nearest, np.nextafter(nearest, np.float16(-np.inf)))
        above = np.where(n64 >= x64, nearest, np.nextafter(nearest, np.float16(np.inf)))
    if mode == "floor":
        out = below
    elif mode == "ceil":
        out = above
    elif mode == "trunc":
        out = np.where(x64 >= 0, below, above)
    elif mode == "round":
        # Distances as if the format went on: inf stands where 2**16 would be.
        edge = 2.0 ** np.finfo(np.float16).maxexp
        b64 = np.where(np.isinf(below), np.copysign(edge, below.astype(np.float64)), below)
        a64 = np.where(np.isinf(above), np.copysign(edge, above.astype(np.float64)), above)
        d_below = x64 - b64
        d_above = a64 - x64
        tie_away = np.where(x64 >= 0, above, below)
        out = np.where(d_below < d_above, below, np.where(d_above < d_below, above, tie_away))
    else:
        raise ValueError(f"unknown round_mode '{mode}'")
    return np.where(np.isnan(x64), nearest, out).astype(np.float16)


def cast(x: np.ndarray, out_dtype, mode: str) -> np.ndarray:
    """`ascend.cast` between the element types of the contract."""
    out_dtype = np.dtype(out_dtype)
    if np.issubdtype(out_dtype, np.integer):
        if np.issubdtype(x.dtype, np.floating):
            return _to_int(x, out_dtype, mode)
        info = np.iinfo(out_dtype)  # int -> int saturates
        return np.clip(x.astype(np.int64), info.min, info.max).astype(out_dtype)
    if out_dtype == np.float16 and x.dtype in (np.float32, np.int32):
        return _to_f16(x, mode)  # i32 -> f16: |x| <= 65504 is exact, beyond rounds by mode
    return x.astype(out_dtype)  # i32 -> f32 nearest-even; the rest widen exactly


# ----------------------------------------------------------------------------
# Elementwise
# ----------------------------------------------------------------------------

_BINARY: dict[str, Callable] = {
    "ascend.add": np.add, "ascend.sub": np.subtract, "ascend.mul": np.multiply,
    "ascend.div": np.divide, "ascend.max": np.maximum, "ascend.min": np.minimum,
}
_SCALAR: dict[str, Callable] = {
    "ascend.adds": np.add, "ascend.muls": np.multiply,
    "ascend.maxs": np.maximum, "ascend.mins": np.minimum,
}
_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "ascend.relu": lambda x: np.maximum(x, np.float32(0)),
    "ascend.abs": np.abs,
    "ascend.neg": np.negative,
    "ascend.exp": np.exp,
    "ascend.ln": np.log,
    "ascend.sqrt": np.sqrt,
    "ascend.rsqrt": lambda x: np.float32(1) / np.sqrt(x),
    "ascend.reciprocal": lambda x: np.float32(1) / x,
    "ascend.tanh": np.tanh,
    "ascend.sigmoid": lambda x: np.float32(1) / (np.float32(1) + np.exp(-x)),
    "ascend.erf": lambda x: np.vectorize(math.erf, otypes=[np.float64])(x),
}

_CMP: dict[str, Callable] = {"eq": np.equal, "ne": np.not_equal, "lt": np.less,
                             "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}


def _compute_type(dtype: np.dtype) -> np.dtype:
    """fp16 computes in fp32; everything else in its own type."""
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _elementwise(fn: Callable, out_dtype: np.dtype, *args: np.ndarray) -> np.ndarray:
    ct = _compute_type(out_dtype)
    with np.errstate(all="ignore"):  # inf/NaN are values here, as on the machine
        result = fn(*(a.astype(ct) for a in args))
    return np.asarray(result).astype(out_dtype)


# ----------------------------------------------------------------------------
# The interpreter
# ----------------------------------------------------------------------------


class _Frame:
    """Arrays of the SSA memref values of one function."""

    def __init__(self) -> None:
        self.arrays: dict[ir.Value, np.ndarray] = {}

    def __getitem__(self, value: ir.Value) -> np.ndarray:
        return self.arrays[value]

    def write(self, value: ir.Value, result: np.ndarray) -> None:
        """Store into the existing buffer (so aliases of an argument see it)."""
        dst = self.arrays[value]
        assert dst.shape == result.shape, (dst.shape, result.shape)
        dst[...] = result


_OTHER_OPS = ("ascend.matmul", "ascend.batch_matmul", "ascend.fractalize", "ascend.defractalize",
              "ascend.cast", "ascend.clamp", "ascend.transpose", "ascend.reduce_sum",
              "ascend.reduce_max", "ascend.reduce_min", "ascend.cmp", "ascend.select",
              "ascend.broadcast", "ascend.gather", "ascend.gather_elements", "ascend.slice",
              "ascend.insert_slice", "ascend.conv2d", "ascend.pool2d", "memref.alloc",
              "memref.dealloc")
# Views of GM buffers, and the integer constants of their byte shifts.
_VIEW_OPS = ("memref.expand_shape", "memref.collapse_shape", "memref.view", "arith.constant")
EVALUATED_OPS = (frozenset(_BINARY) | frozenset(_SCALAR) | frozenset(_UNARY)
                 | frozenset(_OTHER_OPS) | frozenset(_VIEW_OPS))


def _view(op: ir.Operation, frame: _Frame) -> None:
    """Views alias their source's elements (numpy views, never copies)."""
    result = op.results[0]
    if op.name == "arith.constant":
        attr = op.attributes["value"]
        if not isinstance(attr, ir.IntegerAttr):
            raise _fail(op, "the reference semantics only evaluates integer constants (view shifts)")
        frame.arrays[result] = ir.IntegerAttr(attr).value
        return
    if any(v not in frame.arrays for v in op.operands):
        raise _fail(op, "its source is not a memref argument, gm temporary or view of one")
    src = frame[op.operands[0]]
    shape = tuple(memref_shape(result.type))
    if op.name == "memref.view":
        if len(op.operands) != 2:
            raise _fail(op, "'memref.view' with dynamic sizes")
        shift = frame[op.operands[1]]
        dtype = np.dtype(NUMPY_DTYPES[memref_element(result.type)])
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        raw = src.reshape(-1).view(np.uint8)
        if shift < 0 or shift + nbytes > raw.size:
            raise _fail(op, f"'memref.view' of {nbytes} bytes at byte shift {shift} is outside its "
                            f"{raw.size}-byte source")
        view = raw[shift:shift + nbytes].view(dtype)
    else:
        view = src.view()
    view.shape = shape  # raises instead of copying: a view must alias its source
    frame.arrays[result] = view


def _execute(op: ir.Operation, frame: _Frame) -> None:
    name = op.name
    if name not in EVALUATED_OPS:
        raise _fail(op, f"the reference semantics cannot evaluate '{name}' (only ascend ops, gm "
                        "memref.alloc/dealloc, views, integer constants and func.return)")
    if name in _VIEW_OPS:
        _view(op, frame)
        return
    for i, v in enumerate(op.operands):
        if v not in frame.arrays:
            raise _fail(op, f"operand #{i} is not a memref argument or gm temporary of the function")
    ins = [frame[v] for v in op.operands]
    out_value = op.operands[len(op.operands) - 1] if len(op.operands) else None

    if name in ("ascend.matmul", "ascend.batch_matmul") and ins[0].dtype == np.int8:
        frame.write(out_value, matmul_i8(ins[0], ins[1], ins[2].shape))
    elif name in ("ascend.matmul", "ascend.batch_matmul"):
        a, b, c = ins
        f = a.shape[-1]
        m, n, k = a.shape[-3] * f, a.shape[-4] * f, b.shape[-4] * f
        a_nd = defractalize(a, m, n).astype(np.float32)  # fp16 -> fp32 is exact
        b_nd = defractalize(b, n, k).astype(np.float32)
        product = np.matmul(a_nd, b_nd)  # fp32 products (exact) and fp32 accumulation
        frame.write(out_value, fractalize(product, c.shape).astype(c.dtype))
    elif name == "ascend.conv2d":
        frame.write(out_value, conv2d_of(op, ins))
    elif name == "ascend.fractalize":
        src, dst = ins
        frame.write(out_value, fractalize(src, dst.shape))
    elif name == "ascend.defractalize":
        src, dst = ins
        frame.write(out_value, defractalize(src, dst.shape[-2], dst.shape[-1]))
    elif name in _BINARY:
        lhs, rhs, out = ins
        result = _elementwise(_BINARY[name], out.dtype, lhs, rhs)
        frame.write(out_value, np.broadcast_to(result, out.shape))
    elif name in _SCALAR:
        src, out = ins
        scalar = np.asarray(float_attr(op, "scalar")).astype(src.dtype)
        frame.write(out_value, _elementwise(_SCALAR[name], out.dtype, src, scalar))
    elif name in _UNARY:
        src, out = ins
        frame.write(out_value, _elementwise(_UNARY[name], out.dtype, src))
    elif name == "ascend.cast":
        src, out = ins
        frame.write(out_value, cast(src, out.dtype, str_attr(op, "round_mode")))
    elif name == "ascend.clamp":
        src, out = ins
        lo, hi = float_attr(op, "min"), float_attr(op, "max")
        frame.write(out_value, _elementwise(
            lambda x: np.minimum(np.float32(hi), np.maximum(x, np.float32(lo))), out.dtype, src))
    elif name == "ascend.pool2d":
        src, out = ins
        pooled = pool2d_5hd_numpy if layout(op) == NC1HWC0 else pool2d_numpy
        frame.write(out_value, pooled(src, Pool2d.of(op)))
    elif name == "ascend.transpose":
        src, out = ins
        frame.write(out_value, np.transpose(src, int_array_attr(op, "permutation")))
    elif name == "ascend.reduce_sum":
        src, out = ins
        total = src.astype(np.float32).sum(axis=_axis(op), dtype=np.float32)
        total = total.reshape(out.shape).astype(out.dtype)
        if has_attr(op, "scale"):
            scale = np.asarray(float_attr(op, "scale")).astype(out.dtype)
            total = _elementwise(np.multiply, out.dtype, total, scale)
        frame.write(out_value, total)
    elif name in ("ascend.reduce_max", "ascend.reduce_min"):
        src, out = ins
        fn = np.max if name == "ascend.reduce_max" else np.min
        frame.write(out_value, fn(src, axis=_axis(op)).reshape(out.shape).astype(out.dtype))
    elif name == "ascend.cmp":
        lhs, rhs, out = ins
        with np.errstate(invalid="ignore"):
            result = _CMP[str_attr(op, "predicate")](lhs, rhs)
        frame.write(out_value, np.broadcast_to(result, out.shape).astype(np.int8))
    elif name == "ascend.select":
        cond, a, b, out = ins
        frame.write(out_value, np.broadcast_to(np.where(cond != 0, a, b), out.shape))
    elif name == "ascend.broadcast":
        src, out = ins
        frame.write(out_value, np.broadcast_to(src, out.shape))
    elif name in ("ascend.gather", "ascend.gather_elements"):
        table, indices, out = ins
        frame.write(out_value, gather(op, table, indices, name == "ascend.gather_elements"))
    elif name == "ascend.slice":
        src, out = ins
        index = tuple(np.arange(out.shape[d]) * s + o for d, (o, s) in
                      enumerate(zip(int_array_attr(op, "offsets"), int_array_attr(op, "strides"))))
        frame.write(out_value, src[np.ix_(*index)] if index else src)
    elif name == "ascend.insert_slice":
        src, out = ins  # only the region is written: the rest of `out` keeps its elements
        region = tuple(slice(o, o + n) for o, n in zip(int_array_attr(op, "offsets"), src.shape))
        out[region] = src
    elif name == "memref.alloc":
        result = op.results[0]
        if memory_space(result.type) != "gm":
            raise _fail(op, f"the reference semantics has no on-chip buffers; '{result.type}' "
                            "belongs to a lowered program")
        dtype = NUMPY_DTYPES[memref_element(result.type)]
        fill = np.nan if np.issubdtype(dtype, np.floating) else 0
        frame.arrays[result] = np.full(memref_shape(result.type), fill, dtype=dtype)
    # memref.dealloc: nothing to do.


def gather(op: ir.Operation, table: np.ndarray, indices: np.ndarray,
           elements: bool = False) -> np.ndarray:
    """ONNX Gather (`take`) or GatherElements (`elements`: element p reads
    p with p[axis] = indices[p]): a negative index counts from the end of
    `axis`; one outside [-size, size) is an error (onnxruntime refuses it too)."""
    axis = int_attr(op, "axis") % table.ndim
    size = table.shape[axis]
    bad = (indices < -size) | (indices >= size)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise _fail(op, f"index {int(indices[at])} at {list(at)} is out of range for axis {axis} "
                        f"of size {size} (valid: {-size}..{size - 1})")
    wrapped = np.where(indices < 0, indices + size, indices)
    if not elements:
        return np.take(table, wrapped, axis=axis)
    where = list(np.indices(indices.shape, sparse=True))
    where[axis] = wrapped
    return table[tuple(where)]


def _axis(op: ir.Operation) -> int:
    """The reduced axis: the `axis` attribute (negative counts from the end) or the last."""
    return int_attr(op, "axis") if "axis" in op.attributes else -1


def evaluate(func_op: ir.Operation | ir.OpView, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run an ascend-level `func.func` in numpy; returns the final contents of
    every argument but the workspaces (copies of `inputs`, updated), in
    argument order. `inputs` may leave the workspace arguments out."""
    func_op = func_op.operation
    if func_op.name != "func.func":
        raise _fail(func_op, f"expected a func.func, got '{func_op.name}'")
    block = func_op.regions[0].blocks[0]
    args = list(block.arguments)
    scratch = workspace_args(func_op)
    if len(inputs) == len(args) - len(scratch):
        given = iter(inputs)
        inputs = [None if i in scratch else next(given) for i in range(len(args))]
    if len(inputs) != len(args):
        raise _fail(func_op, f"the function has {len(args)} arguments, got {len(inputs)} inputs")
    frame = _Frame()
    results = []
    for i, (arg, value) in enumerate(zip(args, inputs)):
        if not isinstance(arg.type, ir.MemRefType):
            raise _fail(func_op, f"argument #{i} is {arg.type}, not a memref")
        shape, dtype = memref_shape(arg.type), NUMPY_DTYPES[memref_element(arg.type)]
        if value is None:  # a workspace left out: undefined bytes
            value = np.full(shape, -1, np.int64).astype(dtype)
        array = np.array(value, copy=True)
        if list(array.shape) != shape or array.dtype != dtype:
            raise _fail(func_op, f"argument #{i} is {arg.type}; the input is "
                                 f"{array.dtype}{list(array.shape)}")
        frame.arrays[arg] = array
        if i not in scratch:
            results.append(array)
    for op in block.operations:
        op = op.operation
        if op.name == "func.return":
            break
        if op.name == "scf.execute_region" and any(a in op.attributes for a in (
                "npu.fused", "npu.epilogue", "npu.conv_epilogue", "npu.attention")):
            # A fused, epilogue or attention group (dialects/README.md): its ops in order.
            for inner in op.regions[0].blocks[0].operations:
                if inner.operation.name != "scf.yield":
                    _execute(inner.operation, frame)
            continue
        if op.regions and any(len(r.blocks) for r in op.regions):
            raise _fail(op, f"the reference semantics cannot evaluate '{op.name}' "
                            "(control flow is not part of the ascend level)")
        _execute(op, frame)
    return results
