"""Quantised ONNX models on the int8 cube: QDQ MatMuls made by onnxruntime's
`quantize_static`, and MatMulInteger, against onnxruntime run node by node."""

from __future__ import annotations

import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from qdq_models import linear_mlp, mlp, quantized, reference

NPU_RUN = ".venv/bin/npu-run"


def _npu_run(model: onnx.ModelProto, feeds: dict, tmp_path, *extra: str):
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", **feeds)
    r = subprocess.run([NPU_RUN, str(tmp_path / "m.onnx"), "--inputs", str(tmp_path / "in.npz"),
                        "-o", str(tmp_path / "out.npz"), *extra],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return np.load(tmp_path / "out.npz"), r.stderr


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("m, k, hidden, n", [(8, 24, 40, 10), (32, 64, 96, 48)])
def test_quantize_static_mlp_runs_on_the_int8_cube(per_channel: bool, m: int, k: int, hidden: int,
                                                   n: int, tmp_path) -> None:
    """Both MatMuls on the int8 cube, requantised on the drain; the result within one
    output quantisation step of onnxruntime, most of it equal."""
    model = quantized(mlp(m, k, hidden, n), (m, k), per_channel)
    x = np.random.default_rng(2).standard_normal((m, k)).astype(np.float32)
    out, err = _npu_run(model, {"x": x}, tmp_path)
    for name in ("fc1", "fc2"):
        assert f"node '{name}' (MatMul) between" in err and "on the int8 cube" in err
        assert f"node '{name}/int8' (MatMulInteger): on the int8 cube" in err
    # fc1's result goes on in float (the bias): requantised, then kept on the int8 grid in f32.
    assert "requantised by 'h_QuantizeLinear' on the drain and kept in float for " \
        "'h_DequantizeLinear'" in err
    (want,) = reference(model, {"x": x})
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    last = next(n for n in reversed(model.graph.node) if n.op_type == "DequantizeLinear")
    step = float(consts[last.input[1]])
    assert np.abs(out["y"] - want).max() <= step * (1 + 1e-4)
    assert np.mean(out["y"] == want) > 0.95


@pytest.mark.parametrize("per_channel", [False, True])
def test_quantize_static_gemms_run_on_the_int8_cube(per_channel: bool, tmp_path) -> None:
    """torch's Linear (Gemm, transB = 1, a bias) quantised: the weight is
    transposed on the host, the product runs on the int8 cube, the bias is
    added after the dequantisation."""
    model = quantized(linear_mlp(16, 48, 64, 24), (16, 48), per_channel)
    x = np.random.default_rng(2).standard_normal((16, 48)).astype(np.float32)
    out, err = _npu_run(model, {"x": x}, tmp_path)
    for name in ("fc1", "fc2"):
        assert f"node '{name}' (Gemm): taken as MatMul + Add" in err
        assert f"node '{name}/int8' (MatMulInteger): on the int8 cube" in err
    (want,) = reference(model, {"x": x})
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    last = next(n for n in reversed(model.graph.node) if n.op_type == "DequantizeLinear")
    assert np.abs(out["y"] - want).max() <= float(consts[last.input[1]]) * (1 + 1e-4)


def test_uint8_activations_stay_in_float(tmp_path) -> None:
    """QUInt8 activations are not int8 operands: the QDQ nodes run in float,
    said in a remark, never refused."""
    model = quantized(mlp(8, 24, 40, 10), (8, 24), False, "QUInt8")
    x = np.random.default_rng(2).standard_normal((8, 24)).astype(np.float32)
    out, err = _npu_run(model, {"x": x}, tmp_path)
    assert "(MatMul) between" not in err and "MatMulInteger" not in err and "run in float" in err
    (want,) = reference(model, {"x": x})
    assert np.isfinite(out["y"]).all() and out["y"].shape == want.shape


def _matmul_integer(a_shape: tuple, b: np.ndarray, a_zp: int | None) -> onnx.ModelProto:
    inits = [numpy_helper.from_array(b, "b")]
    inputs = ["a", "b"]
    if a_zp is not None:
        inits.append(numpy_helper.from_array(np.array(a_zp, np.int8), "a_zp"))
        inputs.append("a_zp")
    out_shape = list(a_shape[:-1]) + [b.shape[-1]]
    node = helper.make_node("MatMulInteger", inputs, ["y"], name="mmi")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.INT8, list(a_shape))],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, out_shape)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("a_shape, n, a_zp", [((33, 70), 17, -5), ((7, 2), 3, None),
                                              ((2, 20, 64), 24, 9), ((128, 256), 96, 127)])
def test_matmul_integer_on_the_int8_cube_is_exact(a_shape: tuple, n: int, a_zp, tmp_path) -> None:
    rng = np.random.default_rng(n)
    b = rng.integers(-128, 128, (a_shape[-1], n), dtype=np.int8)
    a = rng.integers(-128, 128, a_shape, dtype=np.int8)
    a.reshape(-1, a_shape[-1])[0] = -128  # the range's ends
    b[:, 0] = 127
    model = _matmul_integer(a_shape, b, a_zp)
    out, err = _npu_run(model, {"a": a}, tmp_path)
    assert "node 'mmi' (MatMulInteger): on the int8 cube" in err
    (want,) = reference(model, {"a": a})
    assert out["y"].dtype == np.int32
    np.testing.assert_array_equal(out["y"], want)


def test_odd_k_stays_on_the_f16_cube_with_the_reason(tmp_path) -> None:
    b = np.random.default_rng(0).integers(-128, 128, (33, 8), dtype=np.int8)
    model = _matmul_integer((5, 33), b, 2)
    a = np.random.default_rng(1).integers(-128, 128, (5, 33), dtype=np.int8)
    out, err = _npu_run(model, {"a": a}, tmp_path)
    assert "not on the int8 cube: K = 33 is odd" in err
    np.testing.assert_array_equal(out["y"], reference(model, {"a": a})[0])
