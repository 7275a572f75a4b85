"""GELU chains in a group of row ops, as one vector recipe.

The frontend lowers ONNX/torch GELU to the ops of its formula:
  erf form   v = muls(x, s); erf; adds 1; muls 0.5; y = mul(x, v)
  tanh form  x2 = mul(x, x); x3 = mul(x, x2); muls c; add x; muls s; tanh;
             adds 1; muls 0.5; y = mul(x, v)
(either operand order of the binary ops). `collapse` replaces each such
chain whose intermediate tensors are used only by the next op of the chain
(and never leave the group) by one member computing y from x with
`recipes.gelu_compute`: 18 vector cycles per repeat instead of 26
(erf form, multiply-adds included), 13 instead of 20 (tanh form). Used by `npu-lower-fused`; the
matmul epilogues can call it on their chains too.
"""

from __future__ import annotations

from collections import Counter

from npu import ir as nir
from npu.costmodel.fusion.rows import RowOp
from npu.costmodel.vector.recipes import (gelu_compute, gelu_erf_recipe, gelu_erf_recipe_f16,
                                          gelu_tanh_recipe, gelu_tanh_recipe_f16)


def collapse(members: list[RowOp], leaving: set, in_f16: bool = False) -> list[RowOp]:
    """`members` with each GELU chain replaced by one member (at the chain's
    last op, reading the chain's input). `in_f16`: a chain on f16 data runs
    in f16 (`gelu_erf_recipe_f16`, `gelu_tanh_recipe_f16`), not widened to f32: for
    epilogues whose policy allows it (`npu.costmodel.fusion.precision.f16_refusal`)."""
    producer = {m.out.root: m for m in members}
    uses = Counter(i.root for m in members for i in m.ins)
    replaced: dict = {}  # op -> RowOp replacing it (None: dropped)

    def inner(root, name: str, scalar: float | None = None) -> RowOp | None:
        """The producer of `root` if it is `name` (with that scalar) and
        `root` is used once, inside the group, by a chain op."""
        m = producer.get(root)
        if (m is None or m.op.name != name or root in leaving or uses[root] != 1
                or m.op in replaced or m.out.kind != "full"):
            return None
        if scalar is not None and nir.float_attr(m.op, "scalar") != scalar:
            return None
        return m

    for m in members:
        if m.op.name != "ascend.mul" or m.out.kind != "full" or m.op in replaced:
            continue
        for x, v in ((m.ins[0], m.ins[1]), (m.ins[1], m.ins[0])):
            native = in_f16 and x.elem == "f16"
            found = _erf_chain(x, v, inner, native) or _tanh_chain(x, v, inner, native)
            if (x.kind == "full" and x.elem == m.out.elem and found is not None
                    and all(c.out.elem == x.elem for c in found[0])):
                chain, steps, native = found
                for c in chain:
                    replaced[c.op] = None
                replaced[m.op] = RowOp(m.op, m.index, m.rows, m.n, [x], m.out,
                                       gelu_compute(steps, m.out.elem, native))
                break
    return [replaced.get(m.op, m) for m in members if replaced.get(m.op, m) is not None]


def _erf_chain(x, v, inner, native_f16: bool = False):
    half = inner(v.root, "ascend.muls", 0.5)
    one = half and inner(half.ins[0].root, "ascend.adds", 1.0)
    erf = one and inner(one.ins[0].root, "ascend.erf")
    scaled = erf and inner(erf.ins[0].root, "ascend.muls")
    if not scaled or scaled.ins[0].root != x.root:
        return None
    scale = nir.float_attr(scaled.op, "scalar")
    if not scale > 0:
        return None
    if native_f16:
        return [half, one, erf, scaled], gelu_erf_recipe_f16(scale), True
    return [half, one, erf, scaled], gelu_erf_recipe(scale), False


def _tanh_chain(x, v, inner, native_f16: bool = False):
    half = inner(v.root, "ascend.muls", 0.5)
    one = half and inner(half.ins[0].root, "ascend.adds", 1.0)
    tanh = one and inner(one.ins[0].root, "ascend.tanh")
    scaled = tanh and inner(tanh.ins[0].root, "ascend.muls")
    inner_sum = scaled and inner(scaled.ins[0].root, "ascend.add")
    if not inner_sum:
        return None
    roots = [i.root for i in inner_sum.ins]
    if x.root not in roots:
        return None
    cubed_scaled = inner(roots[1 - roots.index(x.root)], "ascend.muls")
    cube = cubed_scaled and inner(cubed_scaled.ins[0].root, "ascend.mul")
    if not cube:
        return None
    roots = [i.root for i in cube.ins]
    if x.root not in roots:
        return None
    square = inner(roots[1 - roots.index(x.root)], "ascend.mul")
    if not square or any(i.root != x.root for i in square.ins):
        return None
    chain = [half, one, tanh, scaled, inner_sum, cubed_scaled, cube, square]
    recipe = gelu_tanh_recipe_f16 if native_f16 else gelu_tanh_recipe
    return chain, recipe(nir.float_attr(cubed_scaled.op, "scalar"),
                         nir.float_attr(scaled.op, "scalar")), native_f16
