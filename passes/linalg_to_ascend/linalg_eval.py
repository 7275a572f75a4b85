"""A numpy evaluation of `linalg` / `tensor` / `arith` / `math` on tensors.

The oracle `npu-run --check` uses for a linalg module, and the host-side
folder the conversion to `ascend` uses for ops whose inputs are all
constants (transposed or reshaped weights). Written from the upstream op
definitions, independently of the conversion: a `linalg.generic` body is
evaluated vectorised over its whole loop space, reductions step along their
loops (or reduce in one numpy call when the combiner is a plain add or max).
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, Sequence

import numpy as np
from mlir import ir

from npu.passes.linalg_to_ascend.structure import (UnsupportedOp, element_name, from_loop_space, structured,
                                    tensor_shape, to_loop_space)
from npu.ir import WEIGHT_ATTR

DTYPES = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i64": np.int64,
          "i32": np.int32, "i8": np.int8, "i1": np.bool_, "index": np.int64, "bf16": np.float32}

_erf = np.vectorize(math.erf, otypes=[np.float64])

# arith/math ops in a body: name -> numpy function of the operand arrays.
_ELEMENTWISE: dict[str, Callable] = {
    "arith.addf": np.add, "arith.subf": np.subtract, "arith.mulf": np.multiply,
    "arith.divf": np.divide, "arith.maximumf": np.maximum, "arith.minimumf": np.minimum,
    "arith.maxnumf": np.fmax, "arith.minnumf": np.fmin, "arith.negf": np.negative,
    "arith.remf": np.fmod,
    "arith.addi": np.add, "arith.subi": np.subtract, "arith.muli": np.multiply,
    "arith.maxsi": np.maximum, "arith.minsi": np.minimum, "arith.andi": np.logical_and,
    "arith.ori": np.logical_or, "arith.xori": np.logical_xor,
    "arith.select": lambda c, a, b: np.where(c, a, b),
    "math.exp": np.exp, "math.log": np.log, "math.sqrt": np.sqrt,
    "math.rsqrt": lambda x: 1 / np.sqrt(x), "math.tanh": np.tanh, "math.absf": np.abs,
    "math.erf": lambda x: _erf(x).astype(x.dtype), "math.powf": np.power,
    "math.fpowi": lambda x, n: np.power(x, np.asarray(n).astype(np.asarray(x).dtype)),
}

_CMPF = {"oeq": np.equal, "ueq": np.equal, "one": np.not_equal, "une": np.not_equal,
         "ogt": np.greater, "ugt": np.greater, "oge": np.greater_equal, "uge": np.greater_equal,
         "olt": np.less, "ult": np.less, "ole": np.less_equal, "ule": np.less_equal}
_CMPI = {"eq": np.equal, "ne": np.not_equal, "sgt": np.greater, "sge": np.greater_equal,
         "slt": np.less, "sle": np.less_equal, "ugt": np.greater, "uge": np.greater_equal,
         "ult": np.less, "ule": np.less_equal}
CMPF_PREDICATES = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge",
                   "ult", "ule", "une", "uno", "true"]
CMPI_PREDICATES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]


def numpy_dtype(value_or_type) -> np.dtype:
    name = element_name(value_or_type)
    if name not in DTYPES:
        raise KeyError(name)
    return np.dtype(DTYPES[name])


def constant_value(op: ir.Operation, weights: Mapping[str, np.ndarray] | None = None
                   ) -> np.ndarray | float | int:
    """The value of an `arith.constant` (a numpy array for tensors); one
    whose data the import kept apart (`WEIGHT_ATTR`) from `weights`."""
    attr = op.attributes["value"]
    result_type = op.results[0].type
    if isinstance(result_type, ir.RankedTensorType):
        dtype = numpy_dtype(result_type)
        shape = ir.RankedTensorType(result_type).shape
        if weights and WEIGHT_ATTR in op.attributes:
            data = weights[ir.StringAttr(op.attributes[WEIGHT_ATTR]).value]
            return data.astype(dtype, copy=False).reshape(shape)
        dense = ir.DenseElementsAttr(attr)
        if dense.is_splat:
            return np.full(shape, _scalar(dense.get_splat_value()), dtype=dtype)
        return np.asarray(dense).astype(dtype, copy=False).reshape(shape)  # a view when it can
    return _scalar(attr)


def _scalar(attr: ir.Attribute):
    if isinstance(attr, ir.FloatAttr):
        return ir.FloatAttr(attr).value
    if isinstance(attr, ir.BoolAttr):
        return bool(ir.BoolAttr(attr).value)
    return ir.IntegerAttr(attr).value


def predicate_name(op: ir.Operation) -> str:
    value = ir.IntegerAttr(op.attributes["predicate"]).value
    return (CMPF_PREDICATES if op.name == "arith.cmpf" else CMPI_PREDICATES)[value]


def eval_scalar_op(op: ir.Operation, args: Sequence, result_dtype: np.dtype):
    """One arith/math op on numpy operands (arrays or scalars)."""
    name = op.name
    if name == "arith.constant":
        return constant_value(op)
    if name == "arith.cmpf":
        return _CMPF[predicate_name(op)](args[0], args[1])
    if name == "arith.cmpi":
        return _CMPI[predicate_name(op)](args[0], args[1])
    if name in ("arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.index_cast",
                "arith.extsi", "arith.extui", "arith.trunci", "arith.bitcast"):
        with np.errstate(over="ignore", invalid="ignore"):  # IEEE: out of range -> inf
            return np.asarray(args[0]).astype(result_dtype)
    if name in ("arith.fptosi", "arith.fptoui"):
        with np.errstate(over="ignore", invalid="ignore"):
            return np.trunc(args[0]).astype(result_dtype)
    fn = _ELEMENTWISE.get(name)
    if fn is None:
        raise UnsupportedOp(op, f"'{name}' is not supported in a linalg body")
    with np.errstate(all="ignore"):
        return np.asarray(fn(*args)).astype(result_dtype)


def _slice_op(op: ir.Operation, operands: list) -> np.ndarray:
    """tensor.extract_slice / insert_slice (static) and tensor.concat in numpy."""
    shape = tensor_shape(op.results[0])
    if op.name == "tensor.concat":
        axis = ir.IntegerAttr(op.attributes["dim"]).value
        return np.concatenate([np.asarray(a) for a in operands], axis=axis)
    if len(op.operands) > (1 if op.name == "tensor.extract_slice" else 2):
        raise UnsupportedOp(op, "a slice with offsets, sizes or strides computed at run time")
    offsets, sizes, strides = (list(ir.DenseI64ArrayAttr(op.attributes[f"static_{k}"]))
                               for k in ("offsets", "sizes", "strides"))
    index = tuple(np.arange(n) * s + o for o, n, s in zip(offsets, sizes, strides))
    if op.name == "tensor.extract_slice":
        src = np.asarray(operands[0])
        return np.ascontiguousarray(src[np.ix_(*index)] if index else src).reshape(shape)
    out = np.array(operands[1], copy=True)
    out[np.ix_(*index)] = np.asarray(operands[0]).reshape(sizes)
    return out


class Evaluator:
    """Evaluates one `func.func` on tensors, op by op."""

    def __init__(self, func_op: ir.Operation) -> None:
        self.func = func_op
        self.env: dict = {}

    def value(self, v: ir.Value):
        return self.env[v]

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        block = self.func.regions[0].blocks[0]
        for arg, array in zip(block.arguments, inputs):
            self.env[arg] = np.asarray(array)
        for op in block.operations:
            if op.name == "func.return":
                return [np.asarray(self.env[v]) for v in op.operands]
            self.step(op)
        raise ValueError("function has no return")

    def step(self, op: ir.Operation) -> None:
        outs = self.evaluate_op(op, [self.env[v] for v in op.operands])
        for result, out in zip(op.results, outs):
            self.env[result] = out

    def evaluate_op(self, op: ir.Operation, operands: list) -> list:
        name = op.name
        if name == "tensor.empty":
            return [np.zeros(tensor_shape(op.results[0]), numpy_dtype(op.results[0]))]
        if name in ("tensor.expand_shape", "tensor.collapse_shape", "tensor.reshape"):
            return [np.reshape(operands[0], tensor_shape(op.results[0]))]
        if name == "tensor.cast":
            return [operands[0]]
        if name == "linalg.fill":
            out = np.empty(tensor_shape(op.results[0]), numpy_dtype(op.results[0]))
            out[...] = operands[0]
            return [out]
        if name == "linalg.transpose":
            perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
            return [np.ascontiguousarray(np.transpose(operands[0], perm))]
        if name == "linalg.broadcast":
            added = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
            shape = tensor_shape(op.results[0])
            src = np.expand_dims(operands[0], added)
            return [np.broadcast_to(src, shape).copy()]
        if name in ("tensor.extract_slice", "tensor.insert_slice", "tensor.concat"):
            return [_slice_op(op, operands)]
        if name == "tensor.pad":
            low = list(ir.DenseI64ArrayAttr(op.attributes["static_low"]))
            high = list(ir.DenseI64ArrayAttr(op.attributes["static_high"]))
            body = op.regions[0].blocks[0]
            fill = self.env[list(body.operations)[-1].operands[0]]
            return [np.pad(np.asarray(operands[0]), list(zip(low, high)), constant_values=fill)]
        if name in ("linalg.pooling_nchw_max", "linalg.pooling_nchw_sum", "linalg.pooling_ncw_max",
                    "linalg.pooling_ncw_sum"):
            return [_pool(op, operands)]
        if name == "linalg.copy":
            return [np.array(operands[0], dtype=numpy_dtype(op.results[0]))]
        if name.startswith("linalg.") and "indexing_maps" in op.attributes:
            return self.structured_op(op, operands)
        if name.startswith("arith.") or name.startswith("math."):
            dtype = numpy_dtype(op.results[0]) if op.results else None
            return [eval_scalar_op(op, operands, dtype)]
        raise UnsupportedOp(op, f"'{name}' is not supported")

    def structured_op(self, op: ir.Operation, operands: list) -> list:
        s = structured(op)
        n = len(s.loop_sizes)
        n_in = len(s.inputs)
        loop_inputs = [to_loop_space(np.asarray(a), m, n) for a, m in zip(operands[:n_in], s.maps)]
        inits = [np.asarray(a) for a in operands[n_in:]]
        if op.name == "linalg.generic":
            body = op.regions[0].blocks[0]
        else:
            body = None
        red = s.reduction_dims
        out_dtypes = [numpy_dtype(v) for v in s.outputs]
        if body is None:  # a named contraction: out += prod(ins) summed over reductions
            prod = np.multiply(*[a.astype(np.float64) for a in loop_inputs]) if n_in == 2 else loop_inputs[0]
            acc = to_loop_space(inits[0], s.maps[-1], n).astype(np.float64)
            total = acc + (prod.sum(axis=tuple(red), keepdims=True) if red else prod)
            return [from_loop_space(total, s.maps[-1]).astype(out_dtypes[0])]
        loop_outs = [to_loop_space(a, m, n) for a, m in zip(inits, s.maps[n_in:])]
        if not red:
            results = self.body(body, loop_inputs, loop_outs, s.loop_sizes)
            return [_result(r, m, t, s.loop_sizes)
                    for r, m, t in zip(results, s.maps[n_in:], out_dtypes)]
        return self.reduction(s, body, loop_inputs, loop_outs, out_dtypes)

    def body(self, block: ir.Block, ins: list, outs: list, loop_sizes: list[int]) -> list:
        return self.body_at(block, ins, outs, loop_sizes, [], ())

    def reduction(self, s, body, ins: list, outs: list, out_dtypes) -> list:
        red = s.reduction_dims
        red_sizes = [s.loop_sizes[d] for d in red]
        par_shape = [1 if d in red else size for d, size in enumerate(s.loop_sizes)]
        acc = [np.broadcast_to(o, par_shape).copy() for o in outs]
        for index in np.ndindex(*red_sizes):
            step_ins = [_take(a, red, index) for a in ins]
            idx_sizes = list(s.loop_sizes)
            acc = [np.asarray(r).astype(t) for r, t in
                   zip(self.body_at(body, step_ins, acc, idx_sizes, red, index), out_dtypes)]
            acc = [np.broadcast_to(a, par_shape) for a in acc]
        return [from_loop_space(a, m).astype(t) for a, m, t in zip(acc, s.maps[len(s.inputs):], out_dtypes)]

    def body_at(self, block, ins, outs, loop_sizes, red, index) -> list:
        """The body over the whole loop space, except the reduction loops
        `red`, which sit at `index` (one step of a reduction)."""
        env = dict(zip(block.arguments, ins + outs))
        for op in block.operations:
            if op.name == "linalg.yield":  # a yielded value may be captured (a splat's element)
                return [env[v] if v in env else self.env[v] for v in op.operands]
            if op.name == "linalg.index":
                dim = ir.IntegerAttr(op.attributes["dim"]).value
                if dim in red:
                    env[op.results[0]] = np.int64(index[red.index(dim)])
                else:
                    shape = [1] * len(loop_sizes)
                    shape[dim] = loop_sizes[dim]
                    env[op.results[0]] = np.arange(loop_sizes[dim]).reshape(shape)
                continue
            args = [env[v] if v in env else self.env[v] for v in op.operands]
            if op.name == "cf.assert":  # torch-mlir's index checks (GatherElements)
                if not np.all(args[0]):
                    raise UnsupportedOp(op, ir.StringAttr(op.attributes["msg"]).value)
                continue
            if op.name == "tensor.extract":  # a gather: the indices are loop-space arrays
                where = tuple(np.asarray(i).astype(np.int64) for i in args[1:])
                env[op.results[0]] = np.asarray(args[0])[where]
                continue
            env[op.results[0]] = eval_scalar_op(op, args, numpy_dtype(op.results[0]))
        raise ValueError("body without linalg.yield")


def _pool(op: ir.Operation, operands: list) -> np.ndarray:
    """linalg.pooling_nchw_{max,sum}: out[n,c,i,j] combined with every
    x[n,c,i*sh+a*dh,j*sw+b*dw] of the (unpadded) operand."""
    x, kernel, out = np.asarray(operands[0]), np.asarray(operands[1]), np.array(operands[2])
    strides = [int(v) for v in ir.DenseIntElementsAttr(op.attributes["strides"])]
    dilations = [int(v) for v in ir.DenseIntElementsAttr(op.attributes["dilations"])]
    if x.ndim == 3:  # pooling_ncw: a 1 x k window on [N, C, 1, L]
        shape = out.shape
        out = _pool_2d(x[:, :, None], kernel.reshape(1, -1), out[:, :, None], [1] + strides,
                       [1] + dilations, op.name.endswith("max"))
        return out.reshape(shape)
    return _pool_2d(x, kernel, out, strides, dilations, op.name.endswith("max"))


def _pool_2d(x, kernel, out, strides, dilations, is_max: bool) -> np.ndarray:
    (sh, sw), (dh, dw) = strides, dilations
    ho, wo = out.shape[2:]
    combine = np.maximum if is_max else np.add
    for a in range(kernel.shape[0]):
        for b in range(kernel.shape[1]):
            win = x[:, :, a * dh:a * dh + (ho - 1) * sh + 1:sh, b * dw:b * dw + (wo - 1) * sw + 1:sw]
            out = combine(out, win).astype(out.dtype)
    return out


def _result(r, results, dtype: np.dtype, loop_sizes: list[int]) -> np.ndarray:
    """A parallel generic's result `r` over the loop space, in the output's
    order. One that is already the whole loop space in the output's type
    (a broadcast adding unit dims, a transpose: BERT-12's weights as its
    batch matmuls take them) stays a read-only view of its operand: copying
    those 85M weights was 0.4 CPU s of its conversion and 340 MB of peak."""
    r = np.asarray(r)
    if r.dtype != dtype or r.shape != tuple(loop_sizes):
        return from_loop_space(np.broadcast_to(r, loop_sizes), results).astype(dtype)
    view = from_loop_space(r, results).view()
    view.flags.writeable = False
    return view


def _take(a: np.ndarray, red: list[int], index: tuple) -> np.ndarray:
    sel = [slice(None)] * a.ndim
    for d, i in zip(red, index):
        if a.shape[d] != 1:
            sel[d] = slice(i, i + 1)
    return a[tuple(sel)]


def evaluate(func_op: ir.Operation, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The results of `func_op` (a func on tensors) for `inputs`."""
    return Evaluator(func_op).run(inputs)
