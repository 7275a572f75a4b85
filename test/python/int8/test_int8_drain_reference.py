"""Dequantisation and requantisation of the i32 accumulator against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from npu.reference_int8 import dequantize_acc, requantize


def _ort_quantize(x: np.ndarray, scale: np.ndarray, zp: np.ndarray, axis: int | None) -> np.ndarray:
    """onnxruntime's QuantizeLinear of float32 x (per-tensor or along `axis`)."""
    zp_type = TensorProto.INT8 if zp.dtype == np.int8 else TensorProto.UINT8
    attrs = {} if axis is None else {"axis": axis}
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q", **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", zp_type, list(x.shape))],
        [onnx.numpy_helper.from_array(scale.astype(np.float32), "s"),
         onnx.numpy_helper.from_array(zp, "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


@pytest.mark.parametrize("zp_dtype", [np.int8, np.uint8])
@pytest.mark.parametrize("per_channel", [False, True])
def test_requantize_matches_onnx_rounding_and_saturation(zp_dtype, per_channel: bool) -> None:
    rng = np.random.default_rng(3)
    acc = rng.integers(-3000, 3000, (7, 5), dtype=np.int32)
    acc[0, :] = [2, 6, -2, -6, 10]  # exact ties at scale 1/4: half to even, both signs
    acc[1, :] = [2**31 - 1, -2**31, 5000, -5000, 0]  # saturation at both ends
    # Powers of two: acc * scale is exact in float32 and float64, so ties are real ties.
    scale = np.array([4.0, 8.0, 2.0, 16.0, 4.0]) if per_channel else np.array(4.0)
    zp = (np.array([3, -7, 0, 5, -128], np.int8) if zp_dtype == np.int8
          else np.array([128, 0, 255, 7, 100], np.uint8))
    if not per_channel:
        zp = zp[:1].reshape(())
    want = _ort_quantize(acc.astype(np.float32), scale, zp, 1 if per_channel else None)
    got = requantize(acc, 1.0 / scale, zp.astype(np.int64), zp_dtype)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_dequantize_per_channel_rounds_once() -> None:
    acc = np.array([[1, -3, 2**11 + 1], [7, 0, -2**24 - 1]], np.int32)
    scale = np.array([0.5, 0.1, 2.0**-10])
    got = dequantize_acc(acc, scale, np.float16)
    np.testing.assert_array_equal(got, (acc * scale).astype(np.float16))
    assert dequantize_acc(acc, 0.25, np.float32)[1, 2] == np.float32((-2**24 - 1) * 0.25)
    with pytest.raises(ValueError, match="needs 3 entries"):
        dequantize_acc(acc, np.ones(2), np.float32)
