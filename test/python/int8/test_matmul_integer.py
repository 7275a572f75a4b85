"""ONNX MatMulInteger: exact i32 results against onnxruntime (odd shapes, zero
points per tensor, per row and per column, uint8 weights), and the bound."""

from __future__ import annotations

import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper


def _model(m: int, k: int, n: int, b: np.ndarray, a_zp=None, b_zp=None) -> onnx.ModelProto:
    inits = [numpy_helper.from_array(b, "b")]
    inputs = ["a", "b"]
    for name, zp in (("a_zp", a_zp), ("b_zp", b_zp)):
        if zp is not None:
            inits.append(numpy_helper.from_array(zp, name))
        inputs.append(name if zp is not None else "")
    while inputs[-1] == "":
        inputs.pop()
    node = helper.make_node("MatMulInteger", inputs, ["y"], name="mmi")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.INT8, [m, k])],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, [m, n])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _run(model: onnx.ModelProto, a: np.ndarray, tmp_path) -> subprocess.CompletedProcess:
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", a=a)
    return subprocess.run([".venv/bin/npu-run", str(tmp_path / "m.onnx"), "--inputs",
                           str(tmp_path / "in.npz"), "-o", str(tmp_path / "out.npz")],
                          capture_output=True, text=True, timeout=300)


CASES = {
    "symmetric": (17, 70, 9, np.int8, None, None),
    "per_tensor_zp": (5, 33, 20, np.int8, np.array(-3, np.int8), np.array(7, np.int8)),
    "per_column": (6, 40, 5, np.int8, np.array(-2, np.int8),
                           np.array([1, -128, 0, 127, 5], np.int8)),
    "uint8_weights": (3, 64, 7, np.uint8, np.array(0, np.int8), np.array(128, np.uint8)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matmul_integer_is_exact(case: str, tmp_path) -> None:
    m, k, n, b_type, a_zp, b_zp = CASES[case]
    rng = np.random.default_rng(k)
    info = np.iinfo(b_type)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    a[0, :] = -128  # both ends of the range
    b = rng.integers(info.min, int(info.max) + 1, (k, n), dtype=b_type)
    b[:, 0] = info.max
    model = _model(m, k, n, b, a_zp, b_zp)
    r = _run(model, a, tmp_path)
    assert r.returncode == 0, r.stderr
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"a": a})[0]
    got = np.load(tmp_path / "out.npz")["y"]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)
    assert "remark: node 'mmi' (MatMulInteger)" in r.stderr


def test_matmul_integer_beyond_f32_runs_exactly_on_the_int8_cube(tmp_path) -> None:
    """-128 x -128 over K = 1100 sums to 18,022,400 > 2^24: past what the f16
    cube's f32 accumulator holds exactly, exact in the int8 cube's i32."""
    k = 1100
    model = _model(2, k, 3, np.full((k, 3), -128, np.int8), np.array(1, np.int8))
    a = np.full((2, k), -128, np.int8)
    r = _run(model, a, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "remark: node 'mmi' (MatMulInteger): on the int8 cube" in r.stderr
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"a": a})[0]
    assert abs(int(want[0, 0])) > 2**24
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["y"], want)


def test_matmul_integer_beyond_the_exact_bound_is_one_line(tmp_path) -> None:
    """uint8 weights stay on the f16 cube, where K = 1100 is past the bound."""
    model = _model(2, 1100, 3, np.zeros((1100, 3), np.uint8))
    r = _run(model, np.zeros((2, 1100), np.int8), tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "node 'mmi' (MatMulInteger): K = 1100" in lines[0]
    assert "its operands are not both int8" in lines[0]
    assert not (tmp_path / "out.npz").exists()
