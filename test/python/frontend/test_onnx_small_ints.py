"""int8 arithmetic and narrow-integer Div (`onnx_small_ints`), exhaustive
over the int8 range, against numpy's two's-complement arithmetic."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import npu

# Every int8 pair: a = all 256 values per row, b = one value per row.
A = np.tile(np.arange(-128, 128, dtype=np.int8), (256, 1))
B = np.repeat(np.arange(-128, 128, dtype=np.int8), 256).reshape(256, 256)


def _binary(op: str, elem: int, shape=(256, 256)):
    vals = [helper.make_tensor_value_info(n, elem, list(shape)) for n in ("a", "b", "c")]
    graph = helper.make_graph([helper.make_node(op, ["a", "b"], ["c"])], "g", vals[:2], vals[2:])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


@pytest.mark.parametrize("op, ref", [("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply),
                                     ("Max", np.maximum), ("Min", np.minimum)])
def test_int8_wraps_like_numpy(op, ref):
    (c,), _ = npu.compile(_binary(op, TensorProto.INT8))(A, B)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(c, ref(A, B))


def test_int8_div_truncates_and_wraps():
    b = np.where(B == 0, np.int8(1), B)
    (c,), _ = npu.compile(_binary("Div", TensorProto.INT8))(A, b)
    want = np.trunc(A.astype(np.float64) / b).astype(np.int64)
    want = ((want + 128) % 256 - 128).astype(np.int8)   # -128 / -1 wraps to -128
    np.testing.assert_array_equal(c, want)


@pytest.mark.parametrize("elem, dtype", [(TensorProto.INT16, np.int16), (TensorProto.UINT16, np.uint16)])
def test_16_bit_div_is_exact(elem, dtype):
    """The extremes of the type and near-integer quotients (a = n b - 1)."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(0)
    b = rng.integers(1, info.max, 4096).astype(dtype)
    a = rng.integers(info.min, info.max, 4096).astype(dtype)
    n = rng.integers(1, 40, 4096)
    near = (n * b.astype(np.int64) - 1)
    a = np.where((near <= info.max) & (np.arange(4096) % 2 == 0), near, a).astype(dtype)
    a[:3], b[:3] = [info.max, info.min, info.max], [1, 1, info.max]
    (c,), _ = npu.compile(_binary("Div", elem, (4096,)))(a, b)
    want = np.trunc(a.astype(np.float64) / b.astype(np.float64)).astype(dtype)
    np.testing.assert_array_equal(c, want)


