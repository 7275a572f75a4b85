"""f32 models' residual sums: the conv whose drain makes a block's f32
output (residual Add, ReLU) stores it and the f16 copy the next convs read
(npu.conv_epilogue f16_copy), so the copy is no op of its own; numerics
against onnxruntime on 1 and 32 cores."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from cnn_onnx import compile_npu, make, ort_run

F = TensorProto.FLOAT


def _blocks(c: int = 32, size: int = 16):
    """conv0 -> ReLU = r0; two basic-block halves: conv_k(r) + r -> ReLU, each
    ReLU read by the next conv (f16 copy) and the next residual Add (f32)."""
    rng = np.random.default_rng(7)

    def weight(name, shape):
        fan = int(np.prod(shape[1:]))
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(fan)).astype(np.float32),
                                       name)

    def bias(name):
        return numpy_helper.from_array((rng.standard_normal(c) * 0.1).astype(np.float32), name)

    pads = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], name="conv0", **pads),
             helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
             helper.make_node("Conv", ["r0", "w1", "b1"], ["c1"], name="conv1", **pads),
             helper.make_node("Add", ["c1", "r0"], ["s1"], name="add1"),
             helper.make_node("Relu", ["s1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", kernel_shape=[1, 1]),
             helper.make_node("Add", ["c2", "r1"], ["s2"], name="add2"),
             helper.make_node("Relu", ["s2"], ["y"], name="relu2")]
    inits = [weight("w0", [c, 16, 3, 3]), bias("b0"), weight("w1", [c, c, 3, 3]), bias("b1"),
             weight("w2", [c, c, 1, 1]), bias("b2")]
    return make(nodes, [("x", F, [1, 16, size, size])], [("y", F, [1, c, size, size])], inits)


@pytest.mark.parametrize("cores,c,size", [(1, 32, 16), pytest.param(32, 64, 56, marks=pytest.mark.slow)])
def test_f32_residual_sum_and_its_f16_copy_from_one_drain(cores, c, size):
    model = _blocks(c, size)
    x = np.random.default_rng(8).standard_normal((1, 16, size, size)).astype(np.float32)
    kernel = compile_npu(model, cores)
    if cores > 1:  # the groups split over the cores (chip barriers between them)
        assert str(kernel.module).count("hivm.sync_all") > 0
    (got,), report = kernel(x)
    (want,) = ort_run(model, {"x": x})
    # the cube multiplies in f16: within a few f16 ulps of the values' scale
    np.testing.assert_allclose(got, want, atol=2e-2, rtol=2e-2)
    assert report["hazards"] == []
    rows = {r["op"].split(" ")[0]: r["members"] for r in report["per_op"]}
    # r0's and r1's copies (named after the conv that reads them) go with the
    # drains that make r0 and r1: no kernel of their own
    assert "conv1" in " ".join(rows["conv0"]) and "conv2" in " ".join(rows["conv1"]), rows
    assert not any(r["op"].startswith(("conv1", "conv2")) and not r["members"]
                   for r in report["per_op"]), report["per_op"]


def test_f32_copy_left_its_own_op_when_off():
    """`fuse-conv-f16-copies=false` keeps each copy a kernel of its own (the
    option is what decides)."""
    import npu

    model = _blocks()
    kernel = npu.compile(model, pipeline="npu-lower{cores=1 fuse-conv-f16-copies=false}")
    x = np.random.default_rng(8).standard_normal((1, 16, 16, 16)).astype(np.float32)
    (got,), report = kernel(x)
    (want,) = ort_run(model, {"x": x})
    np.testing.assert_allclose(got, want, atol=2e-2, rtol=2e-2)
    rows = {r["op"].split(" ")[0]: r["members"] for r in report["per_op"]}
    assert "conv1" not in " ".join(rows["conv0"]), rows
