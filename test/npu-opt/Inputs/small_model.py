"""Write a small ONNX model (bias add, relu, row softmax) to argv[1]."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

bias = numpy_helper.from_array(np.linspace(-1, 1, 16, dtype=np.float32), "bias")
nodes = [helper.make_node("Add", ["x", "bias"], ["h"], name="add_bias"),
         helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("Softmax", ["r"], ["y"], name="softmax", axis=-1)]
graph = helper.make_graph(nodes, "small", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])], [bias])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), sys.argv[1])
