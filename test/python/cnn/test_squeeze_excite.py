"""A squeeze-excite block (MobileNetV3's, EfficientNet's): the map times
its channels' gates, [1, C, H, W] * [1, C, 1, 1], where the gate is itself
NC1HWC0 (the pool and the two 1x1 convs left it so). The product stays
NC1HWC0, the gate broadcast over H and W, so the next conv reads it as it
is: no transpose to NCHW and back. Numerics against onnxruntime on one core and on the chip."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from cnn_onnx import compile_npu, make, ort_run

F = TensorProto.FLOAT


def _activation(kind: str, x: str, y: str, name: str) -> list:
    if kind == "SiLU":  # as torch exports nn.SiLU: x * sigmoid(x)
        return [helper.make_node("Sigmoid", [x], [f"{y}_s"], name=f"{name}_sigmoid"),
                helper.make_node("Mul", [x, f"{y}_s"], [y], name=name)]
    if kind == "HardSigmoid":
        return [helper.make_node("HardSigmoid", [x], [y], name=name, alpha=1 / 6)]
    return [helper.make_node(kind, [x], [y], name=name)]


def _se_model(act: str, gate: str, c: int = 24, squeeze: int = 8, size: int = 14):
    """MobileNetV3's block (HardSwish, a HardSigmoid gate) or EfficientNet's
    (SiLU, a Sigmoid gate): whose sigmoid's 1 / (1 + exp(-x)) keeps the
    padded channels finite."""
    rng = np.random.default_rng(7)

    def weight(name, shape):
        fan = int(np.prod(shape[1:]))
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(fan)).astype(np.float32),
                                       name)

    nodes = [helper.make_node("Conv", ["x", "w0"], ["m"], name="expand", kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]),
             *_activation(act, "m", "a", "act"),
             helper.make_node("GlobalAveragePool", ["a"], ["p"], name="squeeze"),
             helper.make_node("Conv", ["p", "w1", "b1"], ["f1"], name="fc1", kernel_shape=[1, 1]),
             helper.make_node("Relu", ["f1"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w2", "b2"], ["f2"], name="fc2", kernel_shape=[1, 1]),
             *_activation(gate, "f2", "g", "gate"),
             helper.make_node("Mul", ["a", "g"], ["s"], name="scale"),
             helper.make_node("Conv", ["s", "w3"], ["y"], name="project", kernel_shape=[1, 1])]
    inits = [weight("w0", [c, 3, 3, 3]), weight("w1", [squeeze, c, 1, 1]),
             numpy_helper.from_array(rng.standard_normal(squeeze).astype(np.float32), "b1"),
             weight("w2", [c, squeeze, 1, 1]),
             numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "b2"),
             weight("w3", [16, c, 1, 1])]
    return make(nodes, [("x", F, [1, 3, size, size])], [("y", F, [1, 16, size, size])], inits)


@pytest.mark.parametrize("cores", [1, 32])
@pytest.mark.parametrize("act,gate", [("HardSwish", "HardSigmoid"), ("SiLU", "Sigmoid")],
                         ids=["mobilenetv3", "efficientnet"])
def test_the_gate_scales_the_map_in_nc1hwc0(act, gate, cores):
    model = _se_model(act, gate)
    kernel = compile_npu(model, cores)
    ascend = kernel.stages["ascend"]
    # the map and the gate meet as [1, 2, 14, 14, 16] and [1, 2, 1, 1, 16];
    # the only transposes are the image's way in and the output's way out
    assert ascend.count('"ascend.transpose"') == 2
    scale = [line for line in ascend.splitlines() if '"ascend.mul"' in line and "1x2x1x1x16" in line]
    assert len(scale) == 1, scale
    x = np.random.default_rng(8).standard_normal((1, 3, 14, 14)).astype(np.float32)
    (got,), _ = kernel(x)
    (want,) = ort_run(model, {"x": x})
    # The cube multiplies in f16 (accumulating in f32).
    np.testing.assert_allclose(got, want, atol=2e-2, rtol=2e-2)
