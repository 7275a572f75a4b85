"""AlexNet's and VGG's classifier: a Linear over the flattened 256x6x6 or
512x7x7 map (9216 and 25088 features), against onnxruntime. The row of
features goes to Nz on the device; its 16-row strip and transpose would need
589,824 (1.6M) bytes of UB, so it was refused ("rows of 9216 elements are
too wide"). A single row needs no strip: it moves in runs of column blocks,
two UB buffers taken in turn."""

from __future__ import annotations

import numpy as np
import pytest

from cnn_onnx import compare_npu, make

RNG = np.random.default_rng(5)


@pytest.mark.parametrize("cores", [1, None], ids=["one-core", "all-cores"])
@pytest.mark.parametrize("c, hw", [(256, 6), (512, 7)], ids=["alexnet", "vgg"])
def test_flatten_gemm_of_wide_rows(c, hw, cores):
    from onnx import helper, numpy_helper

    features, classes = c * hw * hw, 32
    inits = [numpy_helper.from_array((RNG.standard_normal((classes, features)) * 0.01)
                                     .astype(np.float32), "fc.weight"),
             numpy_helper.from_array(RNG.standard_normal(classes).astype(np.float32), "fc.bias")]
    nodes = [helper.make_node("Flatten", ["x"], ["f"], name="/Flatten", axis=1),
             helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"],
                              name="/classifier/classifier.0/Gemm", transB=1)]
    model = make(nodes, [("x", 1, [1, c, hw, hw])], [("y", 1, [1, classes])], inits)
    x = RNG.standard_normal((1, c, hw, hw)).astype(np.float32)
    # f16 operands on the cube, 25088-term sums: ~1e-3 relative
    compare_npu(model, {"x": x}, atol=2e-3, rtol=2e-2, cores=cores)
