"""`npu-lower-conv` end to end: ONNX Conv -> img2col + mad on the cube,
simulated (strict: races and uninitialised reads fail) and compared with
onnxruntime; the cce and hivm levels give the same bits and cycles."""

from __future__ import annotations

import numpy as np
import pytest

import npu
from conv_cases import conv_model, ort_run, random_input

# f16 operands on the cube, f32 accumulation (as test_onnx_ops' matmuls).
CUBE = dict(rtol=2e-2, atol=2e-2)

CASES = {
    "1x1_c24_to_40": dict(c=24, cout=40, k=1, h=7, w=9, pads=(0, 0, 0, 0), stride=2),
    "3x3_pad1": dict(c=16, cout=32, k=3, h=9, w=9),
    "3x3_stride2_odd": dict(c=24, cout=40, k=3, h=13, w=11, stride=2),
    "5x5_pad2": dict(c=8, cout=24, k=5, h=10, w=12, pads=(2, 2, 2, 2)),
    "7x7_stem_c3": dict(c=3, cout=16, k=7, h=23, w=23, stride=2, pads=(3, 3, 3, 3)),
    "dilation2": dict(c=16, cout=16, k=3, h=12, w=12, dilation=2, pads=(2, 2, 2, 2)),
    "asym_pads_no_bias": dict(c=5, cout=7, k=3, h=8, w=6, pads=(0, 1, 2, 0), bias=False),
    "1001_out": dict(c=40, cout=1001, k=1, h=8, w=8, pads=(0, 0, 0, 0), stride=2),
    "batch2": dict(n=2, c=16, cout=16, k=3, h=6, w=6),
    # C <= 4: img2col's small-channel mode (4 kernel points per K fractal)
    "small_c1_3x3": dict(c=1, cout=8, k=3, h=9, w=7),
    "small_c4_5x5_stride2": dict(c=4, cout=20, k=5, h=12, w=11, stride=2, pads=(2, 2, 2, 2)),
}


@pytest.mark.parametrize("case", CASES)
def test_conv_matches_onnxruntime(case):
    m = conv_model(**CASES[case])
    x = random_input(m)
    kernel = npu.compile(m)
    assert "cce.img2col_l1_to_l0a" in str(kernel.module) or \
        "hivm.img2col_l1_to_l0a" in str(kernel.module)
    (got,), _ = kernel(x)
    np.testing.assert_allclose(got, ort_run(m, {"x": x})[0], **CUBE)


def test_small_channel_form_is_used():
    kernel = npu.compile(conv_model(**CASES["7x7_stem_c3"]))
    assert '"nc1hwc0_c4"' in kernel.stages["ascend"]
    assert "small_channel" in str(kernel.module) or "hivm.img2col" in str(kernel.module)


def test_f16_model():
    m = conv_model(c=16, cout=24, k=3, h=10, w=10, dtype=np.float16)
    x = random_input(m)
    (got,), _ = npu.compile(m)(x)
    np.testing.assert_allclose(got.astype(np.float32), ort_run(m, {"x": x})[0].astype(np.float32),
                               **CUBE)


@pytest.mark.parametrize("case", ["3x3_stride2_odd", "7x7_stem_c3", "asym_pads_no_bias"])
def test_cce_and_hivm_levels_agree(case):
    m = conv_model(**CASES[case])
    x = random_input(m)
    (a,), ra = npu.compile(m, pipeline="npu-lower{emit=cce}")(x)
    (b,), rb = npu.compile(m)(x)
    np.testing.assert_array_equal(a, b)
    assert ra["cycles"] == rb["cycles"]


def test_1x1_stride1_stays_a_conv():
    m = conv_model(c=32, cout=48, k=1, h=8, w=8, pads=(0, 0, 0, 0))
    kernel = npu.compile(m)
    assert '"ascend.conv2d"' in kernel.stages["ascend"] and "ascend.matmul" not in kernel.stages["ascend"]
    x = random_input(m)
    (got,), _ = kernel(x)
    np.testing.assert_allclose(got, ort_run(m, {"x": x})[0], **CUBE)


@pytest.mark.parametrize("cores", [1, 2])
def test_bands_in_loops(monkeypatch, cores: int):
    """Convs of many bands run alike bands two per scf.for iteration; on
    2 cores (one Cout block: each core computes 40 of the 80 output rows) too."""
    from npu.passes.lower_conv import kernel as conv_kernel

    m = conv_model(c=16, cout=16, k=3, h=40 * cores, w=200, pads=(1, 1, 1, 1))
    x = random_input(m)
    pipeline = f"npu-lower{{emit=cce cores={cores}}}"
    straight = str(npu.compile(m, pipeline=pipeline).module)
    monkeypatch.setattr(conv_kernel, "UNROLL_BANDS", 0)
    compiled = npu.compile(m, pipeline=pipeline)
    looped = str(compiled.module)
    assert looped.count("scf.for") > straight.count("scf.for")
    (got,), _ = compiled(x)
    np.testing.assert_allclose(got, ort_run(m, {"x": x})[0], **CUBE)


def test_unrolled_bands_alternate_two_maps():
    """Alike bands emitted straight take two L1 maps in turn, live across
    the run: with a map of its own per band, npu-plan-memory could give
    band b+1 band b's L1, and its copies then waited for band b's last
    img2col (ResNet-18's layer1 convs: 1,246 cycles a band)."""
    import re

    from npu.ir import make_context, parse_module
    from npu.pipeline import run_pipeline
    from npu.target import get_target

    m = conv_model(c=16, cout=16, k=3, h=56, w=56, dtype=np.float16)
    ctx = make_context()
    with ctx:
        module = parse_module(npu.compile(m).stages["ascend"], ctx)
        run_pipeline(module, "npu-lower-conv", get_target("ascend910"))
        text = str(module)
    maps = re.findall(r"memref.alloc\(\) : memref<1x\d+x56x16xf16, \"l1\">", text)
    # 8 bands (a map copy each, and the weights'): one map a band was 8
    assert text.count("cce.copy_gm_to_l1") >= 8
    assert len(maps) == 4, maps  # the first and last bands' own, two in turn for the rest
