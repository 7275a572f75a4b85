"""Write to argv[1] a model with the shape plumbing torch.onnx leaves in a
static graph: x[2,3,4] is reshaped to [Shape(x)[0], -1] (Shape, Gather,
Unsqueeze, Concat), and a causal mask (Range, Unsqueeze, Greater,
ConstantOfShape, Where, Expand) is added to it; an unused branch is dead."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def const(name, values, dtype=np.int64):
    return helper.make_node("Constant", [], [name], name=f"c_{name}",
                            value=numpy_helper.from_array(np.asarray(values, dtype), name))


nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"), const("zero", 0),
         helper.make_node("Gather", ["s", "zero"], ["b"], name="gather", axis=0), const("ax0", [0]),
         helper.make_node("Unsqueeze", ["b", "ax0"], ["b1"], name="unsqueeze"), const("minus1", [-1]),
         helper.make_node("Concat", ["b1", "minus1"], ["shape2"], name="concat", axis=0),
         helper.make_node("Reshape", ["x", "shape2"], ["r"], name="reshape"),
         const("start", 0), const("limit", 12), const("one", 1),
         helper.make_node("Range", ["start", "limit", "one"], ["pos"], name="range"),
         const("ax1", [1]),
         helper.make_node("Unsqueeze", ["pos", "ax1"], ["col"], name="col"),
         helper.make_node("Greater", ["pos", "col"], ["future"], name="future"),
         const("dims", [12, 12]),
         helper.make_node("ConstantOfShape", ["dims"], ["zeros"], name="zeros",
                          value=numpy_helper.from_array(np.array([0.0], np.float32))),
         const("neg", -1e4, np.float32),
         helper.make_node("Where", ["future", "neg", "zeros"], ["bias"], name="where"),
         const("rows", [2]),
         helper.make_node("Slice", ["bias", "ax0", "rows", "ax0"], ["bias2"], name="slice"),
         helper.make_node("Add", ["r", "bias2"], ["masked"], name="add_mask"),
         helper.make_node("Relu", ["masked"], ["y"], name="relu"),
         helper.make_node("Neg", ["x"], ["unused"], name="dead")]
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 12])
graph = helper.make_graph(nodes, "plumbing", [x], [y])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), sys.argv[1])
