"""MatMuls with 1-D operands, batches of tiny matrices and batches of rows
against one matrix (`onnx_matmul_shapes`), against numpy's matmul."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import npu

F16 = TensorProto.FLOAT16
F32 = TensorProto.FLOAT


def _matmul(a_shape, b_shape, elem):
    out = list(np.matmul(np.zeros(a_shape), np.zeros(b_shape)).shape)
    vals = [helper.make_tensor_value_info(n, elem, s) for n, s in (("a", a_shape), ("b", b_shape), ("c", out))]
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "b"], ["c"])], "g", vals[:2], vals[2:])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def _run(a_shape, b_shape, elem):
    rng = np.random.default_rng(1)
    dtype = np.float32 if elem == F32 else np.float16
    a, b = (rng.standard_normal(s).astype(dtype) for s in (a_shape, b_shape))
    (c,), _ = npu.compile(_matmul(a_shape, b_shape, elem))(a, b)
    return a, b, c


@pytest.mark.parametrize("a_shape, b_shape", [([5], [2, 5, 3]), ([2, 2, 4, 3], [3]), ([7], [7]),
                                              ([2, 3, 4], [2, 4, 3]), ([3, 1, 2, 4], [2, 4, 2])])
def test_f32_vectors_and_tiny_batches_are_f32_exact(a_shape, b_shape):
    """On the vector unit in f32: within f32 rounding of the sums."""
    a, b, c = _run(a_shape, b_shape, F32)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert c.shape == want.shape
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("a_shape, b_shape, elem", [([4, 3, 4], [4, 4, 3], F16),
                                                    ([8, 3, 4], [8, 4, 600], F32),
                                                    ([6], [3, 6, 2], F16)])
def test_padded_on_the_cube(a_shape, b_shape, elem):
    """f16 operands, or too many products for the vector form: zero-padded
    along K and N for the cube, which rounds operands to f16 and sums in f32."""
    a, b, c = _run(a_shape, b_shape, elem)
    want = np.matmul(a.astype(np.float16).astype(np.float64), b.astype(np.float16).astype(np.float64))
    assert c.shape == want.shape
    tol = 2e-3 if elem == F16 else 1e-5  # an f16 result is rounded once more
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=tol, atol=tol)


def _constant_b_matmul(a_shape, b, elem):
    out = list(a_shape[:-1]) + [b.shape[1]]
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["c"])], "g",
        [helper.make_tensor_value_info("a", elem, a_shape)], [helper.make_tensor_value_info("c", elem, out)],
        [numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


@pytest.mark.parametrize("a_shape, elem", [([1, 4, 4, 64], F32), ([2, 3, 8, 32], F16), ([3, 20, 32], F32)])
def test_rows_of_a_batch_against_one_matrix_are_one_product(a_shape, elem):
    """ConvNeXt's pointwise layers on NHWC maps: B is one matrix, stored and
    read once, not once per matrix of A's batch."""
    rng = np.random.default_rng(2)
    dtype = np.float32 if elem == F32 else np.float16
    a = rng.standard_normal(a_shape).astype(dtype)
    b = rng.standard_normal((a_shape[-1], 48)).astype(np.float16).astype(dtype)
    kernel = npu.compile(_constant_b_matmul(a_shape, b, elem), cores=1)
    ascend = kernel.stages["ascend"]
    assert "ascend.batch_matmul" not in ascend and ascend.count('"ascend.matmul"') == 1
    (c,), _ = kernel(a)
    want = np.matmul(a.astype(np.float16).astype(np.float64), b.astype(np.float64))
    assert c.shape == want.shape
    tol = 2e-3 if elem == F16 else 1e-5
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=tol, atol=tol)
