"""Slice with negative steps and starts past the end (`onnx_slice_steps`)
against numpy slicing, with ONNX's clamped bounds."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import npu

BIG = np.iinfo(np.int64).max


@pytest.mark.parametrize("starts, ends, axes, steps", [
    ([BIG, 3], [-BIG - 1, 0], [0, 2], [-1, -2]),          # whole axis reversed; clamped start
    ([1, 7, 4], [5, 0, 1], [0, 1, 2], [2, -3, -1]),       # a positive step kept beside two negative
    ([9], [-7], [-2], [-2]),                               # start past the end, negative axis
])
def test_negative_steps_match_numpy(starts, ends, axes, steps):
    shape = [6, 8, 5]
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    index = [slice(None)] * 3
    for s, e, a, st in zip(starts, ends, axes, steps):
        index[a % 3] = slice(s, None if e < -shape[a % 3] else e, st)
    want = x[tuple(index)]
    inits = [numpy_helper.from_array(np.array(v, np.int64), n)
             for n, v in (("s", starts), ("e", ends), ("a", axes), ("t", steps))]
    graph = helper.make_graph([helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(want.shape))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)
    (y,), _ = npu.compile(model)(x)
    np.testing.assert_array_equal(y, want)
