"""`CumSum` along a constant axis of a static tensor, written as shifted adds
before torch-mlir (which has no lowering of it the NPU runs).

RoBERTa, XLM-R and MPNet number their positions by a running count of the
tokens that are not padding: `CumSum(Cast(Not(Equal(ids, pad))), axis=1)`.
The scan is log2(n) steps of `y += y shifted by k` (k = 1, 2, 4, ...): each
step a Slice of the first n - k elements after k zeros (Concat), an Add; a
reverse scan shifts the other way, an exclusive one shifts its inclusive
result once more by 1. Every element is the sum of the same elements as
onnxruntime's, exact for integers (no overflow past the type's own) and
in another order for floats.
"""

from __future__ import annotations

import numpy as np

_DTYPES = {1: np.float32, 10: np.float16, 6: np.int32, 7: np.int64}


def expand_cumsums(model, types: dict | None = None) -> list[str]:
    """Rewrite (in place) every CumSum with a constant axis, a static input
    and a type in `_DTYPES`; the names rewritten (others stay, refused as
    unsupported by name)."""
    if not any(n.op_type == "CumSum" for n in model.graph.node):
        return []
    from onnx import helper, numpy_helper

    from npu.frontend.onnx_expansion import rewrite_nodes

    inits = {t.name: t for t in model.graph.initializer}
    constants = {n.output[0]: n for n in model.graph.node if n.op_type == "Constant"}

    def axis_of(name: str) -> int | None:
        if name in inits:
            value = numpy_helper.to_array(inits[name])
        elif name in constants and constants[name].attribute and constants[name].attribute[0].name == "value":
            value = numpy_helper.to_array(constants[name].attribute[0].t)
        else:
            return None
        return int(value.reshape(-1)[0]) if value.size == 1 else None

    def expand(node, types: dict, expansion) -> bool:
        if node.op_type != "CumSum" or len(node.input) != 2:
            return False
        dims, elem = types.get(node.input[0], (None, 0))
        axis = axis_of(node.input[1])
        if (dims is None or not dims or elem not in _DTYPES or axis is None
                or not all(isinstance(d, int) and d > 0 for d in dims) or not -len(dims) <= axis < len(dims)):
            return False
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        reverse, exclusive = bool(attrs.get("reverse", 0)), bool(attrs.get("exclusive", 0))
        axis %= len(dims)
        n = dims[axis]
        ex = expansion()

        def const(tag: str, value, dtype=np.int64) -> str:
            return ex.const(tag, value, dtype)

        def shifted(value: str, k: int, tag: str) -> str:
            """`value` moved k along the axis (toward the scan's end), zeros in."""
            pad = list(dims)
            pad[axis] = k
            zeros = const(f"{tag}_zeros", np.zeros(pad), _DTYPES[elem])
            start, end = (0, n - k) if not reverse else (k, n)
            part = ex.make("Slice", [value, const(f"{tag}_start", [start]), const(f"{tag}_end", [end]),
                                     const(f"{tag}_axis", [axis])], f"{tag}_part")
            order = [zeros, part] if not reverse else [part, zeros]
            return ex.make("Concat", order, f"{tag}_moved", axis=axis)

        steps = []
        k = 1
        while k < n:
            steps.append(k)
            k *= 2
        value = node.input[0]
        if not steps and not exclusive:
            ex.final("Identity", [value], "same")
            return True
        for i, k in enumerate(steps):
            last = i == len(steps) - 1 and not exclusive
            value = (ex.final if last else ex.make)("Add", [value, shifted(value, k, f"step{k}")], f"sum{k}")
        if exclusive:
            if n == 1:
                ex.final("Mul", [value, const("zero", 0, _DTYPES[elem])], "exclusive")
            else:
                ex.final("Identity", [shifted(value, 1, "excl")], "exclusive")
        return True

    return rewrite_nodes(model, types, expand)
