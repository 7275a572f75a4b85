"""The parts of a torchvision CNN around its convolutions, on the device
against onnxruntime: ReLU6 as Clip with min/max inputs, a BatchNormalization
alone, MaxPool, and the classifier head GlobalAveragePool -> Flatten -> Gemm
(transB = 1, as torchvision's Linear exports)."""

from __future__ import annotations

import numpy as np
import pytest

import npu
from cnn_onnx import bn_params, compare_npu, make, ort_run

RNG = np.random.default_rng(3)


@pytest.mark.parametrize("elem", [1, 10], ids=["f32", "f16"])
def test_classifier_head(elem):
    from onnx import helper, numpy_helper

    dt = np.float16 if elem == 10 else np.float32
    c, classes = 64, 10
    inits = [numpy_helper.from_array(RNG.standard_normal((classes, c)).astype(dt) * 0.1, "fc.weight"),
             numpy_helper.from_array(RNG.standard_normal(classes).astype(dt), "fc.bias")]
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["g"], name="/avgpool/GlobalAveragePool"),
             helper.make_node("Flatten", ["g"], ["f"], name="/Flatten", axis=1),
             helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], name="/fc/Gemm",
                              alpha=1.0, beta=1.0, transB=1)]
    model = make(nodes, [("x", elem, [1, c, 7, 7])], [("y", elem, [1, classes])], inits)
    x = RNG.standard_normal((1, c, 7, 7)).astype(dt)
    compare_npu(model, {"x": x}, atol=1e-4 if elem == 1 else 2e-2, rtol=1e-3 if elem == 1 else 1e-2)


@pytest.mark.parametrize("elem", [1, 10], ids=["f32", "f16"])
def test_relu6_bn_pool_block(elem):
    """MobileNetV2's activation: Clip(x, 0, 6) with min and max as inputs
    (opset 11+), after a BatchNormalization, then a pool."""
    from onnx import helper, numpy_helper

    dt = np.float16 if elem == 10 else np.float32
    c = 32
    inits = bn_params("bn", c, RNG, dt) + [numpy_helper.from_array(np.array(0, dt), "lo"),
                                           numpy_helper.from_array(np.array(6, dt), "hi")]
    nodes = [helper.make_node("BatchNormalization", ["x", "bn.scale", "bn.bias", "bn.mean", "bn.var"],
                              ["b"], name="bn"),
             helper.make_node("Clip", ["b", "lo", "hi"], ["r"], name="relu6"),
             helper.make_node("AveragePool", ["r"], ["y"], name="pool", kernel_shape=[3, 3],
                              strides=[2, 2], pads=[1, 1, 1, 1])]
    model = make(nodes, [("x", elem, [1, c, 14, 14])], [("y", elem, [1, c, 7, 7])], inits)
    x = (RNG.standard_normal((1, c, 14, 14)) * 4).astype(dt)
    compare_npu(model, {"x": x}, atol=1e-5 if elem == 1 else 1e-2)


@pytest.mark.parametrize("elem", [1, 10], ids=["f32", "f16"])
def test_gap_of_conv_result(elem):
    """ResNet-50's head: a 2048-channel conv result (NC1HWC0 on the device)
    pooled globally over 7x7, against onnxruntime; the pool's cycles within
    2.5x its own bound (f16 was 55,590 against 3,856 when each channel block
    was its own load; now ~1.9x, the rest the loads' and stores' latency).
    The 1/49 rides on the reduction (`scale`), not a muls kernel after it."""
    from onnx import helper, numpy_helper

    dt = np.float16 if elem == 10 else np.float32
    c, cin = 2048, 16
    inits = [numpy_helper.from_array((RNG.standard_normal((c, cin, 1, 1)) * 0.3).astype(dt), "w")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="/conv/Conv"),
             helper.make_node("GlobalAveragePool", ["c"], ["y"], name="/avgpool/GlobalAveragePool")]
    model = make(nodes, [("x", elem, [1, cin, 7, 7])], [("y", elem, [1, c, 1, 1])], inits)
    x = RNG.standard_normal((1, cin, 7, 7)).astype(dt)
    # An f32 model's conv multiplies f16-rounded inputs on the cube (~1e-3 relative).
    tol = dict(atol=1e-3, rtol=1e-2) if elem == 1 else dict(atol=2e-3, rtol=1e-2)
    compare_npu(model, {"x": x}, **tol)  # all cores: the reduction split over them
    want = ort_run(model, {"x": x})[0]
    kernel = npu.compile(model, cores=1)
    # The average's 1/49 is the reduction's scale: one kernel, no muls after it.
    assert '"ascend.muls"' not in kernel.stages["ascend"]
    assert kernel.stages["ascend"].count("scale = 0.020408") == 1
    (got,), report = kernel(x)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), **tol)
    (pool,) = [r for r in report["per_op"] if r["op"].startswith("/avgpool/")]
    assert pool["exclusive_cycles"] < 2.5 * pool["bound_cycles"], pool


@pytest.mark.parametrize("elem", [1, 10], ids=["f32", "f16"])
def test_pooled_conv_result_reaches_the_classifier_as_a_view(elem):
    """ResNet's head after its last conv: the global pool's result is one
    pixel per channel, so its NC1HWC0 buffer already is NCHW: Flatten takes
    it as a view, without the transpose (a GM -> UB -> GM copy, 832 cycles
    in ResNet-50). Against onnxruntime; the only transpose left is the
    input's conversion to NC1HWC0."""
    from onnx import helper, numpy_helper

    dt = np.float16 if elem == 10 else np.float32
    c, cin, classes = 256, 64, 10
    inits = [numpy_helper.from_array((RNG.standard_normal((c, cin, 1, 1)) * 0.1).astype(dt), "w"),
             numpy_helper.from_array((RNG.standard_normal((classes, c)) * 0.05).astype(dt), "fc.w"),
             numpy_helper.from_array(RNG.standard_normal(classes).astype(dt), "fc.b")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="/conv/Conv"),
             helper.make_node("Relu", ["c"], ["r"], name="/relu/Relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["g"], name="/avgpool/GlobalAveragePool"),
             helper.make_node("Flatten", ["g"], ["f"], name="/Flatten", axis=1),
             helper.make_node("Gemm", ["f", "fc.w", "fc.b"], ["y"], name="/fc/Gemm", transB=1)]
    model = make(nodes, [("x", elem, [1, cin, 7, 7])], [("y", elem, [1, classes])], inits)
    x = RNG.standard_normal((1, cin, 7, 7)).astype(dt)
    kernel = npu.compile(model, cores=1)
    assert kernel.stages["ascend"].count('"ascend.transpose"') == 1
    (got,), _ = kernel(x)
    want = ort_run(model, {"x": x})[0]
    tol = dict(atol=1e-3, rtol=1e-2) if elem == 1 else dict(atol=2e-2, rtol=1e-2)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), **tol)


def test_classifier_row_not_whole_blocks_is_one_kernel():
    """A 1000-class f16 classifier: its 1000 logits are not whole 32-byte
    blocks, so the cast of the matmul's f32 result and the bias add ran as
    two kernels through GM. One row goes resident (its whole blocks and the
    block ending it) as one kernel: the same bits, fewer cycles (ResNet-50's
    fc alone 77,420 -> 76,390)."""
    from onnx import helper, numpy_helper

    c, classes = 64, 1000
    inits = [numpy_helper.from_array((RNG.standard_normal((classes, c)) * 0.1).astype(np.float16), "fc.w"),
             numpy_helper.from_array(RNG.standard_normal(classes).astype(np.float16), "fc.b")]
    nodes = [helper.make_node("Gemm", ["x", "fc.w", "fc.b"], ["y"], name="/fc/Gemm", transB=1)]
    model = make(nodes, [("x", 10, [1, c])], [("y", 10, [1, classes])], inits)
    x = RNG.standard_normal((1, c)).astype(np.float16)
    (fused,), fast = npu.compile(model, cores=1)(x)
    (apart,), slow = npu.compile(model, pipeline="npu-lower{fuse-resident=false}", cores=1)(x)
    np.testing.assert_allclose(fused.astype(np.float64), ort_run(model, {"x": x})[0].astype(np.float64),
                               atol=2e-2, rtol=1e-2)
    assert fused.tobytes() == apart.tobytes()
    assert fast["cycles"] < slow["cycles"] - 500, (fast["cycles"], slow["cycles"])
