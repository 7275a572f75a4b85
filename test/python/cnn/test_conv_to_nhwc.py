"""A depthwise conv's NC1HWC0 result permuted to NHWC for a LayerNorm over
channels (ConvNeXt's block): the conversion to NCHW and the permute are one
transpose of whole C0 runs (`canonicalize/transposes._refined`), on one core
and on many, against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from cnn_onnx import compare_npu, make


def _block(c: int, hw: int):
    rng = np.random.default_rng(11)
    inits = [numpy_helper.from_array(rng.standard_normal((c, 1, 3, 3)).astype(np.float32) / 3, "dw"),
             numpy_helper.from_array(rng.standard_normal(c).astype(np.float32) / 10, "dw_b"),
             numpy_helper.from_array(rng.uniform(0.5, 1.5, c).astype(np.float32), "g"),
             numpy_helper.from_array(rng.standard_normal(c).astype(np.float32) / 10, "b")]
    nodes = [helper.make_node("Conv", ["x", "dw", "dw_b"], ["conv"], name="dwconv", group=c,
                              kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Transpose", ["conv"], ["nhwc"], name="to_nhwc", perm=[0, 2, 3, 1]),
             helper.make_node("LayerNormalization", ["nhwc", "g", "b"], ["y"], name="ln", axis=-1)]
    return make(nodes, [("x", TensorProto.FLOAT, [1, c, hw, hw])], [("y", TensorProto.FLOAT, [1, hw, hw, c])],
                inits)


@pytest.mark.parametrize("cores", [1, 4])
@pytest.mark.parametrize("c", [48, 16], ids=["three-blocks", "one-block"])
def test_depthwise_conv_to_nhwc_layernorm(c, cores):
    x = np.random.default_rng(1).standard_normal((1, c, 8, 8)).astype(np.float32)
    compare_npu(_block(c, 8), {"x": x}, atol=2e-3, rtol=2e-3, cores=cores)
