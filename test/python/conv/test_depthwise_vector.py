"""Depthwise convs on the vector unit (`npu-lower-conv{depthwise=vector}`,
docs/grouped_conv.md): simulated strictly (races and uninitialised reads
fail) and compared with onnxruntime at the cube tests' tolerance; the cost
model's choice; the options."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

import npu
from npu.frontend.compile import CompileError
from conv_cases import conv_model, ort_run, random_input
from npu.costmodel.conv.depthwise_vector import DwShape, plan
from npu.costmodel.conv.tiling import ConvShape, choose_tiling
from npu.target import get_target

TOL = dict(rtol=2e-2, atol=2e-2)  # the grouped conv tests' (test_grouped_conv.CUBE)
VECTOR = "npu-lower{conv-depthwise=vector}"

CASES = {
    "s1_odd_c_odd_hw": dict(c=24, cout=24, group=24, h=9, w=11),
    "s2_odd": dict(c=40, cout=40, group=40, h=13, w=11, stride=2),
    "asym_pads_no_bias": dict(c=8, cout=8, group=8, h=7, w=10, pads=(0, 1, 2, 0), bias=False),
    "no_pads_no_bias": dict(c=16, cout=16, group=16, h=6, w=9, pads=(0, 0, 0, 0), bias=False),
    "dilation2": dict(c=16, cout=16, group=16, h=12, w=12, dilation=2, pads=(2, 2, 2, 2)),
    "5x5_s2": dict(c=20, cout=20, group=20, k=5, h=11, w=9, stride=2, pads=(2, 2, 2, 2)),
    "batch2": dict(n=2, c=36, cout=36, group=36, h=7, w=7),
    "f16_s1": dict(c=40, cout=40, group=40, h=11, w=9, dtype=np.float16),
    "f16_s2": dict(c=24, cout=24, group=24, h=10, w=13, stride=2, dtype=np.float16),
    "f16_wide": dict(c=16, cout=16, group=16, h=5, w=40, dtype=np.float16),
}


def _vector_kernel(m, pipeline: str = VECTOR):
    kernel = npu.compile(m, pipeline=pipeline)
    cce = str(kernel.module)
    assert "vmla" in cce and "img2col" not in cce
    return kernel


@pytest.mark.parametrize("case", CASES)
def test_vector_depthwise_matches_onnxruntime(case):
    m = conv_model(**CASES[case])
    x = random_input(m)
    (got,), _ = _vector_kernel(m)(x)
    np.testing.assert_allclose(got.astype(np.float32), ort_run(m, {"x": x})[0].astype(np.float32),
                               **TOL)


def test_f32_model_accumulates_in_f32():
    """An f32 result accumulates in f32 (the input converted in UB): the
    same error as the cube's f32 accumulation (f16 accumulation has about
    twice it)."""
    m = conv_model(**CASES["s2_odd"])
    x = random_input(m)
    want = ort_run(m, {"x": x})[0]
    (vec,), _ = _vector_kernel(m)(x)
    (cube,), _ = npu.compile(m, pipeline="npu-lower{conv-depthwise=cube}")(x)
    err_vec, err_cube = np.abs(vec - want).max(), np.abs(cube - want).max()
    assert err_vec <= 1.01 * err_cube, (err_vec, err_cube)


def _relu6_chain(stride: int, dtype=np.float32):
    """MobileNetV2's depthwise step: conv, bias, Clip(0, 6)."""
    m = conv_model(c=48, cout=48, group=48, h=9, w=9, stride=stride, dtype=dtype)
    g = m.graph
    g.node[0].output[0] = "dw"
    g.initializer.extend([onnx.numpy_helper.from_array(np.array(0, dtype), "lo"),
                          onnx.numpy_helper.from_array(np.array(6, dtype), "hi")])
    g.node.append(helper.make_node("Clip", ["dw", "lo", "hi"], ["y"]))
    onnx.checker.check_model(m)
    return m


@pytest.mark.parametrize("stride,dtype", [(1, np.float32), (2, np.float16)])
def test_relu6_epilogue(stride, dtype):
    m = _relu6_chain(stride, dtype)
    x = (random_input(m) * 4).astype(dtype)
    (got,), _ = _vector_kernel(m)(x)
    want = ort_run(m, {"x": x})[0]
    assert got.max() <= 6 and got.min() >= 0
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), **TOL)


def test_relu_epilogue_f16():
    m = conv_model(c=32, cout=32, group=32, h=8, w=8, dtype=np.float16)
    g = m.graph
    g.node[0].output[0] = "dw"
    g.node.append(helper.make_node("Relu", ["dw"], ["y"]))
    x = random_input(m)
    (got,), _ = _vector_kernel(m)(x)
    np.testing.assert_allclose(got.astype(np.float32), ort_run(m, {"x": x})[0].astype(np.float32),
                               **TOL)


def test_multiplier_and_small_groups_stay_on_the_cube():
    """Only one channel a group runs on the vector unit: a multiplier of 2
    (dense block-diagonal) and groups of 2 channels keep the cube; asking
    for the vector path in a model with no depthwise conv is refused."""
    for spec in (dict(c=8, cout=16, group=8, h=8, w=8), dict(c=32, cout=32, group=16, h=7, w=7)):
        m = conv_model(**spec)
        x = random_input(m)
        with pytest.raises(CompileError, match="npu-lower: conv-depthwise: does not apply: the "
                                               "program has no depthwise conv"):
            npu.compile(m, pipeline=VECTOR)
        kernel = npu.compile(m)
        assert "img2col" in str(kernel.module)
        (got,), _ = kernel(x)
        np.testing.assert_allclose(got, ort_run(m, {"x": x})[0], **TOL)


def test_auto_follows_the_cost_models():
    """depthwise=auto (the default) takes the path whose estimate is lower.
    With weights loaded as diagonal fractals (a plain argument): MobileNetV2's
    576-channel 14x14 layer on the vector unit (14,788 simulated cycles, cube
    20,527: bench/conv.py before the compact weights), its 144-channel stride-2
    56x56 one on the cube (GM-bound: the vector path reloads the fractals per
    band). With the compact weights a model's constants become, both on the
    vector unit (144/2@56: 20,912 simulated against 21,894 on the cube)."""
    t = get_target("ascend910")
    for c, h, stride, compact, want_vector in ((576, 14, 1, False, True),
                                               (144, 56, 2, False, False),
                                               (576, 14, 1, True, True),
                                               (144, 56, 2, True, True)):
        ho = (h + 2 - 3) // stride + 1
        cube = choose_tiling(ConvShape(c // 16, h, h, c // 16, 3, 3, ho, ho, stride, 1, 1,
                                       diagonal=True), t)
        vec = plan(DwShape(1, c // 16, h, h, ho, ho, 3, 3, (stride, stride), (1,) * 4, (1, 1), 2,
                           True, compact=compact), t, t.capacity("ub"))
        assert (vec.cycles < cube.cycles) == want_vector, (c, compact, vec, cube.cycles)


def test_cube_option_forces_the_cube():
    m = conv_model(c=576, cout=576, group=576, h=14, w=14, dtype=np.float16)
    ascend_default = npu.compile(m)
    assert "vmla" in str(ascend_default.module)
    forced = npu.compile(m, pipeline="npu-lower{conv-depthwise=cube}")
    assert "vmla" not in str(forced.module) and "img2col" in str(forced.module)
