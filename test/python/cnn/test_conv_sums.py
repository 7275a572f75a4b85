"""`onnx_conv_sums`: Add(conv 1x1 (h), conv 1x1 (x)) as one conv over
Concat(h, x), each part's producer writing its C1 blocks straight into the
concat (`slices.concat`). ResNet-50's layer1.0 on one core: 1,747,758 ->
1,728,160 cycles."""

from __future__ import annotations

import numpy as np
import pytest

import npu
from npu.frontend.onnx_conv_sums import fold_summed_convs

from cnn_onnx import make, ort_run


def _block(c: int, hw: int, cout: int, down_stride: int = 1):
    """A 3x3 conv + ReLU (h), then Relu(conv3 1x1 (h) + downsample 1x1 (x)),
    f16, biases on both 1x1s (a ResNet bottleneck's end, BN folded)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def init(name, shape, scale):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float16), name)

    inits = [init("w1", (c, c, 3, 3), 1 / np.sqrt(9 * c)), init("w3", (cout, c, 1, 1), 1 / np.sqrt(c)),
             init("wd", (cout, c, 1, 1), 1 / np.sqrt(c)), init("b3", (cout,), 0.1), init("bd", (cout,), 0.1)]
    out_hw = (hw - 1) // down_stride + 1
    nodes = [helper.make_node("Conv", ["x", "w1"], ["h0"], name="conv1", kernel_shape=[3, 3],
                              pads=[1] * 4, strides=[down_stride] * 2),
             helper.make_node("Relu", ["h0"], ["h"], name="relu1"),
             helper.make_node("Conv", ["h", "w3", "b3"], ["a"], name="conv3", kernel_shape=[1, 1]),
             helper.make_node("Conv", ["x", "wd", "bd"], ["d"], name="down", kernel_shape=[1, 1],
                              strides=[down_stride] * 2),
             helper.make_node("Add", ["a", "d"], ["s"], name="add"),
             helper.make_node("Relu", ["s"], ["y"], name="relu2")]
    return make(nodes, [("x", TensorProto.FLOAT16, [1, c, hw, hw])],
                [("y", TensorProto.FLOAT16, [1, cout, out_hw, out_hw])], inits)


@pytest.mark.parametrize("cores, seed", [(1, 1), (4, 2)])  # 4: the conv's parts cut over cores
def test_summed_convs_fold_into_one_conv_checked_against_onnxruntime(cores: int, seed: int):
    model = _block(32, 14, 128)
    x = np.random.default_rng(seed).standard_normal((1, 32, 14, 14)).astype(np.float16)
    want = ort_run(model, {"x": x})[0]
    kernel = npu.compile(model, cores=cores)
    (got,), report = kernel(x, strict=True)
    assert report["hazards"] == []
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), atol=2e-2, rtol=1e-2)
    ascend = kernel.stages["ascend"]
    assert ascend.count('"ascend.conv2d"') == 2  # the 3x3 and the one 1x1
    # both parts' producers (the 3x3's drain, x's NC1HWC0 transpose) write
    # their blocks of the concat in place: nothing is copied
    assert ascend.count('"ascend.insert_slice"') == 0


def test_only_stride_one_sums_whose_concat_is_smaller_fold():
    """A strided downsample (ResNet's later blocks), or inputs as wide as the
    output (the concat would move more bytes than the residual), stay two convs."""
    assert fold_summed_convs(_block(32, 14, 128, down_stride=2)) == []
    assert fold_summed_convs(_block(32, 14, 64)) == []
    assert fold_summed_convs(_block(32, 14, 128)) == ["add"]
