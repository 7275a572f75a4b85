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
A residual Add of two maps of that shape feeding the LayerNorm (Swin's
`x + attention(x)` before norm2) is added over the rows too, or npu-fuse
puts it in the LayerNorm's row group with its rows along two dims again
(Swin-T's 14 x 14 stage: six such groups on one core, 16.7k cycles each on
32 cores); its other readers read it through a Reshape back.
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

    def flattened(node) -> list[int] | None:
        """The input's dims when `node` is a LayerNormalization this rewrites."""
        if node.op_type != "LayerNormalization" or len([o for o in node.output if o]) != 1:
            return None
        dims = types.get(node.input[0], (None, 0))[0]
        axis = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "axis"), -1)
        if (dims is None or len(dims) < 3 or not all(isinstance(d, int) and d > 0 for d in dims)
                or axis % len(dims) != len(dims) - 1 or sum(d > 1 for d in dims[:-1]) < 2):
            return None
        return dims

    added_rows = _residual_adds_as_rows(model, types, flattened)

    def expand(node, types: dict, expansion) -> bool:
        dims = flattened(node)
        if dims is None:
            return False
        ex = expansion()
        rows = added_rows.get(node.input[0]) or ex.make("Reshape", [node.input[0], ex.const(
            "rows_shape", np.array([math.prod(dims[:-1]), dims[-1]]), np.int64)], "rows")
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute if a.name != "axis"}
        normed = ex.make("LayerNormalization", [rows] + list(node.input[1:]), "normed", axis=-1, **attrs)
        ex.final("Reshape", [normed, ex.const("out_shape", np.array(dims), np.int64)], "unrows")
        return True

    return rewrite_nodes(model, types, expand)


def _residual_adds_as_rows(model, types: dict, flattened) -> dict[str, str]:
    """Rewrite (in place) each Add of two same-shaped maps that a rewritten
    LayerNormalization reads into an Add over rows and a Reshape back; the
    Add's old output -> its rows."""
    from onnx import helper, numpy_helper

    outputs = {o.name for o in model.graph.output}
    rows_of: dict[str, str] = {}
    nodes = []
    norms = {n.input[0]: dims for n in model.graph.node if (dims := flattened(n)) is not None}
    for node in model.graph.node:
        dims = norms.get(node.output[0]) if node.op_type == "Add" and len(node.output) == 1 else None
        if dims is None or node.output[0] in outputs \
                or any(types.get(i, (None, 0))[0] != dims for i in node.input):
            nodes.append(node)
            continue
        shape = f"{node.name}/rows_shape"
        model.graph.initializer.extend([
            numpy_helper.from_array(np.array([math.prod(dims[:-1]), dims[-1]], np.int64), shape),
            numpy_helper.from_array(np.array(dims, np.int64), f"{node.name}/out_shape")])
        elem = types[node.output[0]][1]
        for k, value in enumerate(list(node.input)):
            rows = f"{node.name}/rows_{k}"
            nodes.append(helper.make_node("Reshape", [value, shape], [rows], name=rows))
            node.input[k] = rows
            types[rows] = ([math.prod(dims[:-1]), dims[-1]], elem)
        map_out, added = node.output[0], f"{node.name}/rows"
        node.output[0] = added
        types[added] = ([math.prod(dims[:-1]), dims[-1]], elem)
        nodes += [node, helper.make_node("Reshape", [added, f"{node.name}/out_shape"], [map_out],
                                         name=f"{node.name}/unrows")]
        rows_of[map_out] = added
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    return rows_of
