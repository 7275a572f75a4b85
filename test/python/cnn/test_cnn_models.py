"""The CNN model builders (`npu.frontend.cnn`): torchvision's structure and
node counts, onnxruntime runs them, their BatchNormalizations fold exactly;
and whole tiny networks compiled and simulated against onnxruntime."""

from __future__ import annotations

import collections
import copy

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import npu

from cnn_onnx import compare_npu, ort_run
from npu.frontend.cnn import make_divisible, mobilenet_v2, resnet, scope

TINY = {
    "resnet18": lambda **kw: resnet(18, size=32, width=8, classes=10, layers=[1, 1, 1, 1], **kw),
    "resnet50": lambda **kw: resnet(50, size=32, width=8, classes=10, layers=[1, 1, 1, 1], **kw),
    "mobilenet_v2": lambda **kw: mobilenet_v2(size=32, width_mult=0.25, classes=10, **kw),
}


def _ops(model) -> dict[str, int]:
    return dict(collections.Counter(n.op_type for n in model.graph.node))


def test_torchvision_node_counts():
    """ResNet-18 has 20 Convs, ResNet-50 53, MobileNetV2 52 (issue 27); the
    counts do not depend on width or input size."""
    r18, r50 = resnet(18, size=32, width=4), resnet(50, size=32, width=4)
    mb = mobilenet_v2(size=32, width_mult=0.25)
    assert _ops(r18)["Conv"] == 20 and _ops(r18)["Add"] == 8 and _ops(r18)["MaxPool"] == 1
    assert _ops(r50)["Conv"] == 53 and _ops(r50)["Add"] == 16
    assert _ops(mb)["Conv"] == 52 and _ops(mb)["Clip"] == 35
    for m in (r18, r50, mb):
        assert _ops(m)["BatchNormalization"] == _ops(m)["Conv"]
        assert [n.op_type for n in m.graph.node][-3:] == ["GlobalAveragePool", "Flatten", "Gemm"]


def test_torchscript_names():
    assert scope("layer1.0.conv1") == "/layer1/layer1.0/conv1"
    assert scope("layer2.0.downsample.0") == "/layer2/layer2.0/downsample/downsample.0"
    assert scope("features.1.conv.0.0") == "/features/features.1/conv/conv.0/conv.0.0"
    names = [n.name for n in resnet(18, size=32, width=4).graph.node]
    assert names[:4] == ["/conv1/Conv", "/bn1/BatchNormalization", "/relu/Relu", "/maxpool/MaxPool"]
    assert "/layer2/layer2.0/downsample/downsample.0/Conv" in names
    assert make_divisible(32 * 0.25) == 8 and make_divisible(1280 * 1.4) == 1792


@pytest.mark.parametrize("name", list(TINY))
def test_batchnorm_fold_matches_unfolded(name):
    """The builder's own fold (batchnorm=False) and the compiler's
    (`fold_batchnorms`) give what onnxruntime computes with the BNs."""
    from npu.frontend.onnx_batchnorm import fold_batchnorms

    with_bn, without = TINY[name](), TINY[name](batchnorm=False)
    folded = copy.deepcopy(with_bn)
    assert len(fold_batchnorms(folded)) == _ops(with_bn)["BatchNormalization"]
    assert "BatchNormalization" not in _ops(folded) and "BatchNormalization" not in _ops(without)
    x = {"input": np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)}
    want = ort_run(with_bn, x)[0]
    for other in (folded, without):
        np.testing.assert_allclose(ort_run(other, x)[0], want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", list(TINY))
def test_tiny_network_matches_onnxruntime(name):
    model = TINY[name]()
    x = {"input": np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)}
    # The cube multiplies in f16: logits within a few f16 ulps of their scale.
    compare_npu(model, x, atol=3e-2, rtol=3e-2)


def test_an_f32_global_pool_of_a_small_map_reduces_it_as_it_lies():
    """512 channels of 2 x 2 pixels (ResNet's head at a 64 x 64 input): the
    NC1HWC0 map is reduced down its pixels; its NCHW form (rows of 4 pixels,
    under one block) was held whole in UB, and the model did not compile."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((512, 64, 3, 3)) / 24).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]),
             helper.make_node("GlobalAveragePool", ["c"], ["y"], name="gap")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                         [1, 64, 2, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                             [1, 512, 1, 1])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    x = rng.standard_normal((1, 64, 2, 2)).astype(np.float32)
    kernel = npu.compile(model)
    assert "ascend.reduce_sum" in kernel.stages["ascend"]
    (got,), _ = kernel(x)
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)
