"""Grouped and depthwise ONNX Convs end to end: the frontend makes their
constant weights dense block-diagonal ones and the groups = 1 cube lowering
runs them (docs/grouped_conv.md); simulated strictly (races and
uninitialised reads fail) and compared with onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

import npu
from conv_cases import conv_model, ort_run, random_input
from npu.passes.linalg_to_ascend.conv import block_diagonal

CUBE = dict(rtol=2e-2, atol=2e-2)  # f16 operands, f32 accumulation

CASES = {
    "dw_3x3_s1": dict(c=16, cout=16, group=16, h=9, w=9),
    "dw_3x3_s2_odd": dict(c=24, cout=24, group=24, h=13, w=11, stride=2),
    "dw_pads_asym": dict(c=8, cout=8, group=8, h=7, w=10, pads=(0, 1, 2, 0), bias=False),
    "dw_dilation2": dict(c=16, cout=16, group=16, h=12, w=12, dilation=2, pads=(2, 2, 2, 2)),
    "dw_multiplier2": dict(c=8, cout=16, group=8, h=8, w=8),
    "dw_c_not_c0_multiple": dict(c=20, cout=20, group=20, h=6, w=7),
    "dw_5x5": dict(c=32, cout=32, group=32, k=5, h=9, w=9, pads=(2, 2, 2, 2)),
    "grouped_2": dict(c=32, cout=32, group=2, h=7, w=7),
    "grouped_4_small_cpg": dict(c=16, cout=24, group=4, h=8, w=6, stride=2),
    "grouped_4_resnext": dict(c=64, cout=64, group=4, h=5, w=5),
}


@pytest.mark.parametrize("case", CASES)
def test_grouped_conv_matches_onnxruntime(case):
    m = conv_model(**CASES[case])
    x = random_input(m)
    kernel = npu.compile(m)
    ascend = kernel.stages["ascend"]
    assert '"ascend.conv2d"' in ascend and "groups = 1 : i64" in ascend
    # groups inside one C0 block with Cout = C keep only the diagonal fractals
    cg, cout, c = CASES[case]["c"] // CASES[case]["group"], CASES[case]["cout"], CASES[case]["c"]
    assert ('"nc1hwc0_bd"' in ascend) == (cout == c and 16 % cg == 0)
    (got,), _ = kernel(x)
    np.testing.assert_allclose(got, ort_run(m, {"x": x})[0], **CUBE)


def test_f16_depthwise():
    m = conv_model(c=16, cout=16, group=16, h=10, w=10, dtype=np.float16)
    x = random_input(m)
    (got,), _ = npu.compile(m)(x)
    np.testing.assert_allclose(got.astype(np.float32), ort_run(m, {"x": x})[0].astype(np.float32),
                               **CUBE)


def test_depthwise_bias_relu6_chain():
    """MobileNetV2's block: depthwise conv, bias, Clip(0, 6), then a 1x1 conv."""
    m = conv_model(c=16, cout=16, group=16, h=8, w=8, stride=2)
    g = m.graph
    y = g.output[0]
    g.node[0].output[0] = "dw"
    g.initializer.extend([onnx.numpy_helper.from_array(np.float32(0), "lo"),
                          onnx.numpy_helper.from_array(np.float32(6), "hi"),
                          onnx.numpy_helper.from_array(
                              np.random.default_rng(1).standard_normal((8, 16, 1, 1)).astype(np.float32) * 0.3,
                              "pw")])
    g.node.extend([helper.make_node("Clip", ["dw", "lo", "hi"], ["r"]),
                   helper.make_node("Conv", ["r", "pw"], ["y"], kernel_shape=[1, 1])])
    y.type.tensor_type.shape.dim[1].dim_value = 8
    onnx.checker.check_model(m)
    x = random_input(m) * 4
    (got,), _ = npu.compile(m)(x)
    np.testing.assert_allclose(got, ort_run(m, {"x": x})[0], **CUBE)


def test_cce_and_hivm_levels_agree():
    m = conv_model(**CASES["dw_3x3_s2_odd"])
    x = random_input(m)
    (a,), ra = npu.compile(m, pipeline="npu-lower{emit=cce}")(x)
    (b,), rb = npu.compile(m)(x)
    np.testing.assert_array_equal(a, b)
    assert ra["cycles"] == rb["cycles"]


def test_block_diagonal_is_the_grouped_conv():
    w = np.arange(4 * 3 * 2 * 2, dtype=np.float32).reshape(4, 3, 2, 2)
    dense = block_diagonal(w, 2)
    assert dense.shape == (4, 6, 2, 2)
    np.testing.assert_array_equal(dense[:2, :3], w[:2])
    np.testing.assert_array_equal(dense[2:, 3:], w[2:])
    assert not dense[:2, 3:].any() and not dense[2:, :3].any()


def test_cost_model_prefers_the_diagonal_form():
    """MobileNetV2's 14x14x576 depthwise layer: the diagonal form's K is the
    9 kernel points of one block, C1 = 36 times less than the dense form's.
    (The dense form's estimate fell from 218,602 to 193,770 cycles when a
    conv of one band could keep one map in L1 instead of two: a single
    band of 14 rows; the diagonal form's, 20,414, is 9.5x less.)"""
    from npu.costmodel.conv.tiling import ConvShape, choose_tiling
    from npu.target import get_target

    t = get_target("ascend910")
    dense = ConvShape(36, 14, 14, 36, 3, 3, 14, 14, 1, 1, 1, out_bytes=2)
    diag = ConvShape(36, 14, 14, 36, 3, 3, 14, 14, 1, 1, 1, out_bytes=2, diagonal=True)
    assert diag.k1 == 9 and dense.k1 == 36 * 9
    assert choose_tiling(diag, t).cycles * 9 < choose_tiling(dense, t).cycles
