"""f32 models' windowed pools of conv results: pooled in NC1HWC0 as the conv
left them (two 32-byte blocks a pixel), on every core, and each map the
convs read in f16 converted once however many convs read it; numerics
against onnxruntime on 1 and 32 cores."""

from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import TensorProto, numpy_helper
from onnx import helper

from cnn_onnx import compile_npu, make, ort_run

F = TensorProto.FLOAT


def _stem_model(pool: str, c: int = 32, size: int = 32):
    """conv 7x7/2 -> ReLU -> `pool` 3x3/2 pad 1 -> two convs (conv1, a 1x1
    'downsample') and a residual Add of the pooled map (ResNet's stem and
    first block in miniature)."""
    rng = np.random.default_rng(3)

    def weight(name, shape):
        fan = int(np.prod(shape[1:]))
        return numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(fan)).astype(np.float32),
                                       name)

    attrs = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    if pool == "AveragePool":
        attrs["count_include_pad"] = 0
    nodes = [helper.make_node("Conv", ["x", "w0"], ["s"], name="stem", kernel_shape=[7, 7],
                              strides=[2, 2], pads=[3, 3, 3, 3]),
             helper.make_node("Relu", ["s"], ["r"], name="relu"),
             helper.make_node(pool, ["r"], ["p"], name="pool", **attrs),
             helper.make_node("Conv", ["p", "w1"], ["a"], name="conv1", kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["p", "w2"], ["b"], name="down", kernel_shape=[1, 1]),
             helper.make_node("Add", ["a", "p"], ["y0"], name="residual"),
             helper.make_node("Add", ["y0", "b"], ["y"], name="sum")]
    inits = [weight("w0", [c, 3, 7, 7]), weight("w1", [c, c, 3, 3]), weight("w2", [c, c, 1, 1])]
    half = size // 4
    return make(nodes, [("x", F, [1, 3, size, size])], [("y", F, [1, c, half, half])], inits)


@pytest.mark.parametrize("cores", [1, 32])
@pytest.mark.parametrize("pool", ["MaxPool", "AveragePool"])
def test_f32_stem_pool_in_nc1hwc0(pool, cores):
    model = _stem_model(pool)
    x = np.random.default_rng(4).standard_normal((1, 3, 32, 32)).astype(np.float32)
    kernel = compile_npu(model, cores)
    ascend = kernel.stages["ascend"]
    pools = [line for line in ascend.splitlines() if "ascend.pool2d" in line]
    assert len(pools) == 1 and 'layout = "nc1hwc0"' in pools[0] and "xf32" in pools[0], pools
    # no NCHW round trip of the stem's result: the one transpose makes the model's output
    assert ascend.count('"ascend.transpose"') == 1
    # the pooled map is cast to f16 once for both convs
    casts = re.findall(r'"ascend.cast"\(%\w+, %\w+\)[^\n]*memref<1x2x8x8x16xf32', ascend)
    assert len(casts) == 1, casts
    (got,), _ = kernel(x)
    (want,) = ort_run(model, {"x": x})
    # The cube multiplies in f16: within a few f16 ulps of the values' scale.
    np.testing.assert_allclose(got, want, atol=2e-2, rtol=2e-2)


@pytest.mark.slow
def test_f32_stem_pool_at_224_on_the_chip():
    """ResNet-18's stem at 224 (64 x 112 x 112 f32 pooled to 56 x 56, read
    by a conv and the residual Add, so pooled in f32): the pool's output
    rows cut over the cores, against onnxruntime."""
    model = _stem_model("MaxPool", c=64, size=224)
    x = np.random.default_rng(5).standard_normal((1, 3, 224, 224)).astype(np.float32)
    kernel = compile_npu(model, 32)
    pools = [line for line in kernel.stages["ascend"].splitlines() if "ascend.pool2d" in line]
    assert len(pools) == 1 and "xf32" in pools[0], pools
    (got,), report = kernel(x)
    (want,) = ort_run(model, {"x": x})
    np.testing.assert_allclose(got, want, atol=2e-2, rtol=2e-2)
    pool = [r for r in report["per_op"] if r["op"].startswith("pool")]
    assert report["hazards"] == [] and len(pool) == 1
    # on every core: a 32nd of its 3.2 MB read and 0.8 MB written, not 109k cycles on one
    assert pool[0]["span_cycles"] < 20_000, pool


def test_f32_relu_between_convs_runs_on_the_f16_copy():
    """An f32 bottleneck's ReLUs between convs clamp the f16 copy the next
    conv reads (exact: rounding is monotonic), so the cast leads the conv's
    epilogue and the drain converts; the block outputs, which a residual Add
    also reads in f32, stay f32. Numerics on 32 cores against onnxruntime."""
    from npu.frontend.cnn import resnet

    model = resnet(50, size=32, width=8, classes=10, layers=[1, 1, 1, 1])
    x = np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32)
    kernel = compile_npu(model, 32)
    relus = [line for line in kernel.stages["ascend"].splitlines() if '"ascend.maxs"' in line]
    # conv1 and conv2 of each of the 4 blocks and the stem's; the last block's output
    # (only the head's pool reads it: f32)
    assert sum("xf16" in r for r in relus) >= 8, relus
    assert any("xf32" in r for r in relus), relus
    # the stem's pool, which only convs read, pools the stem's f16 ReLU (a max commutes too)
    pools = [line for line in kernel.stages["ascend"].splitlines() if '"ascend.pool2d"' in line]
    assert len(pools) == 1 and "xf16" in pools[0] and "xf32" not in pools[0], pools
    (got,), _ = kernel(x)
    (want,) = ort_run(model, {"input": x})
    np.testing.assert_allclose(got, want, atol=3e-2, rtol=3e-2)
