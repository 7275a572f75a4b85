"""The audio front ends of Whisper and wav2vec2: 1-D convs (`onnx_conv1d`:
a 2-D conv over a map of height 1) and GroupNorm as torch exports it,
Reshape -> InstanceNormalization -> Reshape -> Mul -> Add
(`onnx_instance_norm`: a LayerNormalization of the [N * C, D] rows),
against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import helper

import npu
from npu.frontend.compile import CompileError
from onnx_models import model


def _run(m, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
    kernel = npu.compile(m, cores=1)
    (y,), report = kernel(x)
    (want,) = onnxruntime.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    return y, want, report


def _conv1d(c_in: int, length: int, c_out: int, kernel: int, group: int = 1, **attrs):
    rng = np.random.default_rng(kernel)
    w = (rng.standard_normal((c_out, c_in // group, kernel)) / np.sqrt(c_in // group * kernel)).astype(np.float32)
    b = (rng.standard_normal(c_out) * 0.1).astype(np.float32)
    stride = attrs.get("strides", [1])[0]
    pads = attrs.get("pads", [0, 0])
    out = (length + sum(pads) - kernel) // stride + 1
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", group=group, **attrs)]
    return model(nodes, [("x", [1, c_in, length])], [("y", [1, c_out, out])], [("w", w), ("b", b)])


@pytest.mark.parametrize("case", [
    dict(c_in=16, length=16, c_out=32, kernel=3, pads=[1, 1], strides=[2]),  # Whisper's conv2
    dict(c_in=1, length=120, c_out=16, kernel=10, strides=[5]),              # wav2vec2's first
    dict(c_in=32, length=20, c_out=32, kernel=8, group=4, pads=[4, 4]),      # its positional conv
], ids=["whisper", "wav2vec2_feature", "wav2vec2_positional"])
def test_conv1d_matches_onnxruntime(case):
    case = dict(case)
    m = _conv1d(case.pop("c_in"), case.pop("length"), case.pop("c_out"), case.pop("kernel"),
                case.pop("group", 1), **case)
    x = np.random.default_rng(1).standard_normal(
        [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]).astype(np.float32)
    y, want, report = _run(m, x)
    np.testing.assert_allclose(y, want, rtol=1e-2, atol=1e-2)  # the cube's f16 operands
    assert report["hazards"] == []


def test_a_3d_conv_is_refused_by_name():
    w = np.zeros((4, 2, 3, 3, 3), np.float32)
    m = model([helper.make_node("Conv", ["x", "w"], ["y"], name="c3d")], [("x", [1, 2, 5, 5, 5])],
              [("y", [1, 4, 3, 3, 3])], [("w", w)])
    with pytest.raises(CompileError, match=r"node 'c3d' \(Conv\): attribute 'kernel_shape' has 3 "
                                           r"dimensions: only 1-D and 2-D convolutions compile"):
        npu.compile(m, cores=1)


def test_group_norm_as_torch_exports_it_matches_onnxruntime():
    """GroupNorm(32 groups, 32 channels) of [1, 32, 40]: InstanceNormalization
    of ones and zeros between reshapes, then the channel's affine."""
    rng = np.random.default_rng(2)
    inits = [("g_shape", np.array([1, 32, -1], np.int64)), ("back", np.array([1, 32, 40], np.int64)),
             ("ones", np.ones(32, np.float32)), ("zeros", np.zeros(32, np.float32)),
             ("gamma", rng.uniform(0.5, 1.5, (32, 1)).astype(np.float32)),
             ("beta", (rng.standard_normal((32, 1)) * 0.1).astype(np.float32))]
    nodes = [helper.make_node("Reshape", ["x", "g_shape"], ["g"], name="groups"),
             helper.make_node("InstanceNormalization", ["g", "ones", "zeros"], ["n"], name="norm",
                              epsilon=1e-5),
             helper.make_node("Reshape", ["n", "back"], ["r"], name="ungroup"),
             helper.make_node("Mul", ["r", "gamma"], ["s"], name="scale"),
             helper.make_node("Add", ["s", "beta"], ["y"], name="shift")]
    m = model(nodes, [("x", [1, 32, 40])], [("y", [1, 32, 40])], inits)
    x = (rng.standard_normal((1, 32, 40)) * 3 + 1).astype(np.float32)
    y, want, report = _run(m, x)
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-3)
    assert report["hazards"] == []


def test_instance_norm_of_a_4d_map_with_its_own_affine_matches_onnxruntime():
    rng = np.random.default_rng(3)
    inits = [("scale", rng.uniform(0.5, 1.5, 8).astype(np.float32)),
             ("bias", (rng.standard_normal(8) * 0.5).astype(np.float32))]
    m = model([helper.make_node("InstanceNormalization", ["x", "scale", "bias"], ["y"], name="norm",
                                epsilon=1e-3)], [("x", [2, 8, 4, 6])], [("y", [2, 8, 4, 6])], inits)
    x = (rng.standard_normal((2, 8, 4, 6)) * 2 - 1).astype(np.float32)
    y, want, report = _run(m, x)
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-3)
