"""`InstanceNormalization` written as a LayerNormalization of rows before
torch-mlir, which has no lowering for it that the vector unit runs.

torch exports `GroupNorm` (wav2vec2's first feature conv) as Reshape
[N, G, -1] -> InstanceNormalization -> Reshape -> Mul -> Add. Instance norm
normalizes each (n, c) over the remaining dims: that is a LayerNormalization
of the [N * C, D] rows (the Reshapes are views), then the channel's scale
and bias as [C, 1, ...] broadcasts, left out where they are the constant
ones and zeros the GroupNorm export writes.
"""

from __future__ import annotations

import math

import numpy as np


def expand_instance_norms(model, types: dict | None = None) -> list[str]:
    """Rewrite (in place) every InstanceNormalization of a static input;
    the names of the nodes rewritten (others stay, and are refused as
    unsupported by name)."""
    if not any(n.op_type == "InstanceNormalization" for n in model.graph.node):
        return []
    from onnx import helper, numpy_helper

    from npu.frontend.onnx_expansion import rewrite_nodes

    inits = {t.name: t for t in model.graph.initializer}

    def constant(name: str):
        return numpy_helper.to_array(inits[name]) if name in inits else None

    def expand(node, types: dict, expansion) -> bool:
        if node.op_type != "InstanceNormalization" or len(node.input) != 3:
            return False
        dims = types.get(node.input[0], (None, 0))[0]
        if (dims is None or len(dims) < 3 or not all(isinstance(d, int) and d > 0 for d in dims)
                or types.get(node.input[0], (None, 0))[1] not in (1, 10)):
            return False
        eps = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "epsilon"), 1e-5)
        rows, width = dims[0] * dims[1], math.prod(dims[2:])
        dtype = np.float32 if types[node.input[0]][1] == 1 else np.float16
        ex = expansion()
        flat = ex.make("Reshape", [node.input[0], ex.const("rows_shape", [rows, width], np.int64)], "rows")
        normed = ex.make("LayerNormalization", [flat, ex.const("ones", np.ones(width), dtype),
                                                ex.const("zeros", np.zeros(width), dtype)],
                         "normed", axis=-1, epsilon=eps)
        channel = [dims[1]] + [1] * (len(dims) - 2)
        steps = []
        scale, bias = constant(node.input[1]), constant(node.input[2])
        if scale is None or not np.all(scale == 1):
            steps.append(("Mul", node.input[1], "scale"))
        if bias is None or not np.all(bias == 0):
            steps.append(("Add", node.input[2], "bias"))
        shaped = [("Reshape", ex.const("out_shape", dims, np.int64), "unrows")]
        plan = shaped + [(op, ex.make("Reshape", [v, ex.const(f"{tag}_shape", channel, np.int64)],
                                      f"{tag}_c"), tag) for op, v, tag in steps]
        value = normed
        for i, (op, operand, tag) in enumerate(plan):
            last = i == len(plan) - 1
            value = (ex.final if last else ex.make)(op, [value, operand], tag)
        return True

    return rewrite_nodes(model, types, expand)
