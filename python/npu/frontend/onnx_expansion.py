"""Writing one ONNX node out as several (the rewrites before torch-mlir:
`onnx_pow`, `onnx_small_ints`, `onnx_int_div`, `onnx_matmul_shapes`).

The new nodes and constants are named `<node>/<tag>`, so errors downstream
still point at the node; the last one writes the node's own output.
"""

from __future__ import annotations

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
