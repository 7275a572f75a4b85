"""Small ONNX models built with onnx.helper for the frontend tests."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 9  # onnxruntime 1.31 reads IR <= 13; onnx 1.23 writes 14 by default


def model(nodes, inputs, outputs, initializers=(), opset=OPSET) -> onnx.ModelProto:
    """inputs/outputs: (name, shape, elem_type=FLOAT)."""
    def info(spec):
        name, shape, *t = spec
        return helper.make_tensor_value_info(name, t[0] if t else TensorProto.FLOAT, shape)

    graph = helper.make_graph(nodes, "g", [info(i) for i in inputs], [info(o) for o in outputs],
                              [numpy_helper.from_array(a, n) for n, a in initializers])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)
    onnx.checker.check_model(m)
    return m


def mlp(batch=6, d_in=40, d_hidden=72, d_out=24, seed=0) -> onnx.ModelProto:
    """Two layers: Gemm (transB, bias) -> Relu -> MatMul -> Add -> Softmax."""
    rng = np.random.default_rng(seed)
    w1 = (rng.standard_normal((d_hidden, d_in)) / np.sqrt(d_in)).astype(np.float32)
    b1 = rng.standard_normal(d_hidden).astype(np.float32) * 0.1
    w2 = (rng.standard_normal((d_hidden, d_out)) / np.sqrt(d_hidden)).astype(np.float32)
    b2 = rng.standard_normal(d_out).astype(np.float32) * 0.1
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transB=1),
             helper.make_node("Relu", ["h"], ["a"], name="act"),
             helper.make_node("MatMul", ["a", "w2"], ["o"], name="fc2"),
             helper.make_node("Add", ["o", "b2"], ["logits"], name="bias2"),
             helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1)]
    return model(nodes, [("x", [batch, d_in])], [("probs", [batch, d_out])],
                 [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)])
