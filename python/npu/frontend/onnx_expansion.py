"""Writing one ONNX node out as several (the rewrites before torch-mlir:
`onnx_pow`, `onnx_small_ints`, `onnx_int_div`, `onnx_matmul_shapes`).

The new nodes and constants are named `<node>/<tag>`, so errors downstream
still point at the node; the last one writes the node's own output.
`constants` and `readers_of` read the graph the rewrites match on.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np


class Expansion:
    """Appends the nodes replacing `node` to `nodes`, and its constants to
    `graph`'s initializers."""

    def __init__(self, graph, node, nodes: list) -> None:
        self.graph, self.node, self.nodes, self.prefix = graph, node, nodes, node.name

    def make(self, op: str, inputs: list[str], tag: str, **attrs) -> str:
        """An intermediate value `<node>/<tag>`."""
        return self._add(op, inputs, f"{self.prefix}/{tag}", tag, attrs)

    def final(self, op: str, inputs: list[str], tag: str, **attrs) -> str:
        """The node's own output, by the op that computes it."""
        return self._add(op, inputs, self.node.output[0], tag, attrs)

    def const(self, tag: str, value, dtype) -> str:
        name = f"{self.prefix}/{tag}"
        from onnx import numpy_helper

        self.graph.initializer.append(numpy_helper.from_array(np.asarray(value, dtype), name))
        return name

    def _add(self, op: str, inputs: list[str], out: str, tag: str, attrs: dict) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [out], name=f"{self.prefix}/{tag}", **attrs))
        return out


# expand(node, types, expansion) -> whether it wrote `node` out (through
# `expansion()`, which makes its Expansion); False keeps the node as it is.
Expander = Callable[[Any, dict, Callable[[], "Expansion"]], bool]


def rewrite_nodes(model, types: dict | None, expand: Expander) -> list[str]:
    """Offer every standard-domain node of `model` to `expand`, in order, and
    put the graph back together; the names of the nodes written out.
    `types` is `onnx_fold.inferred_types(model)` (computed when None)."""
    from npu.frontend.onnx_fold import inferred_types

    types = inferred_types(model) if types is None else types
    if types is None:
        return []
    graph, nodes, done = model.graph, [], []
    for node in graph.node:
        if node.domain in ("", "ai.onnx") and expand(node, types, lambda: Expansion(graph, node, nodes)):
            done.append(node.name)
        else:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    return done


def constants(model) -> Callable[[str], np.ndarray | None]:
    """name -> the model's constant value (an initializer or a `Constant`
    node's), or None; read only when asked (the weights are not copied)."""
    from onnx import helper, numpy_helper

    values = {t.name: t for t in model.graph.initializer}
    values.update({n.output[0]: n.attribute[0] for n in model.graph.node
                   if n.op_type == "Constant" and len(n.attribute) == 1})

    def lookup(name: str) -> np.ndarray | None:
        v = values.get(name)
        if v is None:
            return None
        v = helper.get_attribute_value(v) if hasattr(v, "ref_attr_name") else v
        return np.asarray(numpy_helper.to_array(v) if hasattr(v, "data_type") else v)

    return lookup


def readers_of(graph) -> dict[str, list]:
    """value name -> the nodes that read it, once per input that names it
    (a node reading a value twice counts twice: it is not a single reader)."""
    readers: dict[str, list] = {}
    for n in graph.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    return readers
