"""ONNX Conv models for the conv tests, built with onnx.helper."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

ELEM = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16}


def conv_model(n=1, c=3, h=9, w=9, cout=8, k=3, stride=1, pads=(1, 1, 1, 1), dilation=1, group=1,
               bias=True, dtype=np.float32, seed=0, name="conv") -> onnx.ModelProto:
    """One Conv node `name` on input `x` [n, c, h, w], square kernel k."""
    rng = np.random.default_rng(seed)
    kh = kw = k
    weight = (rng.standard_normal((cout, c // group, kh, kw)) / np.sqrt(c // group * kh * kw)).astype(dtype)
    inits = [numpy_helper.from_array(weight, "w")]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(cout).astype(dtype), "b"))
    top, left, bottom, right = pads
    ho = (h + top + bottom - dilation * (kh - 1) - 1) // stride + 1
    wo = (w + left + right - dilation * (kw - 1) - 1) // stride + 1
    node = helper.make_node("Conv", ["x", "w"] + (["b"] if bias else []), ["y"], name=name,
                            kernel_shape=[kh, kw], strides=[stride, stride],
                            pads=[top, left, bottom, right], dilations=[dilation, dilation], group=group)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", ELEM[dtype], [n, c, h, w])],
                              [helper.make_tensor_value_info("y", ELEM[dtype], [n, cout, ho, wo])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    onnx.checker.check_model(m)
    return m


def ort_run(m: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    session = onnxruntime.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def random_input(m: onnx.ModelProto, seed: int = 1) -> np.ndarray:
    t = m.graph.input[0].type.tensor_type
    dtype = np.float16 if t.elem_type == TensorProto.FLOAT16 else np.float32
    return np.random.default_rng(seed).standard_normal([d.dim_value for d in t.shape.dim]).astype(dtype)


def stem_pool_model(rng: np.random.Generator, h: int, w: int, cout: int = 64) -> onnx.ModelProto:
    """ResNet's stem in ONNX: Conv 3->cout 7x7/2 pad 3 with its bias, Relu,
    MaxPool 3x3/2 pad 1, on an f16 image [1, 3, h, w]."""
    weight = (rng.standard_normal((cout, 3, 7, 7)) / np.sqrt(147)).astype(np.float16)
    bias = (rng.standard_normal(cout) * 0.5).astype(np.float16)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[7, 7], strides=[2, 2],
                              pads=[3, 3, 3, 3]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1])]
    ho, wo = (h - 1) // 2 + 1, (w - 1) // 2 + 1
    graph = helper.make_graph(
        nodes, "stem", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [1, 3, h, w])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16,
                                       [1, cout, (ho - 1) // 2 + 1, (wo - 1) // 2 + 1])],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
