"""GoogLeNet's maxpool4 at 64x64: a ceil-mode MaxPool of [1, 832, 4, 4] f32,
whose input the frontend pads to [1, 832, 4, 8] by an insert_slice of rows
of 4 values. The element gather held both tensors in UB (1.65 MB) and was
refused; it now runs on chunks of channels (`npu-lower-slices`). Exact
against onnxruntime on one core and on the chip."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from cnn_onnx import compile_npu, make, ort_run

F = TensorProto.FLOAT


@pytest.mark.parametrize("cores", [1, 32])
def test_a_ceil_mode_pool_of_832_small_planes(cores):
    pool = helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2],
                            strides=[2, 2], ceil_mode=1)
    model = make([pool], [("x", F, [1, 832, 4, 4])], [("y", F, [1, 832, 2, 2])])
    x = np.random.default_rng(0).standard_normal((1, 832, 4, 4)).astype(np.float32)
    (got,), _ = compile_npu(model, cores)(x)
    (want,) = ort_run(model, {"x": x})
    np.testing.assert_array_equal(got, want)
