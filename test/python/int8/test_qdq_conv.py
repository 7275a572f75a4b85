"""QDQ Convs and QLinearConv on the int8 conv: the ascend module has the int8
`ascend.conv2d` (i8 weights, pad_value = the activation's zero point), the
quantisation between two convs runs in NC1HWC0 into f16 rounded toward zero
(no i8 tensor), and the reference interpreter's result is within one output
step of onnxruntime (exact for QLinearConv's int8 output). The stem and the
convs that do not match stay in float with a remark."""

from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import numpy_helper

from qconv_models import ascend_text, conv_lines, evaluate, qdq_convs, qlinear_conv
from qdq_models import cnn, quantized, reference


def _step(model) -> float:
    """The scale of the model's last DequantizeLinear: one output step."""
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    last = next(n for n in reversed(model.graph.node) if n.op_type == "DequantizeLinear")
    return float(consts[last.input[1]].reshape(-1)[0])


def _x(shape, scale=2.0, seed=3) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


@pytest.mark.parametrize("per_channel, bias", [(True, True), (False, True), (True, False)])
def test_qdq_conv_on_the_int8_conv_within_one_step(per_channel: bool, bias: bool, capsys) -> None:
    model = qdq_convs([(24, 2)], c=20, h=9, per_channel=per_channel, bias=bias, zx=-6)
    text, module, remarks = ascend_text(model, capsys)
    assert ("node 'conv0' (Conv) between 'dqx' and 'dqw0' (DequantizeLinear): on the int8 cube, "
            "dequantised after it") in remarks
    (conv,) = conv_lines(text)
    assert "pad_value = -6 : i64" in conv and "memref<9x2x16x32xi8" in conv
    x = _x((1, 20, 9, 9))
    got, (want,) = evaluate(module, x), reference(model, {"x": x})
    assert np.abs(got - want).max() <= _step(model) * (1 + 1e-4)
    assert np.mean(got == want) > 0.95


def test_qdq_conv_chain_quantises_in_nc1hwc0(capsys) -> None:
    """Two int8 convs: the input is converted to NC1HWC0 once (the first
    quantisation, rounded toward zero to f16 in NCHW); the second conv reads
    the first's epilogue and quantisation in NC1HWC0 through an rz f16 cast,
    and no int8 tensor is made."""
    model = qdq_convs([(32, 1), (24, 2)], c=16, h=10)
    text, module, remarks = ascend_text(model, capsys)
    for conv in ("conv0", "conv1"):
        assert f"node '{conv}' (Conv) between" in remarks
    first, second = conv_lines(text)
    assert "pad_value = 3 : i64" in first and "pad_value = -5 : i64" in second
    casts = re.findall(r'"ascend.cast"\(\S+, \S+\) \{round_mode = "trunc"\} : \((memref<[^>]+>), '
                       r'(memref<[^>]+>)\)', text)
    assert casts == [('memref<1x16x10x10xf32, "gm">', 'memref<1x16x10x10xf16, "gm">'),
                     ('memref<1x2x10x10x16xf32, "gm">', 'memref<1x2x10x10x16xf16, "gm">')]
    assert first.split("(")[1].split(",")[0] != second.split("(")[1].split(",")[0]
    assert len(re.findall(r'"ascend.transpose"', text)) == 2  # NCHW -> 5HD in, 5HD -> NCHW out
    ops = [line for line in text.splitlines() if line.strip().startswith('"ascend.')]
    assert [line for line in ops if "xi8" in line] == [first, second]  # only their weights
    x = _x((1, 16, 10, 10))
    got, (want,) = evaluate(module, x), reference(model, {"x": x})
    assert np.abs(got - want).max() <= _step(model) * (1 + 1e-4)
    assert np.mean(got == want) > 0.95


@pytest.mark.parametrize("per_channel, bias", [(True, True), (False, False)])
def test_qlinear_conv_on_the_int8_conv_is_exact(per_channel: bool, bias: bool, capsys) -> None:
    """Requantised on the drain with s_x * s_w / s_y after the int32 bias, as
    onnxruntime's QLinearConv: bit-exact, saturation at both ends included."""
    model = qlinear_conv(per_channel=per_channel, bias=bias)
    text, module, remarks = ascend_text(model, capsys)
    assert ("node 'qconv' (Conv) between 'qconv/dequantize_a' and 'qconv/dequantize_b' "
            "(DequantizeLinear): on the int8 cube, requantised by 'qconv/quantize' on the "
            "drain") in remarks
    (conv,) = conv_lines(text)
    assert "pad_value = -3 : i64" in conv and "xi8" in conv
    x = np.random.default_rng(9).integers(-128, 128, (1, 24, 9, 9), dtype=np.int8)
    got, (want,) = evaluate(module, x), reference(model, {"x": x})
    assert (want == 127).any() and (want == -128).any(), "the case must saturate at both ends"
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, want)


def test_stem_is_an_exact_integer_product_on_the_f16_cube(capsys) -> None:
    """A QDQ stem of 3 channels: its integer product in img2col's small-channel
    mode on the f16 cube, exact, so its quantised map is onnxruntime's."""
    model = qdq_convs([(16, 2)], c=3, h=12)
    text, module, remarks = ascend_text(model, capsys)
    assert ("node 'conv0' (Conv) between 'dqx' and 'dqw0' (DequantizeLinear): exactly on the "
            "f16 cube (C = 3 input channels)") in remarks
    assert ("node 'conv0/int8' (ConvInteger): run on the f16 cube with exact f32 accumulation "
            "(C/groups * Kh * Kw = 27), not on the int8 cube: C = 3 input channels") in remarks
    (conv,) = conv_lines(text)
    assert "xi8" not in conv and '"nc1hwc0_c4"' in conv
    x = _x((1, 3, 12, 12))
    got, (want,) = evaluate(module, x), reference(model, {"x": x})
    np.testing.assert_array_equal(got, want)


def test_grouped_qdq_conv_stays_in_float_with_a_remark(capsys) -> None:
    model = qdq_convs([(16, 1)], c=16, h=8)
    conv = next(n for n in model.graph.node if n.op_type == "Conv")
    conv.attribute.append(__import__("onnx").helper.make_attribute("group", 2))
    w = next(t for t in model.graph.initializer if t.name == "w0")
    w.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(w)[:, :8].copy(), "w0"))
    text, module, remarks = ascend_text(model, capsys)
    assert "node 'conv0' (Conv) between 'dqx' and 'dqw0' (DequantizeLinear): stays in float: " \
           "group = 2 (the int8 conv takes groups = 1)" in remarks
    assert all("xi8" not in line for line in conv_lines(text))
    x = _x((1, 16, 8, 8))
    got, (want,) = evaluate(module, x), reference(model, {"x": x})
    assert np.abs(got - want).max() <= _step(model) * (1 + 1e-4)


def test_quantize_static_cnn_stem_exact_on_the_f16_cube(capsys) -> None:
    """onnxruntime's quantize_static of a 3 -> 16 -> 32 CNN (int8 activations,
    per-channel weights): the stem's integer product on the f16 cube (its
    integers exact in f16, their sums in f32), conv2 and the classifier on the
    int8 cube: every product exact, so the logits are onnxruntime's bit for bit.
    (With the stem in float on dequantised f16 operands, its quantised map
    landed a step away here and there, and the steps grew through the net.)"""
    model = quantized(cnn(16), (1, 3, 16, 16))
    text, module, remarks = ascend_text(model, capsys)
    assert re.search(r"node 'conv1' \(Conv\) between .*: exactly on the f16 cube "
                     r"\(C = 3 input channels\)", remarks)
    assert "node 'conv1/int8' (ConvInteger): run on the f16 cube with exact f32 accumulation" \
        in remarks
    assert re.search(r"node 'conv2' \(Conv\) between .*: on the int8 cube", remarks)
    assert "node 'fc' (MatMul) between" in remarks
    stem, conv2 = conv_lines(text)
    assert "xi8" not in stem and '"nc1hwc0_c4"' in stem and "xi8" in conv2
    x = _x((1, 3, 16, 16), 1.0, 2)
    got, (want,) = evaluate(module, x), reference(model, {"x": x})
    np.testing.assert_array_equal(got, want)


def test_a_residual_dequantisation_reads_the_f16_int8_map(capsys) -> None:
    """A residual block: conv0's quantised result feeds conv1 and, through a
    DequantizeLinear, the Add after conv1. Both readers take the f16 map of
    int8 values in NC1HWC0 (a widening reads f16 as exactly as i8): no int8
    tensor and no layout conversion inside the block (before, the second
    reader made an int8 NCHW tensor: two transposes and the casts)."""
    from onnx import TensorProto, helper

    from qconv_models import const

    model = qdq_convs([(16, 1), (16, 1)], c=16, h=10)
    g = model.graph
    g.initializer.extend([const("sr", np.float32(0.1)), const("zr", np.int8(-20))])
    g.node.extend([helper.make_node("Add", ["d1", "d0"], ["sum"], name="residual"),
                   helper.make_node("QuantizeLinear", ["sum", "sr", "zr"], ["qs"], name="qs"),
                   helper.make_node("DequantizeLinear", ["qs", "sr", "zr"], ["y"], name="dqs")])
    del g.output[:]
    g.output.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 10, 10]))
    text, module, _ = ascend_text(model, capsys)
    ops = [line for line in text.splitlines() if line.strip().startswith('"ascend.')]
    assert [line for line in ops if "xi8" in line] == conv_lines(text)  # only their weights
    assert len(re.findall(r'"ascend.transpose"', text)) == 2  # NCHW -> 5HD in, 5HD -> NCHW out
    x = _x((1, 16, 10, 10))
    got, (want,) = evaluate(module, x), reference(model, {"x": x})
    assert np.abs(got - want).max() <= _step(model) * (1 + 1e-4)


def test_a_max_pool_of_a_dequantised_map_pools_the_integers_in_f16(capsys) -> None:
    """MaxPool(DequantizeLinear(q)) = DequantizeLinear's arithmetic after a
    max pool of q - zp, exact in f16 (the scale is positive): the pool runs
    on the f16 map in NC1HWC0 (no f32 pool in NCHW, no transpose), and the
    model, compiled and simulated, is within one step of onnxruntime."""
    from onnx import TensorProto, helper

    import npu
    from qconv_models import const

    model = qdq_convs([(32, 1)], c=16, h=12)
    g = model.graph
    g.initializer.extend([const("sp", np.float32(0.06)), const("zp_", np.int8(-5))])
    g.node.extend([helper.make_node("MaxPool", ["d0"], ["p"], name="pool", kernel_shape=[3, 3],
                                    strides=[2, 2], pads=[1, 1, 1, 1]),
                   helper.make_node("QuantizeLinear", ["p", "sp", "zp_"], ["qp"], name="qp"),
                   helper.make_node("DequantizeLinear", ["qp", "sp", "zp_"], ["y"], name="dqp")])
    del g.output[:]
    g.output.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 6, 6]))
    text, module, remarks = ascend_text(model, capsys)
    assert "node 'pool' (MaxPool) of 'dq0' (DequantizeLinear): pools the int8 values in f16" \
        in remarks
    (pool,) = [line for line in text.splitlines() if '"ascend.pool2d"' in line]
    assert 'layout = "nc1hwc0"' in pool and "x16xf16" in pool
    assert len(re.findall(r'"ascend.transpose"', text)) == 2  # NCHW -> 5HD in, 5HD -> NCHW out
    x = _x((1, 16, 12, 12))
    got, (want,) = evaluate(module, x), reference(model, {"x": x})
    assert np.abs(got - want).max() <= _step(model) * (1 + 1e-4)
    (y,), _ = npu.compile(model, target="ascend910", where="m.onnx", cores=1)(x)
    assert np.abs(y - want).max() <= _step(model) * (1 + 1e-4)
    assert np.mean(y == want) > 0.95
