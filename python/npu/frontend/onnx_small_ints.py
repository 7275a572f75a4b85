"""Narrow integer arithmetic computed exactly in f32, before torch-mlir.

The vector unit has no i8 add/mul/min/max and no integer divide. f32 holds
every integer below 2^24 exactly, so:

* int8 Add/Sub/Mul/Max/Min/Clip: the operands as f32, the op in f32 (sums
  and products of two int8 are below 2^15: exact), the result wrapped to
  int8 as ONNX's int8 arithmetic does (two's complement), back to int8. The
  wrap is `t - 256 trunc(t / 256)` of a shifted non-negative `t`, all exact.
* Div of int8/int16/uint8/uint16: the quotient of two integers below 2^24
  in magnitude, rounded by f32 division and truncated toward zero, is the
  exact truncated quotient (rounding could only reach the next integer n if
  |a/b - n| <= n 2^-24, but |a/b - n| >= 1/|b|, which needs |a| >= 2^24).
  int8 quotients wrap (-128 / -1). i32 and wider operands can exceed 2^24,
  where that fails: their Div takes a corrected estimate (`onnx_int_div`).
* ReduceMax/ReduceMin of bool (any/all): 0/1 as f32, reduced, back to bool.
"""

from __future__ import annotations

import numpy as np

INT8, INT16, UINT8, UINT16, FLOAT, INT32, BOOL = 3, 5, 2, 4, 1, 6, 9
_INT8_OPS = ("Add", "Sub", "Mul", "Max", "Min", "Clip", "Div")
_BOOL_OPS = ("ReduceMax", "ReduceMin")
_DIV_TYPES = (INT8, INT16, UINT8, UINT16)
# int8 results are shifted by 64*256 (past the smallest product, -16256)
# before the wrap, so that truncation is a floor.
_SHIFT = 64 * 256 + 128


def rewrite_small_int_ops(model, types: dict | None = None) -> list[str]:
    """Rewrite (in place) the nodes above; the names of those rewritten.
    The new nodes carry the node's name as a prefix."""
    ops = [n for n in model.graph.node if n.domain in ("", "ai.onnx") and n.op_type in _INT8_OPS + _BOOL_OPS]
    if not ops:
        return []
    from onnx import helper

    from npu.frontend.onnx_expansion import rewrite_nodes

    def expand(node, types: dict, expansion) -> bool:
        elem = types.get(node.output[0], (None, 0))[1] if node.domain in ("", "ai.onnx") else 0
        wanted = ((node.op_type in _INT8_OPS and elem == INT8) or (node.op_type == "Div" and elem in _DIV_TYPES)
                  or (node.op_type in _BOOL_OPS and elem == BOOL))
        if not wanted or len(node.output) != 1:
            return False
        ex = expansion()
        make = ex.make

        def const(name: str, value: float) -> str:
            return ex.const(name, value, np.float32)

        floats = [make("Cast", [x], f"in{k}", to=FLOAT) if x and (k == 0 or node.op_type not in _BOOL_OPS)
                  else x for k, x in enumerate(node.input)]  # a reduction's axes stay int64
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        value = make(node.op_type, floats, "f", **attrs)
        if node.op_type == "Div":
            value = make("Cast", [make("Cast", [value], "q", to=INT32)], "qf", to=FLOAT)
        if elem == INT8 and node.op_type in ("Add", "Sub", "Mul", "Div"):
            shifted = make("Add", [value, const("shift", _SHIFT)], "t")
            turns = make("Cast", [make("Cast", [make("Mul", [shifted, const("inv", 1 / 256)], "t256")],
                                       "k", to=INT32)], "kf", to=FLOAT)
            value = make("Sub", [shifted, make("Mul", [turns, const("m", 256.0)], "kt")], "w")
            value = make("Add", [value, const("lo", -128.0)], "wrapped")
        ex.final("Cast", [value], "cast", to=elem)
        return True

    return rewrite_nodes(model, types, expand)
