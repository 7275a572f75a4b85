"""Pow with a runtime exponent (`onnx_pow`): exp(y ln|x|) with C pow's sign
rules, against numpy."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

import npu


def _pow_model(x_type, y_type, shape_x, shape_y):
    x = helper.make_tensor_value_info("x", x_type, shape_x)
    y = helper.make_tensor_value_info("y", y_type, shape_y)
    z = helper.make_tensor_value_info("z", x_type, list(np.broadcast_shapes(tuple(shape_x), tuple(shape_y))))
    graph = helper.make_graph([helper.make_node("Pow", ["x", "y"], ["z"])], "g", [x, y], [z])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def test_float_exponent_sign_rules():
    """Negative bases by odd/even integers and fractions (NaN), zero bases,
    y = 0 (1, also for 0 and NaN bases), broadcast over rows."""
    x = np.array([[-2, -2, -2, 0, 0, 0, 3, -1.5], [np.nan, -3, 2.5, -0.5, 1, 4, -1, 7]], np.float32)
    y = np.array([3, 2, 0.5, 2, -1, 0, -1.25, -3], np.float32)
    kernel = npu.compile(_pow_model(TensorProto.FLOAT, TensorProto.FLOAT, [2, 8], [8]))
    (z,), _ = kernel(x, y)
    with np.errstate(all="ignore"):
        want = np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(z, want, rtol=1e-5, equal_nan=True)
    y2 = np.array([1e30, -1e30, 2.0**25, 2.0**24 + 2, 7, -7, 0, 1], np.float32)  # huge: even integers
    (z2,), _ = kernel(np.array([[-1, -1, -1, -1, -1, -1, -1, -1]] * 2, np.float32), y2)
    np.testing.assert_array_equal(z2[0], np.power(np.float64(-1), y2.astype(np.float64)))


def test_integer_exponent_parity_is_exact():
    """(-1)^y for i32 y past 2^24, where f32 rounds y to an even number."""
    y = np.array([2**24 + 1, 2**24 + 3, 2**31 - 1, -(2**31), -(2**24) - 1, 5, 0, -2], np.int32)
    x = np.array([-1, -1, -1, -1, -1, -2, -3, -2], np.float32)
    kernel = npu.compile(_pow_model(TensorProto.FLOAT, TensorProto.INT32, [8], [8]))
    (z,), _ = kernel(x, y)
    want = np.array([np.power(float(a), float(b)) if abs(a) != 1 else (-1.0) ** (b % 2)
                     for a, b in zip(x.tolist(), y.tolist())], np.float32)
    np.testing.assert_allclose(z, want, rtol=1e-5)


def test_f16_base():
    x = np.array([1.5, -2, 3, 0.25], np.float16)
    y = np.array([2, 3, -0.5, 0.5], np.float32)
    kernel = npu.compile(_pow_model(TensorProto.FLOAT16, TensorProto.FLOAT, [4], [4]))
    (z,), _ = kernel(x, y)
    want = np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float16)
    assert z.dtype == np.float16
    np.testing.assert_allclose(z.astype(np.float32), want.astype(np.float32), rtol=1e-3, equal_nan=True)


