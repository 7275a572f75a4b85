"""ReduceL2 (ConvNeXt V2's global response normalization: the L2 norm of
each channel over the map) and ReduceL1, written as ReduceSumSquare + Sqrt
and Abs + ReduceSum (`onnx_reduce_norms`), against onnxruntime, with axes as
an attribute (opset 17) and as an input (opset 18)."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import helper

import npu
from onnx_models import model


@pytest.mark.parametrize("op", ["ReduceL2", "ReduceL1"])
@pytest.mark.parametrize("opset", [17, 18])
def test_norm_reduction_over_the_map_matches_onnxruntime(op, opset):
    """x [1, 4, 4, 32] (NHWC, as ConvNeXt V2's block has it) -> the norm over
    H, W per channel, kept [1, 1, 1, 32], then x / norm."""
    if opset >= 18:
        nodes = [helper.make_node(op, ["x", "axes"], ["n"], name="norm", keepdims=1)]
        inits = [("axes", np.array([1, 2], np.int64))]
    else:
        nodes = [helper.make_node(op, ["x"], ["n"], name="norm", axes=[1, 2], keepdims=1)]
        inits = []
    nodes.append(helper.make_node("Div", ["x", "n"], ["y"], name="scale"))
    m = model(nodes, [("x", [1, 4, 4, 32])], [("y", [1, 4, 4, 32])], inits, opset=opset)
    x = np.random.default_rng(opset).standard_normal((1, 4, 4, 32)).astype(np.float32)
    (y,), report = npu.compile(m, cores=1)(x)
    (want,) = onnxruntime.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=1e-3, atol=1e-4)
    assert report["hazards"] == []
