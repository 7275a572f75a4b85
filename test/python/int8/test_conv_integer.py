"""ONNX ConvInteger -> the int8 `ascend.conv2d` (pad_value = x's zero point,
i8 fractal-Z weights, the zero point's term as the i32 bias), exact against
onnxruntime through the reference interpreter; the other ConvIntegers
exactly on the f16 cube, or one located line."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto

from npu.frontend.onnx_import import ImportError_, import_onnx
from npu.passes.linalg_to_ascend.conv_layouts import fractal_z_int8
from qconv_models import ascend_text, conv_integer, conv_lines, evaluate


def _ort(model, x: np.ndarray) -> np.ndarray:
    return ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def _input(model, dtype=np.int8, seed=1) -> np.ndarray:
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    info = np.iinfo(dtype)
    x = np.random.default_rng(seed).integers(info.min, int(info.max) + 1, dims, dtype=dtype)
    x[:, :, 0, :] = info.min  # a row at the end of the range
    return x


CASES = {
    "pads_stride1_zp": dict(x_zp=np.int8(-7)),
    "pads_stride2_zp_max": dict(stride=2, x_zp=np.int8(127), h=10, w=11),
    "no_pads_zp": dict(pads=(0, 0, 0, 0), x_zp=np.int8(5), c=40, cout=16),
    "rect_pads_zp_zero": dict(pads=(0, 2, 0, 2), x_zp=np.int8(0), w_zp=np.int8(0)),
    "no_zero_points_1x1": dict(k=1, pads=(0, 0, 0, 0), c=64, cout=33, stride=2),
    "batch2_zero_w_zp_vector": dict(n=2, c=5, cout=8, x_zp=np.int8(-128),
                                    w_zp=np.int8(0)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_conv_integer_on_the_int8_conv_is_exact(case: str, capsys) -> None:
    model = conv_integer(**CASES[case])
    text, module, remarks = ascend_text(model, capsys)
    assert "node 'ci' (ConvInteger): on the int8 cube" in remarks
    (conv,) = conv_lines(text)
    x_zp = int(CASES[case].get("x_zp", 0))
    c, cout, k = (CASES[case].get(a, d) for a, d in (("c", 20), ("cout", 24), ("k", 3)))
    weights = f"memref<{-(-c // 32) * k * k}x{-(-cout // 16)}x16x32xi8"
    assert 'layout = "nc1hwc0"' in conv and weights in conv and "xi32, \"gm\">) -> ()" in conv
    assert (f"pad_value = {x_zp} : i64" in conv) == (x_zp != 0)
    assert conv.count("memref<") == (4 if x_zp else 3)  # the zero point's bias
    assert "linalg" not in text
    x = _input(model)
    got, want = evaluate(module, x), _ort(model, x)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def test_conv_integer_weights_are_laid_out_on_the_host(capsys) -> None:
    """The constant operands are fractal_z_int8(W) and -x_zp * sum W per
    output channel (the module's constants, read back)."""
    from npu.frontend.compile import read_interface
    from npu.ir import functions
    from onnx import numpy_helper

    model = conv_integer(c=20, cout=24, x_zp=np.int8(-7))
    _, module, _ = ascend_text(model, capsys)
    w = numpy_helper.to_array(model.graph.initializer[0])
    args = read_interface(functions(module)[0].operation).arguments([_input(model)])
    int8 = [a for a in args if a.dtype == np.int8 and a.ndim == 4]
    np.testing.assert_array_equal(int8[-1], fractal_z_int8(w))
    bias = [a for a in args if a.dtype == np.int32 and a.ndim == 1]
    want = np.zeros(32, np.int64)
    want[:24] = 7 * w.astype(np.int64).sum(axis=(1, 2, 3))
    np.testing.assert_array_equal(bias[-1], want)


FLOAT_CASES = {
    "uint8_input": (dict(x_type=TensorProto.UINT8, x_zp=np.uint8(130), c=8, cout=8),
                    "its operands are not both int8"),
    "weight_zero_point": (dict(w_zp=np.int8(-3), cout=8, c=8),
                          "its weight has a non-zero zero point"),
    "grouped": (dict(group=2, c=8, cout=8, x_zp=np.int8(3)),
                "group = 2 (the int8 conv takes groups = 1)"),
    "asymmetric_pads": (dict(pads=(0, 1, 2, 1), c=8, cout=8, x_zp=np.int8(-9)),
                        "pads [0, 1, 2, 1] differ at the two ends of an axis (torch-mlir's "
                        "integer conv takes symmetric pads)"),
    "stem": (dict(n=2, c=3, cout=8, x_zp=np.int8(-128), w_zp=np.int8(0)),
             "C = 3 input channels: padding them to an int8 block of 32 costs more cube time "
             "than the f16 small-channel mode"),
}


@pytest.mark.parametrize("case", sorted(FLOAT_CASES))
def test_other_conv_integers_run_exactly_on_the_f16_cube(case: str, capsys) -> None:
    kwargs, why = FLOAT_CASES[case]
    model = conv_integer(**kwargs)
    text, module, remarks = ascend_text(model, capsys)
    assert ("node 'ci' (ConvInteger): run on the f16 cube with exact f32 accumulation "
            f"(C/groups * Kh * Kw = {kwargs['c'] // kwargs.get('group', 1) * 9}), not on the "
            f"int8 cube: {why}") in remarks
    assert conv_lines(text) and all("xi8" not in line for line in conv_lines(text))
    assert (case == "stem") == any('"nc1hwc0_c4"' in line for line in conv_lines(text))
    x = _input(model, np.uint8 if kwargs.get("x_type") == TensorProto.UINT8 else np.int8)
    np.testing.assert_array_equal(evaluate(module, x), _ort(model, x))


def _refusal(model) -> str:
    with pytest.raises(ImportError_) as e:
        import_onnx(model, where="m.onnx")
    assert "\n" not in str(e.value)
    return str(e.value)


def test_run_time_zero_point_is_one_line() -> None:
    model = conv_integer(x_zp=np.int8(1))
    model.graph.input.append(model.graph.input[0].__class__())
    model.graph.input[-1].CopyFrom(model.graph.input[0])
    model.graph.input[-1].name = "x_zp"
    model.graph.input[-1].type.tensor_type.shape.ClearField("dim")
    del model.graph.initializer[1]
    assert _refusal(model) == ("m.onnx: error: node 'ci' (ConvInteger): zero point 'x_zp' must "
                               "be a constant")


def test_beyond_the_exact_bound_is_one_line() -> None:
    """uint8 weights (off the int8 cube) over C * 9 = 2304 taps: 2304 * 128 * 255 >= 2^24."""
    model = conv_integer(c=256, cout=16, w_type=np.uint8)
    assert _refusal(model) == (
        "m.onnx: error: node 'ci' (ConvInteger): C/groups * Kh * Kw = 2304 with these zero "
        "points can exceed 2^24 in the f32 accumulator of the f16 cube, and the int8 cube cannot "
        "take this node: its operands are not both int8")


def test_one_dimensional_conv_integer_is_one_line() -> None:
    from onnx import helper

    from qconv_models import OPSET, const

    node = helper.make_node("ConvInteger", ["x", "w"], ["y"], name="ci1d")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 4, 9])],
        [helper.make_tensor_value_info("y", TensorProto.INT32, [1, 8, 7])],
        [const("w", np.ones((8, 4, 3), np.int8))])
    model = helper.make_model(graph, opset_imports=OPSET, ir_version=8)
    assert _refusal(model) == ("m.onnx: error: node 'ci1d' (ConvInteger): a 1-D convolution: "
                               "only 2-D convolutions compile")


def test_npu_run_refuses_with_one_line(tmp_path) -> None:
    import onnx

    path = tmp_path / "m.onnx"
    onnx.save(conv_integer(c=256, cout=16, w_type=np.uint8), path)
    r = subprocess.run([sys.executable, "-m", "npu.tools.npu_run", str(path), "-o",
                        str(tmp_path / "out.npz")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"{path}: error: node 'ci' (ConvInteger): C/groups * Kh * Kw = 2304")
