"""Resize (`npu.frontend.onnx_resize`): NCHW maps resized by constant
interpolation matrices (one Kronecker matmul for small maps, else a matmul
per axis, a nearest H of an integer factor as copies of rows), against
onnxruntime; and the forms it cannot run, each one located error. Every
Resize was refused as an unsupported operator before."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

import npu
from npu.frontend import onnx_resize
from npu.frontend.compile import CompileError
from npu.frontend.onnx_fold import inferred_types
from onnx_models import model


def resized(shape, out, mode="nearest", coords="asymmetric", nearest="floor", scales=None,
            sizes=None, elem=TensorProto.FLOAT, opset=17, **attrs):
    """x -> Resize -> Relu (a consumer, as in a network)."""
    inits, inputs = [("roi", np.zeros(0, np.float32))], ["x", "roi"]
    if scales is not None:
        inits.append(("scales", np.array(scales, np.float32)))
        inputs.append("scales")
    else:
        inits.append(("sizes", np.array(sizes, np.int64)))
        inputs += ["", "sizes"]
    nodes = [helper.make_node("Resize", inputs, ["r"], name="resize", mode=mode,
                              coordinate_transformation_mode=coords, nearest_mode=nearest, **attrs),
             helper.make_node("Relu", ["r"], ["y"], name="relu")]
    return model(nodes, [("x", shape, elem)], [("y", out, elem)], inits, opset)


def check(m, shape, dtype=np.float32, exact=False):
    x = np.random.default_rng(3).standard_normal(shape).astype(dtype)
    want = onnxruntime.InferenceSession(m.SerializeToString(),
                                        providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    (got,), _ = npu.compile(m, cores=1)(x)
    assert got.shape == want.shape
    if exact:
        np.testing.assert_array_equal(got, want)
    else:  # the map and the weights as the cube's f16 operands
        np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)


def ops_of(m) -> list[str]:
    onnx_resize.resizes_as_matmuls(m, inferred_types(m), ValueError)
    return [n.op_type for n in m.graph.node]


CASES = {  # id: (input, output, Resize arguments), each as torch exports it or ONNX allows
    "nearest-x2": ([1, 3, 6, 5], [1, 3, 12, 10], dict(scales=[1, 1, 2, 2])),
    "nearest-sizes": ([1, 2, 6, 5], [1, 2, 9, 7], dict(sizes=[1, 2, 9, 7], nearest="round_prefer_floor",
                                                       coords="half_pixel")),
    "nearest-down": ([1, 2, 8, 9], [1, 2, 4, 3], dict(scales=[1, 1, 0.5, 0.34])),
    "bilinear-half-pixel-x2": ([1, 3, 6, 5], [1, 3, 12, 10], dict(mode="linear", coords="half_pixel",
                                                                  scales=[1, 1, 2, 2])),
    "bilinear-pytorch-half-pixel-down": ([2, 2, 8, 8], [2, 2, 5, 1], dict(
        mode="linear", coords="pytorch_half_pixel", sizes=[2, 2, 5, 1])),
    "bilinear-align-corners": ([1, 2, 5, 7], [1, 2, 13, 9], dict(mode="linear", coords="align_corners",
                                                                 sizes=[1, 2, 13, 9])),
    "bilinear-asymmetric-1.5": ([1, 2, 6, 4], [1, 2, 9, 6], dict(mode="linear", scales=[1, 1, 1.5, 1.5])),
}


@pytest.mark.parametrize("case", list(CASES))
def test_small_maps_match_onnxruntime(case):
    """One Kronecker matmul each."""
    shape, out, kw = CASES[case]
    assert ops_of(resized(shape, out, **kw)) == ["Reshape", "MatMul", "Reshape", "Relu"]
    check(resized(shape, out, **kw), shape)


def _kron_sizes(shape, out) -> tuple[int, int]:
    """(the one-matmul Kronecker matrix's elements, the H pass's kron(Mh, I_W)'s)."""
    (h, w), (ho, wo) = shape[2:], out[2:]
    return h * w * ho * wo, h * ho * min(w, wo) ** 2


@pytest.mark.parametrize("form", ["h-kron", "transposed"])
@pytest.mark.parametrize("case", list(CASES))
def test_the_per_axis_passes_match_onnxruntime(case, form, monkeypatch):
    """The forms of maps too large for the Kronecker matrix: the H pass by
    kron(Mh, I_W), or through transposes (the map padded to whole blocks
    when it grows)."""
    shape, out, kw = CASES[case]
    full, h_kron = _kron_sizes(shape, out)
    monkeypatch.setattr(onnx_resize, "KRON_MAX_ELEMENTS", h_kron if form == "h-kron" else 0)
    ops = ops_of(resized(shape, out, **kw))
    if h_kron < full and "Concat" not in ops:  # (not a nearest H of an integer factor)
        assert ("Transpose" in ops) == (form == "transposed")
    check(resized(shape, out, **kw), shape)


def test_per_axis_order_and_row_copies(monkeypatch):
    """W growing: H's transposed pass first, H padded to whole blocks by
    zero rows before the transpose and W after it; W shrinking: W's first,
    no pads; a nearest H of an integer factor: a Concat of whole rows."""
    monkeypatch.setattr(onnx_resize, "KRON_MAX_ELEMENTS", 0)
    up = ops_of(resized([1, 2, 6, 5], [1, 2, 9, 10], mode="linear", sizes=[1, 2, 9, 10]))
    assert up[:3] == ["Concat", "Transpose", "Concat"] and up.count("MatMul") == 2
    down = ops_of(resized([1, 2, 6, 8], [1, 2, 9, 4], mode="linear", sizes=[1, 2, 9, 4]))
    assert down.index("MatMul") < down.index("Transpose") and "Concat" not in down
    repeat = ops_of(resized([1, 2, 6, 5], [1, 2, 12, 10], scales=[1, 1, 2, 2]))
    assert repeat.count("MatMul") == 1 and "Concat" in repeat and "Transpose" not in repeat


def test_one_axis_only():
    """H alone by an integer nearest factor is row copies only: exact."""
    m = resized([1, 4, 6, 16], [1, 4, 18, 16], scales=[1, 1, 3, 1])
    assert "MatMul" not in ops_of(resized([1, 4, 6, 16], [1, 4, 18, 16], scales=[1, 1, 3, 1]))
    check(m, [1, 4, 6, 16], exact=True)
    check(resized([1, 2, 6, 5], [1, 2, 6, 9], mode="linear", coords="align_corners", sizes=[1, 2, 6, 9]),
          [1, 2, 6, 5])


def test_a_1x1_map_is_an_expand():
    """MobileViT at 32x32 resizes its 1x1 map to the 2x2 of its patches."""
    def m():
        return resized([1, 8, 1, 1], [1, 8, 2, 2], mode="linear", coords="half_pixel", sizes=[1, 8, 2, 2])

    assert ops_of(m()) == ["Expand", "Relu"]
    check(m(), [1, 8, 1, 1], exact=True)


def test_f16_nearest_is_exact():
    m = resized([1, 3, 6, 5], [1, 3, 12, 10], scales=[1, 1, 2, 2], elem=TensorProto.FLOAT16)
    check(m, [1, 3, 6, 5], np.float16, exact=True)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_the_matrices_are_onnxruntimes_resize(mode):
    """Every coordinate transformation and nearest mode, up and down, by
    scales and by sizes: `onnx_resize_weights` on the host against
    onnxruntime (no compile), in f64."""
    from npu.frontend import onnx_resize_weights as rw

    rng = np.random.default_rng(1)
    for (h, w), how in [((5, 7), dict(scales=[1, 1, 1.5, 0.5])), ((8, 6), dict(scales=[1, 1, 2, 3])),
                        ((5, 7), dict(sizes=[1, 1, 13, 9])), ((5, 7), dict(sizes=[1, 1, 1, 1])),
                        ((16, 16), dict(scales=[1, 1, 0.75, 2.5]))]:
        for coords in rw.COORDINATE_MODES:
            for nearest in rw.NEAREST_MODES if mode == "nearest" else ["floor"]:
                if coords == "align_corners" and "scales" in how:
                    continue  # (fractional lengths refused; whole ones are the sizes cases)
                out = [1, 1] + (how["sizes"][2:] if "sizes" in how else
                                [int(d * np.float32(s)) for d, s in zip((h, w), how["scales"][2:])])
                m = resized([1, 1, h, w], out, mode=mode, coords=coords, nearest=nearest, **how)
                x = rng.standard_normal((1, 1, h, w)).astype(np.float32)
                want = onnxruntime.InferenceSession(m.SerializeToString(), providers=[
                    "CPUExecutionProvider"]).run(None, {"x": x})[0]
                mats = []
                for length, length_out, i in ((h, out[2], 2), (w, out[3], 3)):
                    scale = how["scales"][i] if "scales" in how else length_out / length
                    xs = rw.source_coordinates(coords, length, length_out, scale)
                    if mode == "nearest":
                        mats.append(np.eye(length)[rw.nearest_indices(xs, nearest, length)])
                    else:
                        mats.append(rw.linear_matrix(xs, length))
                got = np.maximum(mats[0] @ x[0, 0].astype(np.float64) @ mats[1].T, 0)  # the model's Relu
                np.testing.assert_allclose(got, want[0, 0], rtol=1e-5, atol=1e-5,
                                           err_msg=f"{h}x{w} {how} {coords} {nearest}")


def test_linear_weights_are_f16_values_summing_to_one():
    node = resized([1, 1, 7, 5], [1, 1, 23, 11], mode="linear", coords="align_corners",
                   sizes=[1, 1, 23, 11]).graph.node[0]
    plan = onnx_resize.plan_resize(node,
                                   lambda name: np.array([1, 1, 23, 11]) if name == "sizes" else None,
                                   {"x": ([1, 1, 7, 5], 1)}, 17, ValueError)
    for m in (plan.mh, plan.mw):
        assert np.array_equal(m.astype(np.float16).astype(np.float64), m)
        assert np.array_equal(m.sum(1), np.ones(len(m)))


@pytest.mark.parametrize("attrs, shape, message", [
    (dict(mode="cubic"), [1, 2, 4, 4], "mode 'cubic' is not supported"),
    (dict(coords="tf_crop_and_resize"), [1, 2, 4, 4], "coordinate_transformation_mode 'tf_crop_and_resize'"),
    (dict(antialias=1), [1, 2, 4, 4], "antialias 1 is not supported"),
    (dict(), [1, 2, 2, 4, 4], "a 5-D input is not supported"),
], ids=["cubic", "tf-crop-and-resize", "antialias", "5-d"])
def test_forms_that_cannot_run_are_located_errors(attrs, shape, message):
    out = shape[:-2] + [d * 2 for d in shape[-2:]]
    m = resized(shape, out, scales=[1] * (len(shape) - 2) + [2, 2], opset=18 if "antialias" in attrs else 17,
                **attrs)
    with pytest.raises(CompileError, match=f"node 'resize' \\(Resize\\): {message}"):
        npu.compile(m)


def test_align_corners_by_a_scale_of_a_fractional_length_is_a_located_error():
    """ONNX's reference divides by 4 * 0.6 - 1, onnxruntime by 2 - 1."""
    m = resized([1, 1, 4, 4], [1, 1, 2, 2], mode="linear", coords="align_corners", scales=[1, 1, 0.6, 0.6])
    with pytest.raises(CompileError, match="'align_corners' with scale 0.6 on axis 2, whose output length "
                                           "4 \\* 0.6 is not whole"):
        npu.compile(m)


def test_sizes_computed_at_run_time_are_a_located_error():
    nodes = [helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="resize", mode="nearest")]
    m = model(nodes, [("x", [1, 2, 4, 4]), ("sizes", [4], TensorProto.INT64)], [("y", [1, 2, 8, 8])])
    with pytest.raises(CompileError,
                       match="node 'resize' \\(Resize\\): input 'sizes' .* computed at run time"):
        npu.compile(m)


def test_the_unet_export_resizes_as_matmuls():
    """test/models/cnn/unet_ts.onnx (torch's nn.Upsample and two
    F.interpolate; make_exports.py --cnn --only unet): each Resize is
    written out (a Kronecker matmul each at 8x8 -> 16x16, 16x16 -> 32x32
    and 32x32 -> 48x48), and the model compiles. It runs against
    onnxruntime in test_cnn_exports (--runslow)."""
    import os

    import onnx

    path = os.path.join(os.path.dirname(__file__), "..", "..", "models", "cnn", "unet_ts.onnx")
    m = onnx.load(path)
    assert [n.op_type for n in m.graph.node].count("Resize") == 3
    names = set(npu.compile(m, cores=1).source_names.values())
    assert {f"{r}/kron_matmul (MatMul)" for r in ("/up/Resize", "/Resize", "/Resize_1")} <= names
    assert not any(n.endswith("(Resize)") for n in names)
