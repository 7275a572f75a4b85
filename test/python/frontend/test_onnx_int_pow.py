"""Pow of an integer base by an integer exponent (`onnx_int_pow`): exact,
wrapped to 32 bits, against Python's modular power."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import npu
from npu.frontend.compile import CompileError


def _pow_model(x_elem, y_elem, n):
    vals = [helper.make_tensor_value_info("x", x_elem, [n]), helper.make_tensor_value_info("y", y_elem, [n]),
            helper.make_tensor_value_info("z", x_elem, [n])]
    graph = helper.make_graph([helper.make_node("Pow", ["x", "y"], ["z"])], "g", vals[:2], vals[2:])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def _expected(x: int, y: int) -> int:
    if y < 0:  # trunc(1 / x^|y|)
        return 1 if x == 1 else (-1 if y % 2 else 1) if x == -1 else 0
    v = pow(x % 2**32, y, 2**32)
    return v - 2**32 if v >= 2**31 else v


def test_int32_power_is_exact_and_wraps():
    rng = np.random.default_rng(3)
    n = 2048
    x = rng.integers(-20, 21, n).astype(np.int32)
    x[:64] = rng.integers(-(2**31), 2**31 - 1, 64)
    y = np.where(np.arange(n) % 3 == 0, rng.integers(0, 12, n),
                 np.round(2.0 ** rng.uniform(0, 31, n)).clip(0, 2**31 - 1)).astype(np.int64)
    y[np.arange(n) % 7 == 0] *= -1
    y[:8] = [2**24 - 1, 2**24, 2**24 + 1, 2**31 - 1, -(2**31), 2**30, 0, -1]
    x[:8] = [3, 3, -3, -1, -1, 2, 0, -1]
    y = y.astype(np.int32)
    (z,), _ = npu.compile(_pow_model(TensorProto.INT32, TensorProto.INT32, n))(x, y)
    want = np.array([_expected(int(a), int(b)) for a, b in zip(x, y)], np.int32)
    bad = np.flatnonzero(z != want)
    assert bad.size == 0, [(int(x[i]), int(y[i]), int(z[i]), int(want[i])) for i in bad[:5]]


def test_integer_base_with_float_exponent_is_refused():
    with pytest.raises(CompileError, match=r"node 'Pow_0' \(Pow\): an integer base with a non-integer") as e:
        npu.compile(_pow_model(TensorProto.INT32, TensorProto.FLOAT, 3))
    assert "\n" not in str(e.value)


def test_int8_power_wraps_to_8_bits():
    x = np.tile(np.arange(-128, 128, dtype=np.int8), 4)
    y = np.repeat(np.array([0, 1, 3, 7], np.int8), 256)
    (z,), _ = npu.compile(_pow_model(TensorProto.INT8, TensorProto.INT8, 1024))(x, y)
    np.testing.assert_array_equal(z, np.power(x, y))
