"""Where each ONNX node's ops come from: the node's name as an MLIR name
location, and `model:<node number>:1` as the file:line the simulator and
the diagnostics print, mapped back to `node 'name' (OpType)`."""

from __future__ import annotations

import os

from mlir import ir


class NodeLocations:
    """ONNX node name locations -> `model:<node number>:1`, so simulated
    instructions (which carry file:line:col) map back to their node."""

    def __init__(self, model_name: str, node_types: dict[str, str]):
        self.model = model_name
        self.order = {name: i + 1 for i, name in enumerate(node_types)}
        self.types = node_types
        self.empty = None  # `onnx_empty.EmptyPlan`: zero-size values the host knows
        self.constant_bytes: int | None = None  # `problem.constant_bytes` of the model as given
        self.by_where = {f"{model_name}:{i}:1": f"{name} ({node_types[name]})"
                         for name, i in self.order.items()}

    def _name(self, loc: ir.Location) -> str | None:
        try:
            if loc.is_a_name() and loc.name_str in self.order:
                return loc.name_str
        except AttributeError:
            pass
        return None

    def text(self, loc: ir.Location) -> str:
        name = self._name(loc)
        if name is None:
            return str(loc)
        return f'loc("{name}"("{self.model}":{self.order[name]}:1))'

    def describe(self, loc: ir.Location) -> str | None:
        name = self._name(loc)
        return f"node '{name}' ({self.types[name]})" if name else None

    def node_at(self, filename: str, line: int) -> str | None:
        """`node 'n' (Op)` for a diagnostic at `model:<node number>`."""
        names = list(self.order) if os.path.basename(filename) == self.model else ()
        return f"node '{names[line - 1]}' ({self.types[names[line - 1]]})" if 0 < line <= len(names) else None
