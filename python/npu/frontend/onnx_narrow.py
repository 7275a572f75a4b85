"""Integer data the NPU does not hold (int64, int16, unsigned) runs as i32.

Exporters type token ids, attention masks and their arithmetic as int64.
Their values are small, so the graph's integer *data* of those types is
rewritten to int32 before import: such inputs and outputs become int32 (the
compiled kernel checks and narrows the caller's arrays, and converts its
outputs back, a range error where the model's own type would have wrapped:
`compile.Port.host_type`), `Cast` to one of them casts to INT32, and their
constants that feed data become int32 copies, a located error if a value
does not fit. Inputs that ONNX defines as int64 only (shapes, axes, `Slice`
bounds, GatherND's indices) keep their int64 constants: they are attributes
in all but name, and the folder has made them constants.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

INT32 = 6
# ONNX element type -> numpy name, of the integer types held as i32.
NARROWED = {7: "int64", 5: "int16", 2: "uint8", 4: "uint16", 12: "uint32", 13: "uint64"}
I32 = np.iinfo(np.int32)

# op type -> the input positions ONNX types as int64 only.
INT64_ONLY_INPUTS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,), "Expand": (1,), "Unsqueeze": (1,), "Squeeze": (1,), "Slice": (1, 2, 3, 4),
    "Tile": (1,), "ConstantOfShape": (0,), "Split": (1,), "Pad": (1,), "TopK": (1,),
    "GatherND": (1,), "Trilu": (1,), "CumSum": (1,), "OneHot": (1,), "Resize": (3,),
    **{op: (1,) for op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                           "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum",
                           "ReduceLogSumExp")},
}


def narrow_integers(model, fail: Callable[[str], Exception]) -> dict[str, str]:
    """Rewrite `model`'s `NARROWED` integer data as int32 in place; returns
    the graph inputs and outputs that were of those types, with their numpy
    type (the caller's arrays keep it). `fail(message)` makes the located
    error to raise."""
    from onnx import numpy_helper

    from npu.frontend.onnx_skeleton import infer_shapes

    graph = model.graph
    try:
        inferred = infer_shapes(model, strict_mode=True)
    except Exception:  # the model's own error: `check_model` names its node
        return {}
    _constant_nodes_to_initializers(graph)
    types = {v.name: v.type.tensor_type.elem_type
             for v in list(inferred.graph.value_info) + list(graph.input) + list(graph.output)}
    types.update({t.name: t.data_type for t in graph.initializer})
    if not set(NARROWED) & set(types.values()):
        return {}
    initializers = {t.name: t for t in graph.initializer}
    twins: dict[str, str] = {}
    for node in graph.node:
        keep = INT64_ONLY_INPUTS.get(node.op_type, ())
        for k, name in enumerate(node.input):
            if k in keep or types.get(name) not in NARROWED or name not in initializers:
                continue
            if name not in twins:
                data = numpy_helper.to_array(initializers[name])
                if data.size and (data.min() < I32.min or data.max() > I32.max):
                    bad = data.reshape(-1)[np.argmax((data < I32.min) | (data > I32.max))]
                    raise fail(f"node '{node.name}' ({node.op_type}): {NARROWED[types[name]]} constant "
                               f"'{name}' holds {bad}, which does not fit i32 (integer data runs "
                               "as i32 on the NPU)")
                twins[name] = f"{name}__i32"
                graph.initializer.append(numpy_helper.from_array(data.astype(np.int32), twins[name]))
            node.input[k] = twins[name]
        if node.op_type == "Cast" and _attr(node, "to") in NARROWED:
            next(a for a in node.attribute if a.name == "to").i = INT32
        if node.op_type == "ConstantOfShape":
            value = next((a for a in node.attribute if a.name == "value"), None)
            if value is not None and value.t.data_type in NARROWED:
                value.t.CopyFrom(numpy_helper.from_array(
                    numpy_helper.to_array(value.t).astype(np.int32), value.t.name))
    host_types = {}
    for value in list(graph.input) + list(graph.output):
        elem = value.type.tensor_type.elem_type
        if value.name not in initializers and elem in NARROWED:
            value.type.tensor_type.elem_type = INT32
            host_types[value.name] = NARROWED[elem]
    _narrow_constant_outputs(graph, host_types, fail)
    _drop_unused_initializers(graph, set(twins))
    del graph.value_info[:]  # re-inferred with the new types
    try:
        infer_shapes(model, strict_mode=True, data_prop=False)
    except Exception as e:  # an op whose int64 input cannot be int32
        raise fail("integer values cannot run as i32 here: "
                   f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    return host_types


def _attr(node, name: str):
    for a in node.attribute:
        if a.name == name:
            return a.i
    return None


def _narrow_constant_outputs(graph, host_types: dict[str, str], fail) -> None:
    """A graph output the folder computed (a Constant node: Shape of a
    static tensor) is narrowed with the outputs."""
    from onnx import numpy_helper

    for node in graph.node:
        if node.op_type == "Constant" and node.output[0] in host_types:
            value = next(a for a in node.attribute if a.name == "value")
            data = numpy_helper.to_array(value.t)
            if data.size and (data.min() < I32.min or data.max() > I32.max):
                raise fail(f"node '{node.name}' (Constant): a value does not fit i32")
            value.t.CopyFrom(numpy_helper.from_array(data.astype(np.int32), value.t.name))


def _constant_nodes_to_initializers(graph) -> None:
    """Constant nodes holding a tensor become initializers, so that one rule
    (a twin int32 initializer) covers both kinds of constants."""
    keep = []
    outputs = {v.name for v in graph.output}
    for node in graph.node:
        value = next((a for a in node.attribute if a.name == "value"), None)
        if node.op_type == "Constant" and value is not None and node.output[0] not in outputs:
            tensor = graph.initializer.add()
            tensor.CopyFrom(value.t)
            tensor.name = node.output[0]
        else:
            keep.append(node)
    del graph.node[:]
    graph.node.extend(keep)


def _drop_unused_initializers(graph, candidates: set[str]) -> None:
    """The int64 originals that only their int32 twins use now."""
    used = {name for node in graph.node for name in node.input} | {v.name for v in graph.output}
    used |= {v.name for v in graph.input}
    # In place: rebuilding the list would copy every weight into the arena.
    for i in reversed(range(len(graph.initializer))):
        name = graph.initializer[i].name
        if name in candidates and name not in used:
            del graph.initializer[i]
