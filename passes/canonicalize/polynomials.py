"""The tanh GELU's cubic written factored, expanded.

GELU's tanh form is `0.5*x*(1 + tanh(c*(x + k*x^3)))` (GPT-2's gelu_new,
torch's gelu(approximate="tanh")); HF's gelu_fast (FastGELUActivation)
writes the argument factored, `c*x*(1 + k*x*x)`. The tanh recipe
(`npu.costmodel.fusion.gelu`) matches the expanded cubic. After
`scalings` gathered c onto the gate, the factored form is

    s = mul(x, x); p = muls(s, k); g = adds(p, 1); [g' = muls(g, c)]; y = mul(x, g')

and becomes `y = muls(add(x, muls(mul(x, s), k)), c)`: the same number of
vector ops. Only a gate `1 + k*x*x` of the mul's own other operand x is
expanded (an erf gate `1 + erf(..)` is not a polynomial in x).

Rounding accepted: x + k*x^3 and x*(1 + k*x^2) round differently, by a few
ulps of the element type (f32: ~1e-7 relative, far inside the recipe's own
approximation error).
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.passes.canonicalize import buffers as buf


def expand_cubics(func: ir.Operation) -> list[ir.Operation]:
    """Returns the adds that now hold each expanded cubic."""
    changed = []
    for op in [o.operation for o in func.regions[0].blocks[0].operations]:
        if op.name != "ascend.mul" or nir.memref_element(op.operands[-1]) not in ("f16", "f32"):
            continue
        for i in (0, 1):
            found = _factored(op, i)
            if found is not None:
                changed.append(_expand(op, i, *found))
                break
    return changed


def _factored(mul: ir.Operation, i: int):
    """(the gate's muls by c or None, the adds, the muls by k, the square)
    when operand `i` of `mul` is (1 + k*x*x)*c with x its other operand."""
    x, gate = mul.operands[1 - i], mul.operands[i]
    shape = nir.memref_shape(mul.operands[-1])
    if nir.memref_shape(x) != shape or nir.memref_shape(gate) != shape:
        return None
    scale = buf.producer(gate, "ascend.muls", mul)
    one = buf.producer(scale.operands[0], "ascend.adds", scale) if scale is not None \
        else buf.producer(gate, "ascend.adds", mul)
    if one is None or nir.float_attr(one, "scalar") != 1.0:
        return None
    k = buf.producer(one.operands[0], "ascend.muls", one)
    square = k and buf.producer(k.operands[0], "ascend.mul", k)
    if square is None or any(nir.view_root(v) != nir.view_root(x) for v in square.operands[:2]):
        return None
    if not buf.still_holds(x, square, mul):
        return None
    return scale, one, k, square


def _expand(mul, i, scale, one, k, square) -> ir.Operation:
    x, out = mul.operands[1 - i], mul.operands[-1]
    s = square.operands[-1]
    c = nir.float_attr(scale, "scalar") if scale is not None else 1.0
    kk = nir.float_attr(k, "scalar")
    with mul.context, mul.location:
        cube = buf.fresh_like(s, mul)
        with ir.InsertionPoint(mul):
            nir.create_op("ascend.mul", [x, s, cube])
        scaled = buf.fresh_like(s, mul)
        buf.scalar_op("ascend.muls", cube, scaled, kk, mul)
        total = buf.fresh_like(out, mul) if c != 1.0 else out
        with ir.InsertionPoint(mul):
            added = nir.create_op("ascend.add", [x, scaled, total])
        if c != 1.0:
            buf.scalar_op("ascend.muls", total, out, c, mul)
    dead = [v for v in (k.operands[-1], one.operands[-1], mul.operands[i])]
    for op in (mul, scale, one, k):
        if op is not None:
            op.erase()
    for value in dead:
        buf.erase_if_dead(value)
    return added
