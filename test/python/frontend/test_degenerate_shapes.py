"""Shapes at the edge of what a layer sees: one row (a batch-1 classifier
head's softmax, a layernorm over one token) and rank-0 scalar tensors (scalar
inputs and outputs, reductions to a scalar, Clip bounds), against onnxruntime.

With one row a reduction's `[1, 1]` result has one element, like a broadcast
scalar; the fused kernels must still read it as the row's column (it used
to be an internal KeyError in npu-lower). A rank-0 tensor has no dimension
to collapse: its 1-D view is an expand_shape (it used to be an invalid
memref.collapse_shape).
"""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import helper

import npu
from onnx_models import model

TRANSCENDENTAL = (1e-4, 1e-5)


def softmax(shape):
    return model([helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=-1)],
                 [("x", list(shape))], [("y", list(shape))])


def layernorm(shape):
    rng = np.random.default_rng(1)
    n = shape[-1]
    return model([helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], name="ln",
                                   axis=-1, epsilon=1e-5)],
                 [("x", list(shape))], [("y", list(shape))],
                 [("g", rng.standard_normal(n).astype(np.float32)),
                  ("b", rng.standard_normal(n).astype(np.float32))])


def scalar_input():
    return model([helper.make_node("Mul", ["x", "s"], ["y"], name="scale")],
                 [("x", [4, 8]), ("s", [])], [("y", [4, 8])])


def scalar_output():
    return model([helper.make_node("ReduceSum", ["x"], ["y"], name="total", keepdims=0)],
                 [("x", [64])], [("y", [])], opset=17)


def scalar_to_scalar():
    return model([helper.make_node("Neg", ["x"], ["n"], name="neg"),
                  helper.make_node("Add", ["n", "x"], ["y"], name="add")],
                 [("x", [])], [("y", [])])


def clip_scalar_bounds():
    return model([helper.make_node("Clip", ["x", "lo", "hi"], ["y"], name="clip")],
                 [("x", [5, 16]), ("lo", []), ("hi", [])], [("y", [5, 16])])


CASES = {
    "softmax-1x1000": softmax((1, 1000)),
    "softmax-1x64": softmax((1, 64)),
    "softmax-1x1x64": softmax((1, 1, 64)),
    "layernorm-1x64": layernorm((1, 64)),
    "layernorm-1x1x768": layernorm((1, 1, 768)),
    "scalar-input": scalar_input(),
    "scalar-output": scalar_output(),
    "scalar-to-scalar": scalar_to_scalar(),
    "clip-scalar-bounds": clip_scalar_bounds(),
}


def _feeds(m, rng) -> dict[str, np.ndarray]:
    feeds = {}
    for value in m.graph.input:
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        feeds[value.name] = np.asarray(rng.standard_normal(shape) * 2, np.float32)
    if "lo" in feeds:  # Clip's bounds in order
        feeds["lo"], feeds["hi"] = np.array(-0.5, np.float32), np.array(0.75, np.float32)
    return feeds


@pytest.mark.parametrize("case", sorted(CASES))
def test_degenerate_shape_matches_onnxruntime(case):
    m = CASES[case]
    kernel = npu.compile(m)
    feeds = _feeds(m, np.random.default_rng(11))
    outputs, report = kernel(*[feeds[n] for n in kernel.input_names])
    want = onnxruntime.InferenceSession(m.SerializeToString()).run(None, feeds)
    rtol, atol = TRANSCENDENTAL
    for got, expected in zip(outputs, want):
        assert got.shape == expected.shape and got.dtype == expected.dtype
        scale = max(1.0, float(np.abs(expected).max()))
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol * scale)
    assert report["cycles"] > 0
