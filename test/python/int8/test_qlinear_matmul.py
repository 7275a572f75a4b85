"""QLinearMatMul on the int8 cube, requantised on the drain, and a lone
QuantizeLinear, bit-exact against onnxruntime; QLinearConv on the int8 conv
(bit-exact) or, where it does not match, in float."""

from __future__ import annotations

import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from qconv_models import qlinear_conv
from qdq_models import reference

NPU_RUN = ".venv/bin/npu-run"


def _npu_run(model: onnx.ModelProto, feeds: dict, tmp_path):
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", **feeds)
    r = subprocess.run([NPU_RUN, str(tmp_path / "m.onnx"), "--inputs", str(tmp_path / "in.npz"),
                        "-o", str(tmp_path / "out.npz")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return np.load(tmp_path / "out.npz")["y"], r.stderr


def _const(name: str, value) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value), name)


def _two_layers(a_shape: tuple, hidden: int, n: int, x: np.ndarray) -> onnx.ModelProto:
    """x (f32) -> QuantizeLinear -> QLinearMatMul (per-column w1 scales) ->
    QLinearMatMul -> y (int8). The output scales are set from the float
    products so that each result saturates at both ends."""
    rng = np.random.default_rng(hidden)
    k = a_shape[-1]
    w1 = rng.integers(-128, 128, (k, hidden), dtype=np.int8)
    w2 = rng.integers(-128, 128, (hidden, n), dtype=np.int8)
    s_x, z_x = np.float32(np.abs(x).max() / 120), np.int8(3)
    s_1 = (rng.random(hidden) * 0.02 + 0.001).astype(np.float32)
    h = x @ (w1 * s_1)
    s_h, z_h = np.float32(np.abs(h).max() / 150), np.int8(-5)
    s_2 = np.float32(0.013)
    y = (np.clip(np.rint(h / s_h) + z_h, -128, 127) - z_h) * s_h @ (w2 * s_2)
    s_y, z_y = np.float32(min(y.max(), -y.min()) / 135), np.int8(2)
    inits = [_const("w1", w1), _const("w2", w2), _const("sx", s_x), _const("zx", z_x),
             _const("s1", s_1), _const("z1", np.zeros(hidden, np.int8)), _const("sh", s_h),
             _const("zh", z_h), _const("s2", s_2), _const("z2", np.int8(0)), _const("sy", s_y),
             _const("zy", z_y)]
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"], name="qx"),
             helper.make_node("QLinearMatMul", ["xq", "sx", "zx", "w1", "s1", "z1", "sh", "zh"],
                              ["h"], name="mm1"),
             helper.make_node("QLinearMatMul", ["h", "sh", "zh", "w2", "s2", "z2", "sy", "zy"],
                              ["y"], name="mm2")]
    graph = helper.make_graph(
        nodes, "qlinear", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(a_shape))],
        [helper.make_tensor_value_info("y", TensorProto.INT8, list(a_shape[:-1]) + [n])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("a_shape, hidden, n", [((33, 70), 17, 24), ((40, 96), 64, 48),
                                                ((2, 20, 64), 32, 16)])
def test_qlinear_matmuls_requantise_on_the_drain_exactly(a_shape: tuple, hidden: int, n: int,
                                                         tmp_path) -> None:
    x = np.random.default_rng(7).standard_normal(a_shape).astype(np.float32)
    model = _two_layers(a_shape, hidden, n, x)
    y, err = _npu_run(model, {"x": x}, tmp_path)
    for name in ("mm1", "mm2"):
        assert f"node '{name}' (QLinearMatMul): taken as" in err
        assert f"on the int8 cube, requantised by '{name}/quantize' on the drain" in err
    (want,) = reference(model, {"x": x})
    assert y.dtype == np.int8
    assert (want == 127).any() and (want == -128).any(), "the case must saturate at both ends"
    np.testing.assert_array_equal(y, want)


def test_run_time_b_runs_in_float_within_one_step(tmp_path) -> None:
    """Both operands computed at run time: no int8-cube form; dequantised, an
    f16 product, quantised in float, with remarks, never refused."""
    rng = np.random.default_rng(3)
    inits = [_const("sa", np.float32(0.05)), _const("za", np.int8(1)),
             _const("sb", np.float32(0.01)), _const("zb", np.int8(0)),
             _const("sy", np.float32(0.3)), _const("zy", np.int8(2))]
    node = helper.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"],
                            name="qlm")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("a", TensorProto.INT8, [8, 32]),
                      helper.make_tensor_value_info("b", TensorProto.INT8, [32, 12])],
        [helper.make_tensor_value_info("y", TensorProto.INT8, [8, 12])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    feeds = {"a": rng.integers(-128, 128, (8, 32), dtype=np.int8),
             "b": rng.integers(-128, 128, (32, 12), dtype=np.int8)}
    y, err = _npu_run(model, feeds, tmp_path)
    assert "node 'qlm/quantize' (QuantizeLinear): rounded and saturated in float" in err
    assert "int8 cube, requantised" not in err
    (want,) = reference(model, feeds)
    assert np.abs(y.astype(np.int32) - want).max() <= 1
    assert np.mean(y == want) > 0.9


@pytest.mark.parametrize("zero_point", [np.uint8(100), np.array([0, 17, 255], np.uint8),
                                        np.int8(-7)])
def test_lone_quantize_linear_is_exact(zero_point: np.ndarray, tmp_path) -> None:
    """A QuantizeLinear with no DequantizeLinear after it (per tensor or per
    channel), ties and both saturation ends included."""
    scale = np.float32(0.5) if zero_point.ndim == 0 else np.array([0.5, 0.25, 2.0], np.float32)
    x = np.random.default_rng(4).standard_normal((4, 3, 16)).astype(np.float32) * 60
    x[0, :, :4] = [[0.25, 0.75, -0.25, -1.25]]  # halves of the step: ties to even
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q", axis=1)
    elem = TensorProto.UINT8 if zero_point.dtype == np.uint8 else TensorProto.INT8
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3, 16])],
        [helper.make_tensor_value_info("y", elem, [4, 3, 16])],
        [_const("s", scale), _const("z", zero_point)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    y, err = _npu_run(model, {"x": x}, tmp_path)
    assert "node 'q' (QuantizeLinear): rounded and saturated in float" in err
    (want,) = reference(model, {"x": x})
    info = np.iinfo(want.dtype)
    assert (want == info.min).any() and (want == info.max).any()
    assert y.dtype == want.dtype
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("per_channel, bias", [(True, True), (False, False)])
def test_grouped_qlinear_conv_runs_in_float_within_one_step(per_channel: bool, bias: bool,
                                                           tmp_path) -> None:
    """A QLinearConv the int8 conv does not take (groups = 2): dequantised
    (the int32 bias with scale s_x * s_w), an f16 conv, quantised in f32;
    within one output step of onnxruntime."""
    model = qlinear_conv(c=8, cout=16, h=10, per_channel=per_channel, bias=bias, groups=2,
                         w_max=64, s_y=0.05, b_max=2000)
    rng = np.random.default_rng(6)
    feeds = {"x": rng.integers(-128, 128, (1, 8, 10, 10), dtype=np.int8)}
    y, err = _npu_run(model, feeds, tmp_path)
    assert "node 'qconv' (QLinearConv): taken as DequantizeLinear -> Conv -> QuantizeLinear" in err
    assert "node 'qconv' (Conv) between 'qconv/dequantize_a' and 'qconv/dequantize_b' " \
           "(DequantizeLinear): stays in float: group = 2" in err
    (want,) = reference(model, feeds)
    assert (want == 127).any() or (want == -128).any()
    assert np.abs(y.astype(np.int32) - want).max() <= 1
    assert np.mean(y == want) > 0.9


@pytest.mark.parametrize("per_channel, bias", [(True, True), (False, False)])
def test_qlinear_conv_on_the_int8_conv_is_exact(per_channel: bool, bias: bool, tmp_path) -> None:
    """Requantised on the drain after the int32 bias: bit-exact against
    onnxruntime, saturation at both ends included."""
    model = qlinear_conv(per_channel=per_channel, bias=bias)
    x = np.random.default_rng(9).integers(-128, 128, (1, 24, 9, 9), dtype=np.int8)
    y, err = _npu_run(model, {"x": x}, tmp_path)
    assert "node 'qconv/int8' (ConvInteger): on the int8 cube" in err
    (want,) = reference(model, {"x": x})
    assert (want == 127).any() and (want == -128).any()
    assert y.dtype == np.int8
    np.testing.assert_array_equal(y, want)
