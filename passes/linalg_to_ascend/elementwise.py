"""A `linalg.generic` body, op by op, as `ascend` vector ops in loop space.

Every operand is first viewed in the generic's loop space (one axis per
loop, size 1 where it does not depend on the loop), so each arith/math op of
the body becomes one ascend op whose operands broadcast the numpy way. Terms
that are host scalars fold on the host or become the `scalar` of
adds/muls/maxs/mins; relu/clip-style `select(cmpf(x, c), x, c)` becomes
maxs/mins.
"""

from __future__ import annotations

import math
from typing import Callable, Union

import numpy as np
from mlir import ir

from npu.passes.linalg_to_ascend.linalg_eval import eval_scalar_op, numpy_dtype, predicate_name
from npu.passes.linalg_to_ascend.structure import UnsupportedOp, element_name
from npu.passes.linalg_to_ascend.emitter import Buf, Emitter, float_text

# A term of the body: a host scalar or a GM buffer in loop space.
Term = Union[float, int, bool, Buf]

BINARY = {"arith.addf": "ascend.add", "arith.subf": "ascend.sub", "arith.mulf": "ascend.mul",
          "arith.divf": "ascend.div", "arith.maximumf": "ascend.max", "arith.maxnumf": "ascend.max",
          "arith.minimumf": "ascend.min", "arith.minnumf": "ascend.min",
          "arith.addi": "ascend.add", "arith.subi": "ascend.sub", "arith.muli": "ascend.mul",
          "arith.maxsi": "ascend.max", "arith.minsi": "ascend.min"}
UNARY = {"math.exp": "ascend.exp", "math.log": "ascend.ln", "math.sqrt": "ascend.sqrt",
         "math.rsqrt": "ascend.rsqrt", "math.tanh": "ascend.tanh", "math.erf": "ascend.erf",
         "math.absf": "ascend.abs", "arith.negf": "ascend.neg"}
CASTS = ("arith.extf", "arith.truncf", "arith.sitofp", "arith.fptosi", "arith.extsi",
         "arith.trunci", "arith.uitofp", "arith.fptoui")
# cmpf/cmpi predicates -> ascend.cmp predicate (NaN ordering is not modelled).
CMP = {"oeq": "eq", "ueq": "eq", "one": "ne", "une": "ne", "ogt": "gt", "ugt": "gt",
       "oge": "ge", "uge": "ge", "olt": "lt", "ult": "lt", "ole": "le", "ule": "le",
       "eq": "eq", "ne": "ne", "sgt": "gt", "sge": "ge", "slt": "lt", "sle": "le"}
SUPPORTED_TYPES = ("f32", "f16", "i32", "i8")
LOGIC = ("arith.andi", "arith.ori", "arith.xori")


class Unreadable:
    """The `%out` block argument of a generic whose init is not a constant."""


def broadcast_shape(*shapes) -> tuple[int, ...]:
    return tuple(int(s) for s in np.broadcast_shapes(*shapes))


def is_scalar(term: Term) -> bool:
    return not isinstance(term, Buf)


class BodyLowering:
    """Lowers one body; `dest(shape, dtype)` gives the buffer for the final op."""

    def __init__(self, em: Emitter, loc: str, rank: int, scalar_env: Callable[[ir.Value], Term],
                 loop_sizes: list[int] | None = None):
        self.em = em
        self.loc = loc
        self.rank = rank
        self.outer = scalar_env
        self.loop_sizes = loop_sizes  # for `linalg.index` (None: refused)

    def run(self, block: ir.Block, args: list[Term], values: list[ir.Value]) -> list[Term]:
        """Terms of `values` (body values), lowering only the ops they need."""
        self.env: dict = dict(zip(block.arguments, args))
        self.body_ops = {r: op for op in block.operations for r in op.results}
        return [self.term(v) for v in values]

    def term(self, value: ir.Value) -> Term:
        if value in self.env:
            return self.env[value]
        op = self.body_ops.get(value)
        if op is None:
            return self.outer(value)
        if op.name == "arith.select":  # relu / clip patterns never need the compare
            clamp = self._clamp_pattern(op, self.term(op.operands[1]), self.term(op.operands[2]))
            if clamp is not None:
                self.env[value] = clamp
                return clamp
        operands = [self.term(v) for v in op.operands]
        self.env[value] = self.lower(op, operands)
        return self.env[value]

    # -- one body op ---------------------------------------------------------
    def lower(self, op: ir.Operation, operands: list[Term]) -> Term:
        name = op.name
        if any(isinstance(t, Unreadable) for t in operands):
            raise UnsupportedOp(op, "the body reads its output tensor's initial value")
        if name == "linalg.index":
            return self.index(op)
        if name == "arith.constant":
            return eval_scalar_op(op, [], numpy_dtype(op.results[0]))
        out_type = element_name(op.results[0])
        if all(is_scalar(t) for t in operands):
            value = eval_scalar_op(op, operands, numpy_dtype(op.results[0]))
            return value.item() if np.ndim(value) == 0 else value
        operands = [self.host_array(t) if isinstance(t, np.ndarray) else t for t in operands]
        if name == "arith.extf" and out_type == "f64" and self._exact_compare_only(op, operands[0]):
            return operands[0]
        if out_type not in SUPPORTED_TYPES and out_type != "i1":
            raise UnsupportedOp(op, f"'{name}' computes {out_type}; the vector unit holds "
                                f"{', '.join(SUPPORTED_TYPES)}")
        if name in BINARY:
            return self.binary(op, BINARY[name], operands[0], operands[1])
        if name in UNARY:
            return self.unary(UNARY[name], operands[0])
        if name in CASTS:
            return self.cast(operands[0], out_type, "trunc" if "fpto" in name else "rint")
        if name == "arith.extui" and element_name(op.operands[0]) == "i1":
            # a bool (i8 0/1 on chip) to an integer: 0 or 1 either way (RoBERTa's
            # `Cast(Not(Equal(ids, pad)), to=INT32)`)
            return self.cast(operands[0], out_type, "rint")
        if name in ("arith.cmpf", "arith.cmpi"):
            return self.compare(op, operands[0], operands[1])
        if name == "arith.select":
            return self.select(op, *operands)
        if name in LOGIC and out_type == "i1":
            return self.logic(name, operands[0], operands[1])
        if name in ("math.powf", "math.fpowi"):
            return self.power(op, operands[0], operands[1])
        raise UnsupportedOp(op, f"'{name}' has no vector-unit equivalent")

    def index(self, op) -> np.ndarray:
        """`linalg.index d` as a host array in loop space (size 1 but along d):
        what only depends on the indices (Trilu's mask, an iota) is computed
        on the host and reaches the device as one constant."""
        if self.loop_sizes is None:
            raise UnsupportedOp(op, "reads the loop index (linalg.index) in a reduction body")
        d = ir.IntegerAttr(op.attributes["dim"]).value
        shape = [1] * self.rank
        shape[d] = self.loop_sizes[d]
        return np.arange(self.loop_sizes[d], dtype=np.int64).reshape(shape)

    def host_array(self, array: np.ndarray) -> Term:
        """A host array meeting a device operand: a scalar when uniform, else
        a constant buffer."""
        flat = array.reshape(-1)
        if flat.size and np.all(flat == flat[0]):
            return flat[0].item()
        return self.em.constant(np.ascontiguousarray(array))

    def _exact_compare_only(self, op, x: Term) -> bool:
        """`extf` to f64 whose only users compare it with constants that the
        narrow type holds exactly (IsInf's `== inf`): the compare gives the
        same answer in the narrow type, so the widening is dropped."""
        if not isinstance(x, Buf):
            return False
        narrow = np.float16 if x.dtype == "f16" else np.float32
        for use in op.results[0].uses:
            user = use.owner
            if getattr(user, "name", "") != "arith.cmpf":
                return False
            other = [v for v in user.operands if v != op.results[0]]
            if len(other) != 1:
                return False
            try:
                c = self.term(other[0])
            except UnsupportedOp:
                return False
            if not is_scalar(c) or not (np.isnan(c) or float(narrow(c)) == float(c)):
                return False
        return True

    def _out(self, shape, dtype: str) -> Buf:
        return self.em.alloc(shape, dtype, self.loc)

    def buffer(self, term: Term, dtype: str) -> Buf:
        """A host scalar as a [1,...,1] constant buffer (for ops without a scalar form)."""
        if isinstance(term, Buf):
            return term
        from npu.ir import NUMPY_DTYPES
        return self.em.constant(np.full([1] * self.rank, term, dtype=NUMPY_DTYPES[dtype]))

    def scalar_op(self, name: str, x: Buf, scalar: float) -> Buf:
        out = self._out(x.shape, x.dtype)
        self.em.op(name, [x, out], self.loc, scalar=f"{float_text(scalar)} : f64")
        return out

    def binary(self, op, ascend_name: str, a: Term, b: Term) -> Buf:
        dtype = element_name(op.results[0])
        if isinstance(a, Buf) and isinstance(b, Buf):
            shape = broadcast_shape(a.shape, b.shape)
            if ascend_name == "ascend.div" and b.shape != shape and dtype.startswith("f"):
                # a / b with b broadcast (softmax's row sums): one reciprocal
                # per element of b, then a multiplication (within 2 ulp).
                b, ascend_name = self.unary("ascend.reciprocal", b), "ascend.mul"
            out = self._out(shape, dtype)
            self.em.op(ascend_name, [a, b, out], self.loc)
            return out
        if dtype.startswith("f"):
            x, c = (a, float(b)) if isinstance(a, Buf) else (b, float(a))
            x_first = isinstance(a, Buf)
            if (ascend_name == "ascend.mul" and c == 1.0) or (ascend_name == "ascend.div" and x_first
                                                              and c == 1.0):
                return x
            if ascend_name == "ascend.add" and c == 0.0 or (ascend_name == "ascend.sub" and x_first
                                                             and c == 0.0):
                return x
            if ascend_name == "ascend.add":
                return self.scalar_op("ascend.adds", x, c)
            if ascend_name == "ascend.mul":
                return self.scalar_op("ascend.muls", x, c)
            if ascend_name == "ascend.max":
                return self.scalar_op("ascend.maxs", x, c)
            if ascend_name == "ascend.min":
                return self.scalar_op("ascend.mins", x, c)
            if ascend_name == "ascend.sub":
                if x_first:
                    return self.scalar_op("ascend.adds", x, -c)
                return self.scalar_op("ascend.adds", self.scalar_op("ascend.muls", x, -1.0), c)
            if ascend_name == "ascend.div" and x_first and c != 0 and math.isfinite(c):
                # x * (1/c): exact for powers of two, within 2 ulp otherwise; a
                # vector division would be a broadcast transcendental op.
                return self.scalar_op("ascend.muls", x, 1.0 / c)
            if ascend_name == "ascend.div" and not x_first:  # c / x
                inverse = self.unary("ascend.reciprocal", x)
                return inverse if c == 1.0 else self.scalar_op("ascend.muls", inverse, c)
        a_buf, b_buf = self.buffer(a, dtype), self.buffer(b, dtype)
        out = self._out(broadcast_shape(a_buf.shape, b_buf.shape), dtype)
        self.em.op(ascend_name, [a_buf, b_buf, out], self.loc)
        return out

    def unary(self, ascend_name: str, x: Buf) -> Buf:
        out = self._out(x.shape, x.dtype)
        self.em.op(ascend_name, [x, out], self.loc)
        return out

    def cast(self, x: Buf, dtype: str, mode: str) -> Buf:
        if x.dtype == dtype:
            return x
        out = self._out(x.shape, dtype)
        self.em.op("ascend.cast", [x, out], self.loc, round_mode=f'"{mode}"')
        return out

    def compare(self, op, a: Term, b: Term) -> Buf:
        dtype = (a if isinstance(a, Buf) else b).dtype
        if dtype == "i8":  # bools: compared as f16 (exact)
            dtype = "f16"
            a, b = (self.cast(t, dtype, "rint") if isinstance(t, Buf) else t for t in (a, b))
        a_buf, b_buf = self.buffer(a, dtype), self.buffer(b, dtype)
        out = self._out(broadcast_shape(a_buf.shape, b_buf.shape), "i8")
        self.em.op("ascend.cmp", [a_buf, b_buf, out], self.loc,
                   predicate=f'"{CMP[predicate_name(op)]}"')
        return out

    def logic(self, name: str, a: Term, b: Term) -> Term:
        """and / or / xor of bools (i8 0/1): the vector unit has no i8
        arithmetic, so both widen to f16 (exact), and min / max / compare
        give the result; a constant side folds (x and 1 = x, x xor 1 = not x)."""
        if is_scalar(a):
            a, b = b, a
        if is_scalar(b):
            b = bool(b)
            if name == "arith.andi":
                return a if b else False
            if name == "arith.ori":
                return True if b else a
            return self._cmp(self.cast(a, "f16", "rint"), 0.0, "eq" if b else "ne")
        wa, wb = self.cast(a, "f16", "rint"), self.cast(b, "f16", "rint")
        if name == "arith.xori":
            return self._cmp(wa, wb, "ne")
        out = self._out(broadcast_shape(wa.shape, wb.shape), "f16")
        self.em.op("ascend.min" if name == "arith.andi" else "ascend.max", [wa, wb, out], self.loc)
        return self.cast(out, "i8", "rint")

    def _cmp(self, a: Buf, b: Term, predicate: str) -> Buf:
        b_buf = self.buffer(b, a.dtype)
        out = self._out(broadcast_shape(a.shape, b_buf.shape), "i8")
        self.em.op("ascend.cmp", [a, b_buf, out], self.loc, predicate=f'"{predicate}"')
        return out

    def select(self, op, cond: Term, a: Term, b: Term) -> Term:
        clamp = self._clamp_pattern(op, a, b)
        if clamp is not None:
            return clamp
        if is_scalar(cond):
            return a if cond else b
        dtype = element_name(op.results[0])
        if dtype == "i1":  # a choice between bools: selected as f16 (exact), narrowed back
            a, b = (self.cast(t, "f16", "rint") if isinstance(t, Buf) else t for t in (a, b))
            a_buf, b_buf = self.buffer(a, "f16"), self.buffer(b, "f16")
            out = self._out(broadcast_shape(cond.shape, a_buf.shape, b_buf.shape), "f16")
            self.em.op("ascend.select", [cond, a_buf, b_buf, out], self.loc)
            return self.cast(out, "i8", "rint")
        a_buf, b_buf = self.buffer(a, dtype), self.buffer(b, dtype)
        out = self._out(broadcast_shape(cond.shape, a_buf.shape, b_buf.shape), dtype)
        self.em.op("ascend.select", [cond, a_buf, b_buf, out], self.loc)
        return out

    def _clamp_pattern(self, op, a: Term, b: Term) -> Term | None:
        """select(cmpf(x, y), x, y) and select(cmpf(x, y), y, x) are max / min
        of x and y (maxs / mins when one is a scalar): no compare needed."""
        cond_op = op.operands[0].owner
        cond_op = getattr(cond_op, "operation", cond_op)
        if getattr(cond_op, "name", "") != "arith.cmpf":
            return None
        x_val, y_val = cond_op.operands[0], cond_op.operands[1]
        kind = CMP[predicate_name(cond_op)]
        if op.operands[1] == x_val and op.operands[2] == y_val:
            x, y = a, b
        elif op.operands[1] == y_val and op.operands[2] == x_val:
            x, y = b, a  # picks y when x > y: the smaller one
            kind = {"gt": "lt", "ge": "le", "lt": "gt", "le": "ge"}.get(kind, kind)
        else:
            return None
        if kind not in ("gt", "ge", "lt", "le"):
            return None
        larger = kind in ("gt", "ge")
        if is_scalar(x) and is_scalar(y):
            return max(x, y) if larger else min(x, y)
        if isinstance(x, Buf) and isinstance(y, Buf):
            out = self._out(broadcast_shape(x.shape, y.shape), x.dtype)
            self.em.op("ascend.max" if larger else "ascend.min", [x, y, out], self.loc)
            return out
        buf, c = (x, y) if isinstance(x, Buf) else (y, x)
        return self.scalar_op("ascend.maxs" if larger else "ascend.mins", buf, float(c))

    def power(self, op, x: Term, e: Term) -> Buf:
        if not is_scalar(e) or float(e) != int(float(e)) or abs(int(float(e))) > 64:
            if is_scalar(e) and float(e) == 0.5:
                return self.unary("ascend.sqrt", x)
            raise UnsupportedOp(op, "power with a non-integer or non-constant exponent")
        n = int(float(e))
        if n == 0:
            return self.scalar_op("ascend.adds", self.scalar_op("ascend.muls", x, 0.0), 1.0)
        result, base, k = None, x, abs(n)
        while k:
            if k & 1:
                result = base if result is None else self._mul(result, base)
            k >>= 1
            if k:
                base = self._mul(base, base)
        return self.unary("ascend.reciprocal", result) if n < 0 else result

    def _mul(self, a: Buf, b: Buf) -> Buf:
        out = self._out(broadcast_shape(a.shape, b.shape), a.dtype)
        self.em.op("ascend.mul", [a, b, out], self.loc)
        return out
