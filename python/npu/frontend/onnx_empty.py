"""Zero-size tensors: values known on the host, never device work.

A tensor with a zero-size dimension holds nothing, so a node whose outputs
are all empty has nothing to compute: its results are known (empty arrays of
their inferred shapes). A reduction whose input is empty along a reduced
axis, with a non-empty result, gives the reduction's identity everywhere (the
sum of no elements is 0; ONNX defines the max of none as the type's lowest
value, -inf for floats). Such nodes are taken out of the graph here; graph
outputs they produce are returned by the host (`EmptyPlan`), and graph inputs
that are empty are taken by the kernel but not passed to the device. What
is left for the device is compiled as usual; when nothing is left there is
no device program at all.

A Concat drops its empty pieces. Another node that reads an empty value
but has a non-empty result we cannot derive here is left as it was, and
the checks that follow refuse it with the zero-size reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Reductions whose result over no elements is a constant: op -> identity
# for (float, integer, bool) results. ReduceMean (0/0) and ReduceProd are not
# here: the first has no value and the second is not a claimed op.
_IDENTITY = {
    "ReduceSum": lambda dt: np.zeros((), dt),
    "ReduceSumSquare": lambda dt: np.zeros((), dt),
    "ReduceL1": lambda dt: np.zeros((), dt),
    "ReduceL2": lambda dt: np.zeros((), dt),
    "ReduceMax": lambda dt: np.array(_lowest(dt), dt),
    "ReduceMin": lambda dt: np.array(_highest(dt), dt),
}


def _lowest(dt: np.dtype):
    if dt == np.bool_:
        return False
    return -np.inf if np.issubdtype(dt, np.floating) else np.iinfo(dt).min


def _highest(dt: np.dtype):
    if dt == np.bool_:
        return True
    return np.inf if np.issubdtype(dt, np.floating) else np.iinfo(dt).max


@dataclass
class EmptyPlan:
    """The model's interface as the caller sees it, and which parts the host
    provides: `inputs` (name, shape, numpy dtype) in order, those not passed
    to the device in `host_inputs`; `outputs` names in order, the host's
    values in `host_outputs`."""
    inputs: list[tuple[str, tuple[int, ...], np.dtype]]
    outputs: list[str]
    host_inputs: set[str] = field(default_factory=set)
    host_outputs: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def device_outputs(self) -> list[str]:
        return [n for n in self.outputs if n not in self.host_outputs]


def _np_dtype(elem: int) -> np.dtype:
    from onnx import helper

    return np.dtype(helper.tensor_dtype_to_np_dtype(elem))


def _is_empty(dims) -> bool:
    return dims is not None and 0 in dims


def take_empty_values(model, types: dict | None = None) -> EmptyPlan | None:
    """Take the nodes with host-known results out of `model` (in place);
    None (the model untouched) when no value of the model is empty.
    `types`: `onnx_fold.inferred_types(model)` if already known."""
    from onnx import numpy_helper

    from npu.frontend.onnx_fold import inferred_types, remove_dead_nodes, replace_nodes

    types = inferred_types(model) if types is None else types
    if types is None or not any(_is_empty(d) for d, _ in types.values()):
        return None
    if drop_empty_concat_pieces(model, types):
        remove_dead_nodes(model)
    graph = model.graph
    initialized = {t.name for t in graph.initializer}
    if any(types.get(v.name, (None, 0))[0] is None for v in graph.input if v.name not in initialized):
        return None  # a dynamic input: the checks name it
    plan = EmptyPlan([(v.name, tuple(types[v.name][0] or ()), _np_dtype(types[v.name][1]))
                      for v in graph.input if v.name not in initialized],
                     [o.name for o in graph.output])
    known: dict[str, np.ndarray] = {}
    kept = []
    for node in graph.node:
        results = _host_results(node, types, known)
        if results is None:
            kept.append(node)
        else:
            known.update(results)
    for name in plan.outputs:
        if name not in known and _is_empty(types.get(name, (None, 0))[0]):
            dims, elem = types[name]
            known[name] = np.zeros(dims, _np_dtype(elem))  # a Constant the folder left
    plan.host_outputs = {n: known[n] for n in plan.outputs if n in known}
    if not plan.host_outputs and not any(_is_empty(d) for d, _ in (types[n] for n, _, _ in plan.inputs)):
        return None
    replace_nodes(graph, [n for n in kept if not set(n.output) <= set(known)])
    for name, value in known.items():
        if name not in plan.host_outputs and name not in initialized:
            graph.initializer.append(numpy_helper.from_array(value, name))
    device_outputs = [o for o in graph.output if o.name not in plan.host_outputs]
    del graph.output[:]
    graph.output.extend(device_outputs)
    remove_dead_nodes(model)
    read = {i for n in graph.node for i in n.input}
    for name, dims, _ in plan.inputs:
        if not device_outputs or (_is_empty(dims) and name not in read):
            plan.host_inputs.add(name)
    left = [v for v in graph.input if v.name not in plan.host_inputs]
    del graph.input[:]
    graph.input.extend(left)
    return plan


def drop_empty_concat_pieces(model, types: dict) -> list[str]:
    """A Concat's empty inputs add nothing: they are dropped (one input
    left: an Identity). Phi-3 splits each head into its rotary part and the
    rest, `q[..., :r]` and `q[..., r:]`, and concatenates them back; with the
    whole head rotated the rest is [1, H, S, 0]. The Concats changed, by name."""
    changed = []
    for node in model.graph.node:
        if node.op_type != "Concat" or node.domain not in ("", "ai.onnx") \
                or _is_empty(types.get(node.output[0], (None, 0))[0]):
            continue
        pieces = [i for i in node.input if not _is_empty(types.get(i, (None, 0))[0])]
        if len(pieces) == len(node.input) or not pieces:
            continue
        del node.input[:]
        node.input.extend(pieces)
        if len(pieces) == 1:
            node.op_type = "Identity"
            del node.attribute[:]
        changed.append(node.name)
    return changed


def _host_results(node, types: dict, known: dict) -> dict[str, np.ndarray] | None:
    """The node's results when the host knows them (all empty, or a
    reduction over an empty axis), else None."""
    outs = [types.get(o, (None, 0)) for o in node.output]
    if node.op_type == "Constant" or any(d is None for d, _ in outs):
        return None
    if all(_is_empty(d) for d, _ in outs):
        return {o: np.zeros(d, _np_dtype(e)) for o, (d, e) in zip(node.output, outs)}
    identity = _IDENTITY.get(node.op_type)
    if identity is not None and node.domain in ("", "ai.onnx") and node.input and \
            _is_empty(types.get(node.input[0], (None, 0))[0]):
        (dims, elem), = outs
        dt = _np_dtype(elem)
        return {node.output[0]: np.full(dims, identity(dt), dt)}
    return None
