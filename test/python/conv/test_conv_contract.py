"""The `ascend.conv2d` contract: ONNX Conv -> linalg (torch-mlir) ->
`ascend.conv2d` (the frontend's recognition of the pad, bias and the three
named linalg conv forms), evaluated by the numpy reference and compared with
onnxruntime; the reference itself against a direct im2col formula."""

from __future__ import annotations

import numpy as np
import pytest

from conv_cases import conv_model, ort_run, random_input
from npu.reference_conv import conv2d

# f16 operands, f32 accumulation (as the cube).
CUBE = dict(rtol=2e-2, atol=2e-2)


def ascend_module(m):
    from npu.frontend.compile import import_linalg, linalg_to_ascend_text
    from npu.ir import make_context, parse_module

    ctx = make_context()
    linalg, ins, outs, locate = import_linalg(m, ctx, "m.onnx")
    return parse_module(linalg_to_ascend_text(linalg, ins, outs, locate, "m.onnx"), ctx)


def convs(module):
    return [op for op in _walk(module.operation) if op.name == "ascend.conv2d"]


def _walk(op):
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner.operation
                yield from _walk(inner.operation)


def evaluate(module, x):
    """The reference result of the one output (constants from the interface)."""
    from npu.frontend.compile import read_interface
    from npu.ir import functions
    from npu.reference import evaluate as ref

    func = functions(module)[0].operation
    interface = read_interface(func)
    results = ref(func, interface.arguments([x]))
    return results[interface.roles.index("output")]


CASES = {
    "3x3_pad_bias": dict(),
    "no_bias_no_pad": dict(bias=False, pads=(0, 0, 0, 0)),
    "stride2_asym_pads": dict(c=5, h=11, w=8, stride=2, pads=(0, 1, 2, 1)),
    "dilation2": dict(c=4, h=12, w=10, dilation=2, pads=(2, 2, 2, 2)),
    "1x1_stride2_batch2": dict(n=2, c=24, cout=40, k=1, stride=2, pads=(0, 0, 0, 0)),
    "7x7_stem": dict(c=3, h=15, w=15, cout=16, k=7, stride=2, pads=(3, 3, 3, 3)),
    "groups2": dict(c=8, cout=8, group=2),
    "depthwise": dict(c=8, cout=8, group=8),
    "depthwise_x2": dict(c=8, cout=16, group=8),
}


@pytest.mark.parametrize("case", CASES)
def test_conv_reaches_ascend_conv2d_and_matches_onnxruntime(case):
    m = conv_model(**CASES[case])
    module = ascend_module(m)
    ops = convs(module)
    assert len(ops) == 1
    assert not [op for op in _walk(module.operation) if op.name == "ascend.add"]  # bias on the op
    x = random_input(m)
    got = evaluate(module, x)
    np.testing.assert_allclose(got, ort_run(m, {"x": x})[0], **CUBE)


def test_pads_become_attributes_not_copies():
    module = ascend_module(conv_model(stride=2, pads=(0, 1, 2, 1)))
    (op,) = convs(module)
    assert list(op.attributes["pads"]) == [0, 1, 2, 1]
    assert list(op.attributes["strides"]) == [2, 2]
    assert op.operands[0].type.shape == [1, 1, 9, 9, 16]  # the unpadded map, NC1HWC0


def test_f16_model():
    m = conv_model(c=16, cout=24, dtype=np.float16)
    module = ascend_module(m)
    (op,) = convs(module)
    # torch-mlir accumulates an f16 conv in f32 and truncates after
    assert [str(v.type.element_type) for v in op.operands] == ["f16", "f16", "f32", "f32"]
    assert str(op.attributes["layout"]) == "\"nc1hwc0\""
    x = random_input(m)
    np.testing.assert_allclose(evaluate(module, x).astype(np.float32),
                               ort_run(m, {"x": x})[0].astype(np.float32), **CUBE)


def im2col_conv(x, w, b, stride, pads, dilation):
    """Direct im2col formula (groups = 1), independent of reference_conv."""
    n, c, h, wd = x.shape
    cout, _, kh, kw = w.shape
    t, l, bt, r = pads
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (t, bt), (l, r)))
    ho = (xp.shape[2] - dilation * (kh - 1) - 1) // stride + 1
    wo = (xp.shape[3] - dilation * (kw - 1) - 1) // stride + 1
    cols = np.empty((n, ho * wo, c * kh * kw))
    for i in range(ho):
        for j in range(wo):
            win = xp[:, :, i * stride:i * stride + dilation * (kh - 1) + 1:dilation,
                     j * stride:j * stride + dilation * (kw - 1) + 1:dilation]
            cols[:, i * wo + j] = win.reshape(n, -1)
    out = cols @ w.reshape(cout, -1).T.astype(np.float64) + b
    return out.transpose(0, 2, 1).reshape(n, cout, ho, wo)


def test_reference_against_im2col():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 10, 9)).astype(np.float16)
    w = rng.standard_normal((7, 5, 3, 2)).astype(np.float16)
    b = rng.standard_normal(7).astype(np.float32)
    got = conv2d(x, w, b, (2, 1), (1, 0, 2, 1), (2, 1), 1)
    # non-square strides/dilations: compare with a per-axis direct sum
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 2), (0, 1)))
    ho, wo = (xp.shape[2] - 2 * 2 - 1) // 2 + 1, (xp.shape[3] - 1 - 1) // 1 + 1
    want = np.zeros((2, 7, ho, wo))
    for i in range(3):
        for j in range(2):
            patch = xp[:, :, 2 * i:2 * i + 2 * (ho - 1) + 1:2, j:j + wo]
            want += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(np.float64))
    want += b.reshape(1, 7, 1, 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    sq = conv2d(x, w[:, :, :2, :2], b, (2, 2), (1, 1, 1, 1), (2, 2), 1)
    np.testing.assert_allclose(sq, im2col_conv(x, w[:, :, :2, :2], b, 2, (1, 1, 1, 1), 2),
                               rtol=1e-5, atol=1e-5)


def test_unlowered_conv_fails_with_one_located_line():
    import npu
    from npu.frontend.compile import CompileError

    from onnx import TensorProto, helper

    m = conv_model(c=8, cout=8, group=8, name="/layer1/conv")
    w = m.graph.initializer[0]  # depthwise weights given at run time: not lowered
    m.graph.input.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, list(w.dims)))
    del m.graph.initializer[0]
    with pytest.raises(CompileError) as e:
        npu.compile(m)
    assert str(e.value).count("\n") == 0
    assert "node '/layer1/conv' (Conv)" in str(e.value)
