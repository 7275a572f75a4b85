"""A patch-embedding Conv (kernel == stride, no padding) compiles as a
MatMul of the image's patches (`onnx_conv`), and matches onnxruntime; any
other Conv is left as it is (for `ascend.conv2d`)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import helper

import npu
from npu.frontend.onnx_conv import rewrite_patch_convs
from onnx_models import model

# The cube multiplies f16 operands with f32 accumulation (see test_onnx_ops).
CUBE = dict(rtol=2e-2, atol=2e-2)


def patch_conv(n=1, c=3, h=32, w=32, o=32, p=16, bias=True, **attrs) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    weight = (rng.standard_normal((o, c, p, p)) / np.sqrt(c * p * p)).astype(np.float32)
    inits = [("w", weight)] + ([("b", rng.standard_normal(o).astype(np.float32))] if bias else [])
    attrs = {"kernel_shape": [p, p], "strides": [p, p], **attrs}
    inputs = ["x", "w"] + (["b"] if bias else [])
    conv = helper.make_node("Conv", inputs, ["y"], name="patch_embed", **attrs)
    return model([conv], [("x", [n, c, h, w])], [("y", [n, o, h // p, w // p])], inits)


def ort(m: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


@pytest.mark.parametrize("shape", [dict(), dict(n=2, c=1, h=16, w=48, o=16),
                                   dict(h=64, w=32, o=8, bias=False)])
def test_patch_conv_matches_onnxruntime(shape):
    m = patch_conv(**shape)
    x = np.random.default_rng(1).standard_normal(
        [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]).astype(np.float32)
    (got,), report = npu.compile(m)(x)
    np.testing.assert_allclose(got, ort(m, x), **CUBE)
    assert any(row["op"].startswith("patch_embed (MatMul)") for row in report["per_op"])


def test_the_rewrite_keeps_the_conv_name_on_the_matmul():
    m = patch_conv()
    assert rewrite_patch_convs(m) == ["patch_embed"]
    ops = {n.name: n.op_type for n in m.graph.node}
    assert ops["patch_embed"] == "MatMul" and "Conv" not in ops.values()
    x = np.random.default_rng(2).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.testing.assert_allclose(ort(m, x), ort(patch_conv(), x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attrs, w_shape, out", [
    (dict(strides=[8, 8]), [32, 3, 16, 16], [1, 32, 3, 3]),           # overlapping windows
    (dict(pads=[1, 1, 1, 1]), [32, 3, 16, 16], [1, 32, 2, 2]),        # padding
    (dict(dilations=[2, 2]), [32, 3, 16, 16], [1, 32, 1, 1])])        # dilation
def test_other_convs_are_kept(attrs, w_shape, out):
    """Not rewritten: they run as ascend.conv2d (img2col on the cube)."""
    rng = np.random.default_rng(0)
    attrs = {"kernel_shape": [16, 16], "strides": [16, 16], **attrs}
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="c", **attrs)
    m = model([conv], [("x", [1, 3, 32, 32])], [("y", out)],
              [("w", rng.standard_normal(w_shape).astype(np.float32))])
    assert rewrite_patch_convs(m) == []
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    (got,), _ = npu.compile(m)(x)
    np.testing.assert_allclose(got, ort(m, x), **CUBE)


@pytest.mark.parametrize("p", [2, 4, 8])
def test_patches_under_a_block_stay_a_conv(p):
    """ConvNeXt's 4x4 stem: rows of p < 16 elements would be element
    gathers in the rewrite's transposes; img2col cuts them (PATCH_SIZE_FROM)."""
    m = patch_conv(c=3, h=32, w=32, o=24, p=p)
    assert rewrite_patch_convs(m) == []
    x = np.random.default_rng(4).standard_normal((1, 3, 32, 32)).astype(np.float32)
    (got,), report = npu.compile(patch_conv(c=3, h=32, w=32, o=24, p=p))(x)
    np.testing.assert_allclose(got, ort(m, x), **CUBE)
    assert any(row["op"].startswith("patch_embed (Conv)") for row in report["per_op"])


def test_depthwise_patch_conv_matches_onnxruntime():
    """A depthwise patch conv (kernel = stride, groups = C) is not a patch
    embedding's matmul: it runs as a conv (block-diagonal on the cube)."""
    rng = np.random.default_rng(0)
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="c", kernel_shape=[8, 8],
                            strides=[8, 8], group=3)
    m = model([conv], [("x", [1, 3, 32, 32])], [("y", [1, 3, 4, 4])],
              [("w", rng.standard_normal([3, 1, 8, 8]).astype(np.float32))])
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    (got,), _ = npu.compile(m)(x)
    np.testing.assert_allclose(got, ort(m, x), **CUBE)

def test_a_feature_map_downsampling_stays_a_conv():
    """ConvNeXt's downsampling (2x2, stride 2, over 96 channels) has a
    patch's shape, but a feature map of many channels wastes nothing as
    ascend.conv2d; the rewrite's transposes of [96, 784, 4] did not fit UB."""
    m = patch_conv(c=32, h=16, w=16, o=64, p=2)
    assert rewrite_patch_convs(m) == []
    x = np.random.default_rng(3).standard_normal((1, 32, 16, 16)).astype(np.float32)
    (got,), report = npu.compile(patch_conv(c=32, h=16, w=16, o=64, p=2))(x)
    np.testing.assert_allclose(got, ort(m, x), **CUBE)
    assert any(row["op"].startswith("patch_embed (Conv)") for row in report["per_op"])
