"""ONNX MaxPool / AveragePool / GlobalAveragePool / GlobalMaxPool / ReduceMean
over H and W, compiled and simulated, against onnxruntime: every attribute
torch-mlir imports (kernel, strides, pads, dilations, ceil_mode,
count_include_pad), odd sizes, partial plane groups, f16 and f32."""

from __future__ import annotations

import numpy as np
import pytest

from pool_models import F16, F32, NUMPY, compare, pool_model

CASES = [
    # (op, input shape, attributes)
    ("MaxPool", [1, 3, 9, 9], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("MaxPool", [2, 5, 9, 11], dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)),
    ("MaxPool", [1, 20, 9, 11], dict(kernel_shape=[2, 2], dilations=[2, 2])),
    ("MaxPool", [1, 17, 13, 7], dict(kernel_shape=[3, 2], strides=[1, 2], pads=[1, 0, 1, 1])),
    ("MaxPool", [1, 3, 5, 5], dict(kernel_shape=[3, 3], strides=[2, 2])),
    ("MaxPool", [1, 4, 7, 7], dict(kernel_shape=[1, 1], strides=[2, 2])),
    ("AveragePool", [1, 3, 9, 9], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("AveragePool", [1, 17, 9, 9], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                        count_include_pad=1)),
    ("AveragePool", [1, 3, 9, 9], dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)),
    ("AveragePool", [1, 6, 4, 4], dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
    ("AveragePool", [2, 3, 11, 10], dict(kernel_shape=[3, 2], strides=[2, 3], pads=[0, 1, 2, 1])),
    ("MaxPool", [3, 1, 17, 19], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                     ceil_mode=1)),
    ("MaxPool", [1, 5, 20, 20], dict(kernel_shape=[3, 3], dilations=[2, 2], pads=[2, 2, 2, 2])),
    ("MaxPool", [1, 2, 64, 3], dict(kernel_shape=[2, 2], strides=[2, 1])),
    ("AveragePool", [2, 3, 15, 15], dict(kernel_shape=[5, 5], strides=[3, 3], pads=[2, 2, 2, 2],
                                         ceil_mode=1)),
    ("AveragePool", [1, 1, 8, 40], dict(kernel_shape=[1, 7], pads=[0, 3, 0, 3])),
    ("GlobalAveragePool", [1, 40, 7, 7], {}),
    ("GlobalMaxPool", [2, 9, 5, 3], {}),
]


def _name(case) -> str:
    op, shape, attrs = case
    return f"{op}-{'x'.join(map(str, shape))}-" + "-".join(f"{k}{v}" for k, v in attrs.items())


@pytest.mark.parametrize("elem", [F32, F16], ids=["f32", "f16"])
@pytest.mark.parametrize("case", CASES, ids=[_name(c) for c in CASES])
def test_pool_matches_onnxruntime(case, elem):
    op, shape, attrs = case
    x = np.random.default_rng(len(shape) + sum(shape)).standard_normal(shape).astype(NUMPY[elem])
    # f32 averages divide where we multiply by 1/count (1 ulp); f16 sums add
    # in f16 (a few half-ulps of the sum).
    exact = op.endswith("MaxPool")
    atol = 0.0 if exact else (2e-6 if elem == F32 else 4e-3)
    compare(pool_model(op, shape, elem, **attrs), x, atol=atol)


def test_reduce_mean_over_h_and_w():
    """ReduceMean over axes [2, 3] (a CNN head written without GlobalAveragePool)."""
    import onnx
    from onnx import helper

    x = helper.make_tensor_value_info("x", F32, [1, 24, 6, 5])
    y = helper.make_tensor_value_info("y", F32, None)
    node = helper.make_node("ReduceMean", ["x"], ["y"], name="mean", axes=[2, 3], keepdims=1)
    model = helper.make_model(helper.make_graph([node], "mean", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    model = onnx.shape_inference.infer_shapes(model)
    data = np.random.default_rng(1).standard_normal([1, 24, 6, 5]).astype(np.float32)
    compare(model, data, atol=2e-6)


def test_large_map_is_tiled_in_bands():
    """ResNet's stem pool on a 64-channel 112x112 map: many bands, never refused."""
    shape = [1, 64, 112, 112]
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float16)
    report = compare(pool_model("MaxPool", shape, F16, kernel_shape=[3, 3], strides=[2, 2],
                                pads=[1, 1, 1, 1]), x, atol=0.0)
    assert report["cycles"] > 0


def test_wide_map_in_column_slices():
    """A map too wide for one output row of a tile in UB goes through GM in
    column slices, end to end from ONNX (with pads at both borders)."""
    shape = [1, 20, 5, 1200]
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    compare(pool_model("AveragePool", shape, F32, kernel_shape=[3, 3], strides=[1, 2],
                       pads=[1, 1, 1, 1]), x, atol=2e-6)


@pytest.mark.parametrize("elem", [F32, F16], ids=["f32", "f16"])
@pytest.mark.parametrize("op,attrs", [
    ("MaxPool", dict(kernel_shape=[3], strides=[2], pads=[1, 1])),
    ("AveragePool", dict(kernel_shape=[4], strides=[3], pads=[2, 1])),
    ("AveragePool", dict(kernel_shape=[2], strides=[2], ceil_mode=1)),
], ids=["max", "avg", "avg-ceil"])
def test_1d_pools(op, attrs, elem):
    """MaxPool / AveragePool on NCL maps (torch-mlir's pooling_ncw_*) pool
    as NC1L with a 1 x k window."""
    shape = [2, 5, 37]
    x = np.random.default_rng(6).standard_normal(shape).astype(NUMPY[elem])
    atol = 0.0 if op == "MaxPool" else (2e-6 if elem == F32 else 4e-3)
    compare(pool_model(op, shape, elem, **attrs), x, atol=atol)
