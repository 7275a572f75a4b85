"""The int8 form of `ascend.conv2d` (dialects/ascend_conv.py): its reference
semantics against a direct sum over taps, the nc1hwc0 form against the NCHW
one, and the reference interpreter on parsed IR."""

from __future__ import annotations

import numpy as np
import pytest

from npu.passes.linalg_to_ascend.conv_layouts import fractal_z_int8
from npu.reference_conv import conv2d_int8, conv2d_int8_5hd, narrow_int8


def direct(x, w, bias, stride, pad, pad_value):
    """out[n, o, i, j] = bias[o] + sum x_padded[n, c, i*s + a, j*s + b] * w[o, c, a, b], in Python ints."""
    n, c, h, wd = x.shape
    cout, _, kh, kw = w.shape
    xp = np.full((n, c, h + 2 * pad, wd + 2 * pad), pad_value, object)
    xp[:, :, pad:pad + h, pad:pad + wd] = narrow_int8(x).astype(object)
    ho, wo = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, cout, ho, wo), object)
    for i in range(ho):
        for j in range(wo):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.tensordot(patch, w.astype(object), axes=([1, 2, 3], [1, 2, 3]))
    return out + bias.astype(object).reshape(1, -1, 1, 1)


@pytest.mark.parametrize("c, stride, pad_value", [(5, 1, 0), (40, 2, -128), (64, 1, 7)])
def test_int8_reference_is_the_sum_over_taps(c: int, stride: int, pad_value: int) -> None:
    rng = np.random.default_rng(c)
    x = rng.integers(-128, 128, (2, c, 6, 7)).astype(np.float16)
    x[0, 0, 0, :3] = [2.75, -3.5, 300.0]  # narrowed toward zero, saturated
    w = rng.integers(-128, 128, (9, c, 3, 3)).astype(np.int8)
    bias = rng.integers(-10**6, 10**6, 9).astype(np.int32)
    got = conv2d_int8(x, w, bias, (stride, stride), (1, 1, 1, 1), (1, 1), pad_value)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, direct(x, w, bias, stride, 1, pad_value).astype(np.int64))


def test_int8_nc1hwc0_form_is_the_nchw_conv() -> None:
    rng = np.random.default_rng(1)
    c, cout = 40, 20  # C1 = 3 blocks of 16: the last 32-block half empty
    x = rng.integers(-128, 128, (1, c, 7, 7)).astype(np.float16)
    w = rng.integers(-128, 128, (cout, c, 3, 3)).astype(np.int8)
    bias = rng.integers(-1000, 1000, cout).astype(np.int32)
    want = conv2d_int8(x, w, bias, (2, 2), (1, 1, 1, 1), (1, 1), -5)
    x5 = np.zeros((1, 3, 7, 7, 16), np.float16)
    x5[0] = np.pad(x[0], ((0, 8), (0, 0), (0, 0))).reshape(3, 16, 7, 7).transpose(0, 2, 3, 1)
    wz = fractal_z_int8(w)
    assert wz.shape == (2 * 9, 2, 16, 32)
    b5 = np.zeros(32, np.int32)
    b5[:cout] = bias
    got = conv2d_int8_5hd(x5, wz, b5, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), -5)
    np.testing.assert_array_equal(got.transpose(0, 1, 4, 2, 3).reshape(1, 32, 4, 4)[:, :cout], want)


def test_int8_conv_through_the_reference_interpreter() -> None:
    from npu.ir import functions, make_context, parse_module
    from npu.reference import evaluate

    text = """
func.func @f(%x: memref<1x40x9x9xf16, "gm">, %w: memref<8x40x3x3xi8, "gm">, %b: memref<8xi32, "gm">,
             %y: memref<1x8x9x9xi32, "gm">) {
  "ascend.conv2d"(%x, %w, %b, %y) {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, pad_value = -128 : i64} : (memref<1x40x9x9xf16, "gm">, memref<8x40x3x3xi8, "gm">, memref<8xi32, "gm">, memref<1x8x9x9xi32, "gm">) -> ()
  return
}"""
    module = parse_module(text, make_context())
    rng = np.random.default_rng(2)
    x = rng.integers(-128, 128, (1, 40, 9, 9)).astype(np.float16)
    w = rng.integers(-128, 128, (8, 40, 3, 3)).astype(np.int8)
    b = rng.integers(-1000, 1000, 8).astype(np.int32)
    y = np.zeros((1, 8, 9, 9), np.int32)
    results = evaluate(functions(module)[0].operation, [x, w, b, y])
    np.testing.assert_array_equal(results[-1], direct(x, w, b, 1, 1, -128).astype(np.int64))
