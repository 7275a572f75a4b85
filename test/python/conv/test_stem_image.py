"""A small-channel conv (C <= 4, an RGB stem) reads its NCHW image itself:
npu-lower-conv lays each band out in L1 (image_map.py), so no NC1HWC0 copy
of the image is written to GM. Numerics against onnxruntime; cycles against
the old conversion (cast, pad to 16 channels, transpose through GM)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import npu
from conv_cases import conv_model, ort_run, random_input

CUBE = dict(rtol=2e-2, atol=2e-2)

CASES = {
    "c3_7x7_s2_odd": dict(c=3, cout=16, k=7, h=37, w=35, stride=2, pads=(3, 3, 3, 3)),
    "c1_3x3": dict(c=1, cout=8, k=3, h=19, w=17),
    "c2_5x5_asym": dict(c=2, cout=20, k=5, h=18, w=21, pads=(2, 1, 0, 2)),
    "c4_3x3_s2_batch2": dict(n=2, c=4, cout=24, k=3, h=20, w=33, stride=2),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("case", CASES)
def test_image_form_matches_onnxruntime(case, dtype):
    m = conv_model(**CASES[case], dtype=dtype)
    kernel = npu.compile(m, cores=1)
    stage = kernel.stages["ascend"]
    assert '"nc1hwc0_c4"' in stage and "ascend.transpose" not in stage.split("ascend.conv2d")[0]
    x = random_input(m)
    (got,), _ = kernel(x)
    np.testing.assert_allclose(got.astype(np.float32), ort_run(m, {"x": x})[0].astype(np.float32),
                               **CUBE)


@pytest.mark.parametrize("cores", [0, 4])
def test_image_form_on_cores(cores):
    """Split over the chip (0: every core) or 4 cores: row runs and channel parts."""
    m = conv_model(c=3, cout=32, k=7, h=64, w=48, stride=2, pads=(3, 3, 3, 3), dtype=np.float16)
    x = random_input(m)
    (got,), _ = npu.compile(m, cores=cores)(x)
    np.testing.assert_allclose(got.astype(np.float32), ort_run(m, {"x": x})[0].astype(np.float32),
                               **CUBE)


def test_narrow_image_keeps_the_conversion():
    """Under 16 pixels wide a band may hold less than one block: the old path."""
    m = conv_model(c=3, cout=8, k=3, h=9, w=7)
    kernel = npu.compile(m, cores=1)
    assert "ascend.transpose" in kernel.stages["ascend"]
    x = random_input(m)
    (got,), _ = kernel(x)
    np.testing.assert_allclose(got, ort_run(m, {"x": x})[0], **CUBE)


def test_stem_cycles():
    """ResNet's stem conv at 112x112 input: the old conversion through GM
    took 56,619 cycles for the conv op; reading the image directly 22,959."""
    m = conv_model(c=3, cout=64, k=7, h=112, w=112, stride=2, pads=(3, 3, 3, 3), dtype=np.float16)
    _, report = npu.compile(m, cores=1)(random_input(m))
    (row,) = [r for r in report["per_op"] if "conv" in r["op"]]
    assert row["exclusive_cycles"] < 30_000, row


def test_stem_at_224_keeps_its_relu_on_the_drain():
    """The image's UB staging is left out of the conv's tiling budget: at
    224x224 a tiling that used all of UB for the drain and the ReLU's tiles
    overflowed UB beside the staging, and npu-lower then lowered the whole
    model unfused (ResNet-50: 4.44M cycles instead of 2.6M)."""
    m = conv_model(c=3, cout=64, k=7, h=224, w=224, stride=2, pads=(3, 3, 3, 3), dtype=np.float16)
    relu = onnx.helper.make_node("Relu", ["y"], ["z"], name="relu")
    m.graph.node.append(relu)
    m.graph.output[0].name = "z"
    x = random_input(m)
    (got,), report = npu.compile(m, cores=1)(x)
    (row,) = [r for r in report["per_op"] if r["op"].startswith("conv")]
    assert row["members"] == ["relu (Relu)"], report["per_op"]
    np.testing.assert_allclose(got.astype(np.float32), ort_run(m, {"x": x})[0].astype(np.float32),
                               **CUBE)


def _stem_ideal(c: int, h: int, w: int, cout: int, k: int, ho: int, wo: int) -> float:
    """bench/conv.py's ideal from the target: the cube bound or the
    compulsory GM traffic (image, weights, output once), whichever is larger."""
    t = npu.target.get_target("ascend910")
    cube = ho * wo * cout * c * k * k / 4096
    gm = 2 * (c * h * w + cout * c * k * k + cout * ho * wo)
    return max(cube, gm / t.path("gm_to_l1").bytes_per_cycle)


def test_stem_bands_share_image_maps(monkeypatch):
    """The 224x224 stem reading its image: bands share L1 maps (segments of
    SEGMENT_BANDS bands), so the 5 input rows two 4-row bands both read are
    staged once per segment; before, every band staged its 13 rows through
    UB and MTE3 bounded the conv (68,474 cycles, 2.28x the ideal; now
    57,300, 1.90x). The result is bit for bit the one of a map per band."""
    from npu.passes.lower_conv import image_map

    m = conv_model(c=3, cout=64, k=7, h=224, w=224, stride=2, pads=(3, 3, 3, 3), dtype=np.float16)
    x = random_input(m)
    (got,), report = npu.compile(m, cores=1)(x)
    (row,) = [r for r in report["per_op"] if "conv" in r["op"]]
    assert row["exclusive_cycles"] <= 1.95 * _stem_ideal(3, 224, 224, 64, 7, 112, 112), row
    monkeypatch.setattr(image_map, "SEGMENT_BANDS", 1)
    monkeypatch.setattr(image_map, "FOLD_SEGMENT_BANDS", 1)  # a folded stem's (stem_fold)
    (per_band,), _ = npu.compile(m, cores=1)(x)
    np.testing.assert_array_equal(got.view(np.uint16), per_band.view(np.uint16))


FOLDED = {
    "c3_7x7_s2": dict(c=3, cout=32, k=7, h=37, w=48, stride=2, pads=(3, 3, 3, 3)),
    "c3_7x7_s2_batch2_nobias": dict(n=2, c=3, cout=16, k=7, h=24, w=32, stride=2, pads=(3, 3, 3, 3),
                                    bias=False),
    "c1_5x5": dict(c=1, cout=16, k=5, h=20, w=32, pads=(1, 1, 1, 1)),
    "c2_5x5_asym": dict(c=2, cout=20, k=5, h=18, w=32, pads=(2, 1, 0, 2)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("case", FOLDED)
def test_stem_bias_in_cube_matches_onnxruntime(case, dtype):
    """A stem with constant weights and bias (stem_fold.py): the bias in the
    weights, fed by a slot of ones, so the drain adds none (a frontend conv
    carries an epilogue group: its image rows are not folded, see
    test_folded_rows_match_numpy)."""
    m = conv_model(**FOLDED[case], dtype=dtype)
    kernel = npu.compile(m, cores=1)
    lowered = kernel.stages["lowered"]
    assert "hivm.vadd" not in lowered  # before: one vadd per drained block
    x = random_input(m)
    (got,), _ = kernel(x)
    np.testing.assert_allclose(got.astype(np.float32), ort_run(m, {"x": x})[0].astype(np.float32),
                               **CUBE)


def test_folded_stem_weights():
    """The folded order against the small-channel one, point by point."""
    from npu.passes.lower_conv.stem_fold import folded_weights, with_bias

    w = np.random.default_rng(0).standard_normal((13, 2, 16, 16)).astype(np.float16)
    f = folded_weights(w, 7, 7)
    for kw in range(7):
        for j in range(4):
            point = (3 - j) * 7 + kw
            np.testing.assert_array_equal(f[kw, :, :, 4 * j:4 * j + 4],
                                          w[point // 4, :, :, point % 4 * 4:point % 4 * 4 + 4])
    np.testing.assert_array_equal(f[7:], w[7:])  # points 28.. as before
    b = np.arange(32, dtype=np.float16)
    fb = with_bias(f, b, (3, 3))
    np.testing.assert_array_equal(fb[3, :, :, 3], b.reshape(2, 16))
    # slot 3 is staged as ones: no other channel-3 weight may reach the sums
    expect = f.copy()
    expect[..., 3::4] = 0
    fb[3, :, :, 3] = 0
    np.testing.assert_array_equal(fb, expect)


@pytest.mark.parametrize("h, w, bias", [(24, 32, True), (37, 48, False), (224, 224, True)])
def test_folded_rows_match_numpy(h, w, bias):
    """A stem without an epilogue group (as bench/conv.py's image row) folds
    its image rows: kernel row 3 fetched in img2col's normal mode (the
    rows above in slots 4..15), bias in the cube; against numpy."""
    from npu.ir import constant_argument, functions, make_context, parse_module, retype_constant
    from npu.passes.linalg_to_ascend.conv_layouts import fractal_z_small
    from npu.pipeline import run_pipeline
    from npu.reference_conv import conv2d
    from npu.simulator import simulate

    rng = np.random.default_rng(2)
    ho, wo, cout = (h - 1) // 2 + 1, (w - 1) // 2 + 1, 32
    x = rng.standard_normal((1, 3, h, w)).astype(np.float16)
    wt = (rng.standard_normal((cout, 3, 7, 7)) / 12).astype(np.float16)
    b = rng.standard_normal(cout).astype(np.float16)
    tx, tw = f'memref<1x3x{h}x{w}xf16, "gm">', 'memref<13x2x16x16xf16, "gm">'
    tb, ty = 'memref<32xf16, "gm">', f'memref<1x2x{ho}x{wo}x16xf16, "gm">'
    args = [f"%x: {tx}", f"%w: {tw} {{npu.constant = dense<0.0> : tensor<13x2x16x16xf16>}}"]
    args += [f"%b: {tb} {{npu.constant = dense<0.0> : tensor<32xf16>}}"] if bias else []
    ops = ["%x, %w, %b, %y" if bias else "%x, %w, %y", f"{tx}, {tw}, {tb}, {ty}" if bias else
           f"{tx}, {tw}, {ty}"]
    text = (f'func.func @conv({", ".join(args)}, %y: {ty}) {{\n'
            f'  "ascend.conv2d"({ops[0]}) {{strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>, '
            f'dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0_c4", '
            f'kernel = array<i64: 7, 7>}} : ({ops[1]}) -> ()\n  return\n}}\n')
    module = parse_module(text, make_context())
    fargs = functions(module)[0].regions[0].blocks[0].arguments
    with module.context:
        retype_constant(fargs[1], fractal_z_small(wt))
        if bias:
            retype_constant(fargs[2], b)
    run_pipeline(module, "npu-lower{cores=1 emit=cce}", npu.target.get_target("ascend910"))
    cce = str(module)
    normal = [line for line in cce.splitlines()
              if "cce.img2col_l1_to_l0a" in line and "small_channel" not in line]
    # rows 3..0 of each kernel column in the normal mode (unfolded: only point 48, row 6)
    assert sum("fetch_h = 3" in line for line in normal) >= 7, normal
    assert "cce.vadd" not in cce
    fargs = functions(module)[0].regions[0].blocks[0].arguments
    inputs = [x, constant_argument(fargs[1])] + ([b] if bias else []) + [
        np.zeros((1, 2, ho, wo, 16), np.float16)]
    res = simulate(module, inputs, target=npu.target.get_target("ascend910"))
    want = conv2d(x.astype(np.float32), wt.astype(np.float32),
                  b.astype(np.float32) if bias else None, (2, 2), (3, 3, 3, 3), (1, 1), 1)
    got = res.outputs[-1].transpose(0, 1, 4, 2, 3).reshape(1, cout, ho, wo)
    np.testing.assert_allclose(got.astype(np.float32), want, **CUBE)
