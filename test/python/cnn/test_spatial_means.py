"""`ReduceMean` over H and W (torchvision's ShuffleNetV2 and MnasNet heads,
`x.mean([2, 3])`) reaches the kernel `GlobalAveragePool` reaches (GoogLeNet's
and RegNet's heads): the pool on the conv's NC1HWC0 map, not a reduction of
short NCHW rows after a transpose (122,649 -> 28,756 cycles for this head
on one core). Checked against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from cnn_onnx import compile_npu, make, ort_run

F = TensorProto.FLOAT


def _head(kind: str, keepdims: int = 0, opset: int = 17, c: int = 64, hw: int = 7):
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((c, 16, 1, 1)) / 4).astype(np.float32), "w")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["m"], name="conv", kernel_shape=[1, 1]),
             helper.make_node("Relu", ["m"], ["r"], name="relu")]
    if kind == "gap":
        nodes += [helper.make_node("GlobalAveragePool", ["r"], ["p"], name="gap")]
        nodes += [helper.make_node("Flatten", ["p"], ["y"], name="flat", axis=1)] if not keepdims else []
        out = "y" if not keepdims else "p"
    elif opset >= 18:  # axes as an input
        inits.append(numpy_helper.from_array(np.array([-1, 2], np.int64), "axes"))
        nodes.append(helper.make_node("ReduceMean", ["r", "axes"], ["y"], name="mean",
                                      keepdims=keepdims))
        out = "y"
    else:
        nodes.append(helper.make_node("ReduceMean", ["r"], ["y"], name="mean", axes=[2, 3],
                                      keepdims=keepdims))
        out = "y"
    dims = [1, c, 1, 1] if keepdims else [1, c]
    return make(nodes, [("x", F, [1, 16, hw, hw])], [(out, F, dims)], inits, opset=opset)


@pytest.mark.parametrize("keepdims,opset", [(0, 17), (1, 17), (0, 18)])
def test_a_spatial_mean_is_the_global_pool(keepdims, opset):
    mean, gap = _head("mean", keepdims, opset), _head("gap", keepdims)
    k_mean, k_gap = compile_npu(mean, 1), compile_npu(gap, 1)
    # no transpose of the map back to NCHW: it is summed as the conv left it
    assert (k_mean.stages["ascend"].count('"ascend.transpose"')
            == k_gap.stages["ascend"].count('"ascend.transpose"') <= 2)
    x = np.random.default_rng(1).standard_normal((1, 16, 7, 7)).astype(np.float32)
    (got,), report = k_mean(x)
    (want,) = ort_run(mean, {"x": x})
    np.testing.assert_allclose(got, want, atol=2e-3, rtol=2e-3)
    assert report["cycles"] == k_gap(x)[1]["cycles"]
