"""A Transpose that moves only unit axes, written as a Reshape.

ConvNeXt's classifier normalises its pooled [1, C, 1, 1] map over C by
permuting it to [1, 1, 1, C] and back (torchvision's LayerNorm2d). Such a
permutation keeps every element at its offset: the axes it reorders among
the ones longer than 1 stay in order. On the device each was a transpose
through UB, issued element by element (~8k cycles each way for C = 768 on
ascend910), where a Reshape is a view of the same bytes.
"""

from __future__ import annotations

import numpy as np


def rewrite_unit_transposes(model, types: dict | None = None) -> list[str]:
    """Rewrite (in place) each Transpose of a static input whose axes longer
    than 1 keep their order; the names of the nodes rewritten."""
    if not any(n.op_type == "Transpose" for n in model.graph.node):
        return []
    from npu.frontend.onnx_expansion import rewrite_nodes

    def expand(node, types: dict, expansion) -> bool:
        if node.op_type != "Transpose":
            return False
        dims = types.get(node.input[0], (None, 0))[0]
        if not dims or any(d is None or d <= 0 for d in dims):
            return False
        perm = next((list(a.ints) if a.type == a.INTS else None for a in node.attribute
                     if a.name == "perm"), list(range(len(dims)))[::-1])
        if perm is None or sorted(perm) != list(range(len(dims))):
            return False  # onnx's checker names what is wrong with it
        long_axes = [axis for axis in perm if dims[axis] != 1]
        if long_axes != sorted(long_axes):
            return False
        ex = expansion()
        shape = ex.const("shape", np.array([dims[axis] for axis in perm], np.int64), np.int64)
        ex.final("Reshape", [node.input[0], shape], "reshape")
        return True

    return rewrite_nodes(model, types, expand)
