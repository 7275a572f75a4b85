"""`HardSigmoid` and `HardSwish` written out before torch-mlir.

MobileNetV3 and its relatives use both (torch exports `nn.Hardswish` as
`HardSwish` from opset 14, as `x * HardSigmoid(x)` before). Both are a
multiply-add clipped to [0, 1], and the second a product with x again:

    HardSigmoid(x) = clip(alpha * x + beta, 0, 1)   (alpha 0.2, beta 0.5 unless given)
    HardSwish(x)   = x * clip(x / 6 + 1/2, 0, 1)

The constants take x's element type, so an f16 model stays in f16, and the
vector unit runs the ops it runs for any other elementwise chain.
"""

from __future__ import annotations

import numpy as np

_FLOATS = {1: np.float32, 10: np.float16}  # ONNX FLOAT, FLOAT16


def _attribute(node, name: str, default: float) -> float:
    return next((a.f for a in node.attribute if a.name == name), default)


def expand_hard_activations(model, types: dict | None = None) -> list[str]:
    """Replace (in place) every f32/f16 HardSigmoid and HardSwish of `model`
    by its formula; the new nodes carry the node's name as a prefix, so
    errors still point at it. The names of the nodes written out."""
    if not any(n.op_type in ("HardSigmoid", "HardSwish") for n in model.graph.node):
        return []
    from npu.frontend.onnx_expansion import rewrite_nodes

    def expand(node, types: dict, expansion) -> bool:
        if node.op_type not in ("HardSigmoid", "HardSwish"):
            return False
        dtype = _FLOATS.get(types.get(node.input[0], (None, 0))[1])
        if dtype is None:
            return False
        if node.op_type == "HardSigmoid":
            alpha, beta = _attribute(node, "alpha", 0.2), _attribute(node, "beta", 0.5)
        else:
            alpha, beta = 1.0 / 6.0, 0.5
        ex = expansion()
        x = node.input[0]
        scaled = ex.make("Add", [ex.make("Mul", [x, ex.const("alpha", alpha, dtype)], "ax"),
                                 ex.const("beta", beta, dtype)], "axb")
        bounds = [ex.const("zero", 0.0, dtype), ex.const("one", 1.0, dtype)]
        if node.op_type == "HardSigmoid":
            ex.final("Clip", [scaled] + bounds, "clip")
        else:
            ex.final("Mul", [x, ex.make("Clip", [scaled] + bounds, "gate")], "mul")
        return True

    return rewrite_nodes(model, types, expand)
