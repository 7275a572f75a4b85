"""BatchNormalization folding (`npu.frontend.onnx_batchnorm`): into the
preceding Conv's weight and bias (checked with onnxruntime on the original
and the folded model: exact to f32 rounding), or as Mul + Add on constants
compiled and simulated against onnxruntime."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from cnn_onnx import bn_params, compare_npu, make, ort_run

RNG = np.random.default_rng(7)


def _conv_bn(bias: bool, extra_reader: bool = False, channels: int = 6):
    from onnx import helper, numpy_helper

    w = RNG.standard_normal((channels, 3, 3, 3)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w")] + bn_params("bn", channels, RNG)
    conv_in = ["x", "w"]
    if bias:
        inits.append(numpy_helper.from_array(RNG.standard_normal(channels).astype(np.float32), "cb"))
        conv_in.append("cb")
    nodes = [helper.make_node("Conv", conv_in, ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "bn.scale", "bn.bias", "bn.mean", "bn.var"],
                              ["b"], name="bn", epsilon=1e-3),
             helper.make_node("Relu", ["b"], ["y"], name="relu")]
    outputs = [("y", 1, [1, channels, 8, 8])]
    if extra_reader:
        nodes.append(helper.make_node("Neg", ["c"], ["z"], name="neg"))
        outputs.append(("z", 1, [1, channels, 8, 8]))
    return make(nodes, [("x", 1, [1, 3, 8, 8])], outputs, inits)


@pytest.mark.parametrize("bias", [True, False], ids=["conv-bias", "no-bias"])
def test_fold_into_conv_is_exact(bias):
    from npu.frontend.onnx_batchnorm import fold_batchnorms

    model = _conv_bn(bias)
    folded = copy.deepcopy(model)
    assert fold_batchnorms(folded) == ["bn"]
    ops = [n.op_type for n in folded.graph.node]
    assert ops == ["Conv", "Relu"], ops
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    want, got = ort_run(model, {"x": x})[0], ort_run(folded, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


def test_conv_read_twice_keeps_its_output():
    """The Conv's output feeds another node: the map becomes Mul + Add."""
    from npu.frontend.onnx_batchnorm import fold_batchnorms

    model = _conv_bn(True, extra_reader=True)
    folded = copy.deepcopy(model)
    fold_batchnorms(folded)
    assert [n.op_type for n in folded.graph.node] == ["Conv", "Mul", "Add", "Relu", "Neg"]
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    for want, got in zip(ort_run(model, {"x": x}), ort_run(folded, {"x": x})):
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("elem", [1, 10], ids=["f32", "f16"])
def test_batchnorm_alone_runs_as_mul_add(elem):
    """Not after a Conv (after a MaxPool here): Mul + Add on the device."""
    from onnx import helper

    c = 24
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("BatchNormalization", ["p", "bn.scale", "bn.bias", "bn.mean", "bn.var"],
                              ["y"], name="bn")]
    model = make(nodes, [("x", elem, [1, c, 10, 10])], [("y", elem, [1, c, 5, 5])],
                 bn_params("bn", c, RNG, np.float16 if elem == 10 else np.float32))
    x = RNG.standard_normal((1, c, 10, 10)).astype(np.float16 if elem == 10 else np.float32)
    compare_npu(model, {"x": x}, atol=2e-5 if elem == 1 else 1e-2)


def test_run_time_statistics_are_refused_at_the_node():
    import npu
    from onnx import helper, numpy_helper

    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn_rt")]
    inits = [numpy_helper.from_array(np.ones(4, np.float32), n) for n in ("s", "b", "v")]
    model = make(nodes, [("x", 1, [1, 4, 4, 4]), ("m", 1, [4])], [("y", 1, [1, 4, 4, 4])], inits)
    with pytest.raises(Exception) as info:
        npu.compile(model)
    message = str(info.value)
    assert "node 'bn_rt' (BatchNormalization): unsupported operator" in message
    assert "\n" not in message and "Traceback" not in message
