"""HardSigmoid and HardSwish (MobileNetV3's activations, `onnx_hard_activations`):
written out as a clipped multiply-add, against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import npu


def _model(op: str, elem: int, shape: list[int], **attrs):
    x = helper.make_tensor_value_info("x", elem, shape)
    y = helper.make_tensor_value_info("y", elem, shape)
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"], name="act", **attrs)], "g", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _onnxruntime(model, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


@pytest.mark.parametrize("op,attrs", [("HardSwish", {}), ("HardSigmoid", {}),
                                      ("HardSigmoid", {"alpha": 0.3, "beta": 0.4})],
                         ids=["hardswish", "hardsigmoid", "hardsigmoid-alpha-beta"])
@pytest.mark.parametrize("elem", [TensorProto.FLOAT, TensorProto.FLOAT16], ids=["f32", "f16"])
def test_hard_activations_match_onnxruntime(op, attrs, elem):
    dtype = np.float32 if elem == TensorProto.FLOAT else np.float16
    # both clip points (x = -3 and 3 for HardSwish) and the line between them
    x = np.linspace(-5, 5, 4 * 64, dtype=np.float32).reshape(4, 64).astype(dtype)
    model = _model(op, elem, [4, 64], **attrs)
    (y,), _ = npu.compile(model)(x)
    want = _onnxruntime(model, x)
    assert y.dtype == dtype
    tol = 1e-6 if dtype == np.float32 else 2e-3
    np.testing.assert_allclose(y.astype(np.float32), want.astype(np.float32), rtol=tol, atol=tol)
