"""Data of a type the NPU does not hold, held in one that has every value.

The vector unit computes f32, f16, i32 and i8. The narrow ONNX types are
held in the smallest of those that holds each of their values exactly:

* INT4, UINT4, INT2, UINT2 -> i8 (-8..15);
* FLOAT8E4M3FN/FNUZ, FLOAT8E5M2/FNUZ, FLOAT4E2M1 -> f16: their largest
  magnitudes (448, 57344, 6) are below f16's 65504, their significands (at
  most 4 bits) within its 11, their smallest subnormals (2^-9, 2^-16, 2^-17,
  0.5) multiples of f16's 2^-24; E5M2's infinities and every NaN (FNUZ's is
  the -0 code, so FNUZ never yields -0) are f16's;
* BFLOAT16 -> f32 (its top 16 bits); FLOAT8E8M0 -> f32: 2^-127..2^127 (the
  smallest an f32 subnormal) and NaN.

Graph inputs and outputs keep the model's type outside (`npu.host_type`,
`host_types`): inputs are widened on the host, outputs narrowed, an error
naming the element if one is not exactly a value of the type. Inside, such a
value must come from a graph input, a constant (widened here), ops that only
move values, or a Cast whose result the device computes exactly in the wide
type (`onnx_cast_narrow`); arithmetic in the narrow type is refused, naming
the node (computed in the wide type it would not wrap or round as ONNX's).

DOUBLE is held as f32 only where that is exact: a Cast to double of data f32
holds (float, float16, the 8/16-bit integers, bool, the narrow types), and a
double graph input whose every use is a Cast to float (or every use a Cast
to float16): the host rounds it to that type (numpy's round-to-nearest-even,
ONNX's Cast itself) and the Casts become no-ops. Any other double is
refused: f32 would silently lose its precision.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from npu.frontend.onnx_cast_narrow import IN_F32  # a Cast from them to double is exact

FLOAT, INT8, INT32, FLOAT16, DOUBLE = 1, 3, 6, 10, 11
# ONNX type -> (the type that holds it, its numpy name outside).
WIDE: dict[int, tuple[int, str]] = {
    22: (INT8, "int4"), 21: (INT8, "uint4"), 26: (INT8, "int2"), 25: (INT8, "uint2"),
    17: (FLOAT16, "float8_e4m3fn"), 18: (FLOAT16, "float8_e4m3fnuz"),
    19: (FLOAT16, "float8_e5m2"), 20: (FLOAT16, "float8_e5m2fnuz"),
    23: (FLOAT16, "float4_e2m1fn"), 16: (FLOAT, "bfloat16"), 24: (FLOAT, "float8_e8m0fnu"),
    DOUBLE: (FLOAT, "float64"),
}
# Ops whose outputs are values of their data inputs (input positions).
MOVES: dict[str, tuple[int, ...] | None] = {
    "Identity": (0,), "Reshape": (0,), "Flatten": (0,), "Squeeze": (0,), "Unsqueeze": (0,),
    "Transpose": (0,), "Expand": (0,), "Slice": (0,), "Gather": (0,), "GatherElements": (0,),
    "GatherND": (0,), "Split": (0,), "Concat": None, "Where": (1, 2), "Tile": (0,),
}


def widen_types(model, fail: Callable[[str], Exception], types: dict | None = None) -> dict[str, str]:
    """Rewrite (in place) `model`'s values of the `WIDE` types into the types
    that hold them; returns the graph inputs and outputs rewritten, with
    their numpy type outside. `fail(message)` makes the located error;
    `types` (`onnx_fold.inferred_types`, from before the other rewrites)
    only tells whether there is anything to do."""
    from npu.frontend.onnx_fold import inferred_types

    if types is not None and not set(WIDE) & {t[1] for t in types.values()}:
        return {}  # no new inference: the common case
    types = inferred_types(model)  # the rewrites since `types` added values
    if types is None:
        return {}
    elem = {name: t[1] for name, t in types.items()}
    if not set(WIDE) & set(elem.values()):
        return {}
    from npu.frontend import onnx_cast_narrow

    graph = model.graph
    rounded = _rounded_double_inputs(graph, elem)
    nodes: list = []
    from npu.frontend.onnx_expansion import Expansion

    for node in graph.node:
        wide_outputs = [o for o in node.output if elem.get(o) in WIDE]
        if node.op_type == "Cast" and wide_outputs:
            src, to = elem.get(node.input[0]), _attr(node, "to")
            if src == to or (to == DOUBLE and src in IN_F32):
                _set_attr(node, "to", WIDE[to][0] if src == to else FLOAT)
            elif onnx_cast_narrow.expand_cast(node, src, to, Expansion(graph, node, nodes)):
                continue
            else:
                raise fail(f"node '{node.name}' (Cast): a cast from {_name(src)} to {_name(to)} is "
                           f"not computed ({onnx_cast_narrow.why_not(src, to)})")
        elif node.op_type == "Constant" and wide_outputs:
            _widen_tensor(next(a for a in node.attribute if a.name == "value").t, fail)
        elif node.op_type == "ConstantOfShape" and wide_outputs:
            value = next((a for a in node.attribute if a.name == "value"), None)
            if value is not None:
                _widen_tensor(value.t, fail)
        elif wide_outputs and not _moves_values(node, elem):
            kind = _name(elem[wide_outputs[0]])
            raise fail(f"node '{node.name}' ({node.op_type}): {kind} data is not computed ({_why(kind)})")
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    for tensor in graph.initializer:
        if tensor.data_type in WIDE:
            _widen_tensor(tensor, fail)
    host: dict[str, str] = {}
    initialized = {t.name for t in graph.initializer}
    for value in list(graph.input) + list(graph.output):
        tt = value.type.tensor_type
        if value.name in initialized or tt.elem_type not in WIDE:
            continue
        if tt.elem_type == DOUBLE and value in graph.input:
            if value.name not in rounded:
                raise fail(f"input '{value.name}': DOUBLE data is not computed ({_why('DOUBLE')}; "
                           "a double input is taken only when its every use is a Cast to float, "
                           "or every use a Cast to float16)")
            tt.elem_type = rounded[value.name]
        else:
            tt.elem_type = WIDE[tt.elem_type][0]
        host[value.name] = WIDE[elem[value.name]][1]
    del graph.value_info[:]  # re-inferred with the new types
    return host


def _rounded_double_inputs(graph, elem: dict) -> dict[str, int]:
    """Double graph inputs whose every use is a Cast to one of float and
    float16 -> that type."""
    out = {}
    for value in graph.input:
        if elem.get(value.name) != DOUBLE:
            continue
        uses = [n for n in graph.node if value.name in n.input]
        targets = {_attr(n, "to") if n.op_type == "Cast" else None for n in uses}
        if uses and len(targets) == 1 and targets <= {FLOAT, FLOAT16}:
            out[value.name] = targets.pop()
    return out


def _moves_values(node, elem: dict) -> bool:
    """Whether `node` only moves values of its data inputs (all of the
    output's type), so that they stay exact in the wide type."""
    if node.op_type not in MOVES:
        return False
    positions = MOVES[node.op_type]
    data = node.input if positions is None else [node.input[k] for k in positions if k < len(node.input)]
    outs = {elem.get(o) for o in node.output}
    return len(outs) == 1 and all(elem.get(x) in outs for x in data if x)


def _widen_tensor(tensor, fail) -> None:
    """A constant of a `WIDE` type, as its wide type (every value exact; a
    double constant rounded to f32 must not change)."""
    from onnx import helper, numpy_helper

    wide, _ = WIDE[tensor.data_type]
    data = numpy_helper.to_array(tensor)
    target = helper.tensor_dtype_to_np_dtype(wide)
    converted = data.astype(target)
    if tensor.data_type == DOUBLE and not np.array_equal(converted.astype(data.dtype), data, equal_nan=True):
        raise fail(f"constant '{tensor.name}': DOUBLE data is not computed ({_why('DOUBLE')}; "
                   "its values are not all f32's)")
    tensor.CopyFrom(numpy_helper.from_array(converted, tensor.name))


def _why(kind: str) -> str:
    if kind == "DOUBLE":
        return "f64 has no NPU type: refused, not computed in f32"
    return (f"the NPU holds {kind} in a wider type, where arithmetic would not round or wrap "
            f"as {kind}'s")


def _name(elem: int | None) -> str:
    import onnx

    return onnx.TensorProto.DataType.Name(elem) if elem is not None else "an unknown type"


def _attr(node, name: str):
    return next((a.i for a in node.attribute if a.name == name), None)


def _set_attr(node, name: str, value: int) -> None:
    next(a for a in node.attribute if a.name == name).i = value
