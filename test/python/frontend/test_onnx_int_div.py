"""Integer Div of 32/64-bit integers (`onnx_int_div`): exact truncated
quotients over the whole i32 range, against numpy in int64."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import npu

I32 = np.iinfo(np.int32)
N = 8192


def _div_model(elem, n):
    vals = [helper.make_tensor_value_info(k, elem, [n]) for k in ("a", "b", "q")]
    graph = helper.make_graph([helper.make_node("Div", ["a", "b"], ["q"])], "g", vals[:2], vals[2:])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def _operands(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Magnitudes spread over every scale, near-integer quotients (a = n b
    +- 1, n b), and the extremes."""
    rng = np.random.default_rng(seed)
    scale = 2.0 ** rng.uniform(0, 31, (2, N))
    a, b = (np.clip(np.round(rng.choice([-1, 1], N) * s), I32.min, I32.max).astype(np.int64) for s in scale)
    b[b == 0] = 1
    k = np.arange(N) % 4
    q = rng.integers(-(2**12), 2**12, N)
    near = q * b + np.where(k == 1, 1, np.where(k == 2, -1, 0))
    fits = (near >= I32.min) & (near <= I32.max) & (k != 3)
    a = np.where(fits, near, a)
    edges = [(I32.max, 1), (I32.max, -1), (I32.min, 1), (I32.min, 2), (I32.min, I32.max),
             (I32.max, I32.min), (I32.max, I32.max), (I32.min + 1, -1), (0, 5), (-7, 2), (7, -2),
             (I32.max - 1, I32.max), (2**24 + 1, 1), (-(2**24) - 3, 2), (I32.max, 3), (I32.min, -3)]
    for i, (x, y) in enumerate(edges):
        a[i], b[i] = x, y
    return a.astype(np.int32), b.astype(np.int32)


@pytest.mark.parametrize("seed", [0, 1])
def test_int32_div_is_exact(seed):
    a, b = _operands(seed)
    (q,), _ = npu.compile(_div_model(TensorProto.INT32, N))(a, b)
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    want = np.sign(a64) * np.sign(b64) * (np.abs(a64) // np.abs(b64))  # truncated toward zero
    bad = np.flatnonzero(q != want)
    assert bad.size == 0, [(int(a[i]), int(b[i]), int(q[i]), int(want[i])) for i in bad[:5]]


def test_int64_div_runs_as_i32():
    a = np.array([-3, 3, -3, 3, 10**9, -(10**9)], np.int64)
    b = np.array([2, 2, -2, -2, 7, 13], np.int64)
    (q,), _ = npu.compile(_div_model(TensorProto.INT64, 6))(a, b)
    assert q.dtype == np.int64
    np.testing.assert_array_equal(q, np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b)))
