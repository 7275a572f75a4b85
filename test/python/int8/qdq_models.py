"""Small float models, onnxruntime's `quantize_static` of them, and the
reference run of a quantised model: shared by the int8 tests and
`bench/int8.py`."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def mlp(m: int, k: int, hidden: int, n: int, weight_scale: float = 0.3) -> onnx.ModelProto:
    """y = relu(x @ w1 + b1) @ w2, x of shape [m, k]."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal(s) * weight_scale).astype(np.float32),
                                     name)
             for name, s in (("w1", (k, hidden)), ("b1", (hidden,)), ("w2", (hidden, n)))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
             helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
             helper.make_node("Relu", ["hb"], ["r"], name="relu1"),
             helper.make_node("MatMul", ["r", "w2"], ["y"], name="fc2")]
    graph = helper.make_graph(nodes, "mlp",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def linear_mlp(m: int, k: int, hidden: int, n: int) -> onnx.ModelProto:
    """y = relu(x @ w1.T + b1) @ w2.T + b2 as torch exports nn.Linear: Gemm
    with transB = 1."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), name)
             for name, s in (("w1", (hidden, k)), ("b1", (hidden,)), ("w2", (n, hidden)),
                             ("b2", (n,)))]
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transB=1),
             helper.make_node("Relu", ["h"], ["r"], name="relu1"),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], name="fc2", transB=1)]
    graph = helper.make_graph(nodes, "linear_mlp",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def cnn(size: int = 16) -> onnx.ModelProto:
    """conv 3->16 (pad 1), ReLU, conv 16->32 (stride 2), ReLU, global average
    pool, a 32 -> 10 MatMul; x of shape [1, 3, size, size]."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal(s) * w).astype(np.float32), name)
             for name, s, w in (("w1", (16, 3, 3, 3), 0.3), ("b1", (16,), 0.1),
                                ("w2", (32, 16, 3, 3), 0.1), ("b2", (32,), 0.1),
                                ("wf", (32, 10), 0.1))]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1] * 4),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1] * 4,
                              strides=[2, 2]),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
             helper.make_node("MatMul", ["f", "wf"], ["y"], name="fc")]
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def quantized(model: onnx.ModelProto, shape: tuple, per_channel: bool = True,
              activations: str = "QInt8", seed: int = 1) -> onnx.ModelProto:
    """The QDQ model `quantize_static` makes of `model` (input "x" of `shape`,
    calibrated on four standard-normal batches; int8 weights)."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)

    rng = np.random.default_rng(seed)

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter([{"x": rng.standard_normal(shape).astype(np.float32)}
                                 for _ in range(4)])

        def get_next(self):
            return next(self.batches, None)

    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "f.onnx"), os.path.join(d, "q.onnx")
        onnx.save(model, src)
        quantize_static(src, dst, Reader(), quant_format=QuantFormat.QDQ,
                        activation_type=getattr(QuantType, activations),
                        weight_type=QuantType.QInt8, per_channel=per_channel)
        return onnx.load(dst)


def reference(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    """onnxruntime's run of `model` node by node, as ONNX defines it: with its
    graph optimisations it fuses QDQ groups into int8 kernels whose results
    depend on the host CPU (`npu-run --check` does the same)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"]).run(None, feeds)
