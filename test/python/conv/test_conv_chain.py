"""Consecutive convs keep NC1HWC0: a ResNet basic block (conv, ReLU, conv,
residual Add, ReLU) and a Clip (ReLU6) run on the conv results' NC1HWC0
buffers; the only layout conversions are the block's input and output."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npu
from conv_cases import ort_run

CUBE = dict(rtol=3e-2, atol=3e-2)


def basic_block(c=24, h=10, w=10, clip=False, seed=0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)

    def weight(name, cout, cin, k):
        return numpy_helper.from_array((rng.standard_normal((cout, cin, k, k)) /
                                        np.sqrt(cin * k * k)).astype(np.float32), name)

    inits = [weight("w1", c, c, 3), weight("w2", c, c, 3),
             numpy_helper.from_array(rng.standard_normal(c).astype(np.float32) * 0.1, "b1"),
             numpy_helper.from_array(rng.standard_normal(c).astype(np.float32) * 0.1, "b2")]
    act = (lambda i, o, n: helper.make_node("Clip", [i, "lo", "hi"], [o], name=n)) if clip else \
        (lambda i, o, n: helper.make_node("Relu", [i], [o], name=n))
    if clip:
        inits += [numpy_helper.from_array(np.array(0, np.float32), "lo"),
                  numpy_helper.from_array(np.array(6, np.float32), "hi")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             act("c1", "r1", "relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "c1"], ["s"], name="add"),
             act("s", "y", "relu2")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                         [1, c, h, w])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, h, w])],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


@pytest.mark.parametrize("clip", [False, True])
def test_basic_block_stays_nc1hwc0(clip):
    m = basic_block(clip=clip)
    x = np.random.default_rng(1).standard_normal((1, 24, 10, 10)).astype(np.float32)
    kernel = npu.compile(m)
    ascend = kernel.stages["ascend"]
    assert ascend.count('"ascend.conv2d"') == 2
    # in: one transpose (+ its channel padding); out: one transpose and a slice
    assert ascend.count('"ascend.transpose"') == 2
    (got,), _ = kernel(x)
    np.testing.assert_allclose(got, ort_run(m, {"x": x})[0], **CUBE)


def pooled_chain(c=24, h=15, w=13, pool="MaxPool", seed=0) -> onnx.ModelProto:
    """conv, ReLU, a pool, conv, residual Add with the pool's result: the
    stem of a ResNet and its first block, in miniature."""
    rng = np.random.default_rng(seed)
    w1 = numpy_helper.from_array((rng.standard_normal((c, 3, 3, 3)) / 5).astype(np.float32), "w1")
    w2 = numpy_helper.from_array((rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32),
                                 "w2")
    attrs = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    if pool == "AveragePool":
        attrs["count_include_pad"] = 0
    ho, wo = (h + 1) // 2, (w + 1) // 2
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node(pool, ["r1"], ["p"], name="pool", **attrs),
             helper.make_node("Conv", ["p", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "p"], ["y"], name="add")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT16,
                                                                         [1, 3, h, w])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, c, ho, wo])],
                              [numpy_helper.from_array(t.astype(np.float16), n) for t, n in
                               ((numpy_helper.to_array(w1), "w1"), (numpy_helper.to_array(w2), "w2"))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


@pytest.mark.parametrize("pool", ["MaxPool", "AveragePool"])
def test_pool_between_convs_stays_nc1hwc0(pool):
    """An f16 pool of a conv's result pools NC1HWC0 as it lies: no layout
    conversion around it, and the residual Add of its result with the next
    conv's runs on NC1HWC0 too (one transpose in, one out)."""
    m = pooled_chain(pool=pool)
    x = np.random.default_rng(2).standard_normal((1, 3, 15, 13)).astype(np.float16)
    kernel = npu.compile(m)
    ascend = kernel.stages["ascend"]
    assert ascend.count('layout = "nc1hwc0"') >= 1 and ascend.count('"ascend.pool2d"') == 1
    pool_line = next(line for line in ascend.splitlines() if '"ascend.pool2d"' in line)
    assert 'layout = "nc1hwc0"' in pool_line
    assert ascend.count('"ascend.transpose"') == 2
    (got,), _ = kernel(x)
    np.testing.assert_allclose(got.astype(np.float32), ort_run(m, {"x": x})[0].astype(np.float32),
                               **CUBE)


@pytest.mark.parametrize("pool", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pool_of_a_conv_reduces_the_pixels(pool):
    """A global pool of a conv's f16 result reduces down the pixels of its
    NC1HWC0 buffer (axis 1 of [N*C1, H*W, 16]), with no conversion before."""
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array((rng.standard_normal((40, 8, 3, 3)) / 8).astype(np.float16), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node(pool, ["c"], ["y"], name="pool")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT16,
                                                                         [1, 8, 7, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 40, 1, 1])], [w])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    kernel = npu.compile(m)
    ascend = kernel.stages["ascend"]
    reduce_line = next(line for line in ascend.splitlines() if '"ascend.reduce_' in line)
    assert "axis = 1" in reduce_line and "x49x16xf16" in reduce_line
    x = rng.standard_normal((1, 8, 7, 7)).astype(np.float16)
    (got,), _ = kernel(x)
    np.testing.assert_allclose(got.astype(np.float32), ort_run(m, {"x": x})[0].astype(np.float32),
                               **CUBE)
