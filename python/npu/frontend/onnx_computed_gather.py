"""A `Gather` from a small constant table by indices computed in the model,
written as a one-hot matmul before torch-mlir.

npu-lower-gather's scalar unit reads a gather's indices from the kernel's
inputs as it starts, so indices computed on the device are refused there.
RoBERTa, XLM-R and MPNet compute their position ids from the token ids
(`CumSum` of the tokens that are not padding, `onnx_cumsum`) and gather
their position table by them. For a constant table of at most
`MAX_ROWS` rows that gather is `OneHot(ids) @ table`: `Equal(ids[..., None],
arange(rows))` cast to the table's type, then a MatMul on the cube (the
table's values as f16 operands, as every matmul's; a row is picked by a
product with 1 and sums of 0s). A negative id counts from the end, as ONNX
says; an id out of range gives a row of zeros where onnxruntime raises.
"""

from __future__ import annotations

import math

import numpy as np

# Rows of the table the one-hot form takes: position tables (514 in
# RoBERTa-base); a vocabulary's tens of thousands would make the one-hot
# rows wider than the hidden size by far. A choice, not a hardware number.
MAX_ROWS = 2048
# Ops through which indices are still the kernel's input (or a constant),
# as npu-lower-gather reads them.
_VIEWS = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Cast"})
_INTS = (6, 7)


def gathers_as_one_hot(model, types: dict | None = None) -> list[str]:
    """Rewrite (in place) each Gather (axis 0) of a constant float table of
    at most MAX_ROWS rows by static integer indices that the model computes;
    the names rewritten."""
    if not any(n.op_type == "Gather" for n in model.graph.node):
        return []
    from onnx import helper, numpy_helper

    from npu.frontend.onnx_expansion import rewrite_nodes

    inits = {t.name: t for t in model.graph.initializer}
    producer = {o: n for n in model.graph.node for o in n.output}
    inputs = {i.name for i in model.graph.input}

    def computed(name: str) -> bool:
        while name in producer and producer[name].op_type in _VIEWS and producer[name].input:
            name = producer[name].input[0]
        return name not in inputs and name not in inits and name in producer \
            and producer[name].op_type != "Constant"

    def expand(node, types: dict, expansion) -> bool:
        if node.op_type != "Gather" or len(node.input) != 2 or node.input[0] not in inits:
            return False
        axis = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "axis"), 0)
        table = numpy_helper.to_array(inits[node.input[0]])
        ids, elem = types.get(node.input[1], (None, 0))
        out = types.get(node.output[0], (None, 0))[0]
        if (axis != 0 or table.ndim < 2 or table.shape[0] > MAX_ROWS or table.dtype not in (np.float32, np.float16)
                or elem not in _INTS or ids is None or out is None or not computed(node.input[1])
                or not all(isinstance(d, int) and d > 0 for d in list(ids) + list(out))):
            return False
        rows, width = table.shape[0], math.prod(table.shape[1:])
        itype = np.int64 if elem == 7 else np.int32
        ex = expansion()
        column = ex.make("Reshape", [node.input[1], ex.const("ids_shape", list(ids) + [1], np.int64)], "ids")
        negative = ex.make("Less", [column, ex.const("zero", 0, itype)], "negative")
        wrapped = ex.make("Where", [negative, ex.make("Add", [column, ex.const("rows", rows, itype)],
                                                      "from_end"), column], "wrapped")
        hot = ex.make("Cast", [ex.make("Equal", [wrapped, ex.const("arange", np.arange(rows), itype)], "hit")],
                      "one_hot", to=1 if table.dtype == np.float32 else 10)
        flat = ex.const("table", table.reshape(rows, width), table.dtype)
        if table.ndim == 2:
            ex.final("MatMul", [hot, flat], "matmul")
        else:
            picked = ex.make("MatMul", [hot, flat], "matmul")
            ex.final("Reshape", [picked, ex.const("out_shape", out, np.int64)], "rows")
        return True

    return rewrite_nodes(model, types, expand)
