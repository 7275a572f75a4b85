"""Constant scalings of a product, gathered and put in one place.

An exporter may scale a product `x * g` before it (`(x*0.5)*g`), after it
(`(x*g)*0.5`) or on one factor (`x*(0.5*g)`): the same computation, but the
fused-kernel recipes (the GELU chain, `npu.costmodel.fusion.gelu`) match one
spelling. Here every `ascend.mul` of two equally shaped float tensors
gathers the `ascend.muls` factors of its operands and of its result (each a
temporary read only by the next step) into one factor c, then places it:

* on an operand made by an `ascend.adds` (read only by the mul): the gate
  of GELU, `x * ((1+erf(..)) * c)`, where the recipe expects it;
* else on the result, `(x * g) * c` (the cube of the tanh GELU: `x*x*x*c`).

Consecutive scalings `(x*a)*b` fold into `x*(a*b)` when a*b is a normal
number of the element type, and a factor of exactly 1 disappears.

Rounding accepted: the product and its factor are each rounded once in the
element type either way, but in another order (and a*b once instead of two
roundings): results may differ by one or two ulps of the element type
(f32: ~1e-7 relative; f16: ~1e-3), never by more; scaling by a power of two
is exact and unchanged. No rewrite crosses a broadcast or an integer op.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.passes.canonicalize import buffers as buf

FLOATS = ("f16", "f32")


def factor_ok(elem: str, c: float) -> bool:
    """`c` is a usable scalar of type `elem`: finite, normal (or 1)."""
    info = np.finfo(np.float16 if elem == "f16" else np.float32)
    return c == 1.0 or (np.isfinite(c) and float(info.tiny) <= abs(c) <= float(info.max))


def fold_scalings(func: ir.Operation) -> list[ir.Operation]:
    """muls(muls(x, a), b) -> muls(x, a*b); returns the ops changed."""
    changed = []
    for op in _ops(func, "ascend.muls"):
        if nir.memref_element(op.operands[-1]) not in FLOATS:
            continue
        inner = buf.producer(op.operands[0], "ascend.muls", op)
        if inner is None or nir.memref_shape(inner.operands[0]) != nir.memref_shape(op.operands[0]) \
                or not buf.still_holds(inner.operands[0], inner, op):
            continue
        c = nir.float_attr(inner, "scalar") * nir.float_attr(op, "scalar")
        if not factor_ok(nir.memref_element(op.operands[-1]), c):
            continue
        dead = op.operands[0]
        op.operands[0] = inner.operands[0]
        with op.context, op.location:
            op.attributes["scalar"] = nir.f64_attr(c)
        inner.erase()
        buf.erase_if_dead(dead)
        changed.append(op)
    return changed


def place_scalings(func: ir.Operation) -> list[ir.Operation]:
    """Gather each mul's scalar factors and put them in their one place
    (the module docstring); returns the muls changed."""
    changed = []
    for op in _ops(func, "ascend.mul"):
        if _place(op):
            changed.append(op)
    return changed


def _ops(func: ir.Operation, name: str) -> list[ir.Operation]:
    return [o.operation for o in func.regions[0].blocks[0].operations if o.operation.name == name]


def _place(mul: ir.Operation) -> bool:
    a, b, out = mul.operands
    shape, elem = nir.memref_shape(out), nir.memref_element(out)
    if (elem not in FLOATS or nir.memref_shape(a) != shape or nir.memref_shape(b) != shape
            or nir.view_root(a) == nir.view_root(b)):
        return False
    factors: dict[str, ir.Operation] = {}  # where -> the muls supplying it
    for i in (0, 1):
        m = buf.producer(mul.operands[i], "ascend.muls", mul)
        if (m is not None and nir.memref_shape(m.operands[0]) == shape
                and buf.still_holds(m.operands[0], m, mul)):  # the mul will read it
            factors[f"in{i}"] = m
    after = buf.consumer(out, "ascend.muls", mul)
    if (after is not None and nir.memref_shape(after.operands[-1]) == shape
            and _hoistable(after.operands[-1])  # the mul will write it
            and buf.untouched_between(after.operands[-1], mul, after)):
        factors["out"] = after
    if not factors:
        return False
    c = float(np.prod([nir.float_attr(m, "scalar") for m in factors.values()]))
    if not factor_ok(elem, c):
        return False
    sources = [factors[f"in{i}"].operands[0] if f"in{i}" in factors else mul.operands[i]
               for i in (0, 1)]
    gates = [i for i in (0, 1) if _is_gate(sources[i], factors.get(f"in{i}") or mul)]
    target = f"in{gates[0]}" if gates else "out"
    if list(factors) == [target]:
        return False  # already where it belongs
    _rewrite(mul, factors, sources, target, c)
    return True


def _hoistable(value: ir.Value) -> bool:
    """`value` is an argument, or made by allocs and views alone (which
    `nir.hoist_definition` can move above an earlier writer)."""
    op = nir.defining_op(value)
    while op is not None and op.name in nir.VIEW_OPS:
        op = nir.defining_op(op.operands[0])
    return op is None or op.name == "memref.alloc"


def _is_gate(value: ir.Value, reader: ir.Operation) -> bool:
    """`value` is made by an adds for `reader` alone."""
    return buf.producer(value, "ascend.adds", reader) is not None


def _rewrite(mul: ir.Operation, factors: dict[str, ir.Operation], sources: list[ir.Value],
             target: str, c: float) -> None:
    dead = []
    for i in (0, 1):
        m = factors.get(f"in{i}")
        if m is not None:
            dead.append(mul.operands[i])
            mul.operands[i] = sources[i]
            m.erase()
    after = factors.get("out")
    if after is not None:
        dead.append(mul.operands[-1])
        final = after.operands[-1]
        nir.hoist_definition(final, mul)
        mul.operands[2] = final
        after.erase()
    for value in dead:
        buf.erase_if_dead(value)
    if c == 1.0:
        return
    if target == "out":
        final = mul.operands[-1]
        temp = buf.fresh_like(final, mul)
        mul.operands[2] = temp
        buf.scalar_op("ascend.muls", temp, final, c, mul, after=True)
    else:
        i = int(target[-1])
        temp = buf.fresh_like(sources[i], mul)
        buf.scalar_op("ascend.muls", sources[i], temp, c, mul)
        mul.operands[i] = temp

