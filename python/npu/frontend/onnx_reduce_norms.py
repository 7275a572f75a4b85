"""`ReduceL2` and `ReduceL1` written as the reductions they are made of
before torch-mlir: `Sqrt(ReduceSumSquare(x))` and `ReduceSum(Abs(x))`, with
the node's own axes (attribute or input, by opset) and keepdims.

ConvNeXt V2's global response normalization takes the L2 norm of each
channel over the map (`torch.norm(x, p=2, dim=(1, 2))`), which the
exporter writes as ReduceL2.
"""

from __future__ import annotations

import numpy as np


def expand_reduce_norms(model, types: dict | None = None) -> list[str]:
    """Rewrite (in place) every ReduceL2 and ReduceL1 of a float input; the
    names rewritten."""
    if not any(n.op_type in ("ReduceL2", "ReduceL1") for n in model.graph.node):
        return []
    from onnx import helper

    from npu.frontend.onnx_expansion import rewrite_nodes

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)

    def expand(node, types: dict, expansion) -> bool:
        if node.op_type not in ("ReduceL2", "ReduceL1") or types.get(node.input[0], (None, 0))[1] not in (1, 10):
            return False
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        ex = expansion()
        if node.op_type == "ReduceL2":
            squares = ex.make("ReduceSumSquare", list(node.input), "sum_squares", **attrs)
            ex.final("Sqrt", [squares], "sqrt")
        else:
            magnitude = ex.make("Abs", [node.input[0]], "abs")
            extra = list(node.input[1:])
            if "axes" in attrs and opset >= 13:  # ReduceSum took its axes as an input from 13 on
                extra = [ex.const("axes", attrs.pop("axes"), np.int64)]
            ex.final("ReduceSum", [magnitude] + extra, "sum", **attrs)
        return True

    return rewrite_nodes(model, types, expand)
