"""LayerNormalization over the last axis of a map with several row dims,
written over one row dim before torch-mlir.

ConvNeXt normalizes its [1, H, W, C] maps over C (torchvision's CNBlock and
LayerNorm2d permute NCHW to NHWC around `layer_norm`). Its rows then run
along two dims, which npu-split-cores' peel (`split_cores/peel.py`: the
whole row blocks on many cores, the rest on one) cannot cut with static
views, so with H * W not whole 16-row blocks (14 x 14 = 196) the whole
group ran on one core. As `Reshape [H*W, C] -> LayerNormalization ->
Reshape [1, H, W, C]` the same rows lie along one dim; the reshapes are
views of the same bytes, and every row is normalized exactly as before.
"""

from __future__ import annotations

import math

import numpy as np


def flatten_layernorm_rows(model, types: dict | None = None) -> list[str]:
    """Rewrite (in place) each LayerNormalization over the last axis of a
    static input with more than one row dim (and no Mean / InvStdDev
    output); the names of the nodes rewritten."""
    if not any(n.op_type == "LayerNormalization" for n in model.graph.node):
        return []
    from onnx import helper

    from npu.frontend.onnx_expansion import rewrite_nodes

    def expand(node, types: dict, expansion) -> bool:
        if node.op_type != "LayerNormalization" or len([o for o in node.output if o]) != 1:
            return False
        dims = types.get(node.input[0], (None, 0))[0]
        axis = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "axis"), -1)
        if (dims is None or len(dims) < 3 or not all(isinstance(d, int) and d > 0 for d in dims)
                or axis % len(dims) != len(dims) - 1 or sum(d > 1 for d in dims[:-1]) < 2):
            return False
        ex = expansion()
        rows = ex.make("Reshape", [node.input[0], ex.const(
            "rows_shape", np.array([math.prod(dims[:-1]), dims[-1]]), np.int64)], "rows")
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute if a.name != "axis"}
        normed = ex.make("LayerNormalization", [rows] + list(node.input[1:]), "normed", axis=-1, **attrs)
        ex.final("Reshape", [normed, ex.const("out_shape", np.array(dims), np.int64)], "unrows")
        return True

    return rewrite_nodes(model, types, expand)
