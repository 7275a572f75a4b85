"""Reference semantics of `ascend.conv2d` in numpy (see dialects/README.md).

Written from the contract alone, as a plain sum over kernel points, and
shared by nothing but the reference interpreter and host constant folding:
f16 input and weight multiply exactly in fp32, accumulate in fp32; an f32
result adds the bias and rounds once; an f16 result is rounded to f16, then
the f16 bias added (one more rounding: the cube's converting drain). Pads
are zeros. The int8 form (i8 weight) is exact: the f16 input narrowed to
int8 toward zero with saturation, padded taps `pad_value`, products summed
in int64 and wrapped to i32 with the i32 bias.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from mlir import ir

from npu.dialects.ascend_conv import layout, pad_value
from npu.ir.accessors import int_array_attr, int_attr


def conv2d(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, strides: Sequence[int],
           pads: Sequence[int], dilations: Sequence[int], groups: int,
           out_dtype=np.float32) -> np.ndarray:
    """NCHW conv: x [N, C, H, W], w [Cout, C/groups, Kh, Kw], bias [Cout];
    pads (top, left, bottom, right)."""
    n, c, h, wd = x.shape
    cout, cg, kh, kw = w.shape
    sh, sw = strides
    dh, dw = dilations
    top, left, bottom, right = pads
    xp = np.zeros((n, c, h + top + bottom, wd + left + right), np.float32)
    xp[:, :, top:top + h, left:left + wd] = x
    ho = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    wo = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    og = cout // groups
    out = np.zeros((n, cout, ho, wo), np.float32)
    wf = w.astype(np.float32)
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh:i * dh + sh * (ho - 1) + 1:sh, j * dw:j * dw + sw * (wo - 1) + 1:sw]
                # [N, cg, Ho, Wo] x [og, cg] -> [N, og, Ho, Wo], fp32 accumulation
                out[:, g * og:(g + 1) * og] += np.einsum(
                    "nchw,oc->nohw", patch, wf[g * og:(g + 1) * og, :, i, j], dtype=np.float32)
    if bias is not None:
        if np.dtype(out_dtype) == np.float16:  # the sum is rounded to f16 before the bias
            out = out.astype(np.float16).astype(np.float32)
        out += bias.astype(np.float32).reshape(1, cout, 1, 1)
    return out.astype(out_dtype)


def narrow_int8(x: np.ndarray) -> np.ndarray:
    """f16 -> int8 as the int8 conv reads its input: toward zero, saturating."""
    return np.clip(np.trunc(x.astype(np.float32)), -128, 127).astype(np.int8)


def wrap_i32(values: np.ndarray) -> np.ndarray:
    return values.astype(np.int64).astype(np.uint64).astype(np.uint32).view(np.int32)


def conv2d_int8(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, strides: Sequence[int],
                pads: Sequence[int], dilations: Sequence[int], pad_value: int = 0) -> np.ndarray:
    """The int8 NCHW conv (groups = 1): x [N, C, H, W] f16 (int8 values), w
    [Cout, C, Kh, Kw] i8, bias [Cout] i32 -> [N, Cout, Ho, Wo] i32."""
    n, c, h, wd = x.shape
    cout, _, kh, kw = w.shape
    (sh, sw), (dh, dw), (top, left, bottom, right) = strides, dilations, pads
    xp = np.full((n, c, h + top + bottom, wd + left + right), pad_value, np.int64)
    xp[:, :, top:top + h, left:left + wd] = narrow_int8(x)
    ho = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    wo = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, cout, ho, wo), np.int64)
    wi = w.astype(np.int64)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dh:i * dh + sh * (ho - 1) + 1:sh, j * dw:j * dw + sw * (wo - 1) + 1:sw]
            out += np.einsum("nchw,oc->nohw", patch, wi[:, :, i, j])
    if bias is not None:
        out += bias.astype(np.int64).reshape(1, cout, 1, 1)
    return wrap_i32(out)


def oihw_of_fractal_z_int8(wz: np.ndarray, kh: int, kw: int) -> np.ndarray:
    """int8 fractal-Z [C1_32*Kh*Kw, Cout1, 16(out), 32(in)] -> [Cout1*16, C1_32*32, Kh, Kw]."""
    k1, co1, n0, c0 = wz.shape
    c1 = k1 // (kh * kw)
    return wz.reshape(c1, kh, kw, co1, n0, c0).transpose(3, 4, 0, 5, 1, 2).reshape(
        co1 * n0, c1 * c0, kh, kw)


def conv2d_int8_5hd(x5: np.ndarray, wz: np.ndarray, bias: np.ndarray | None, kernel: Sequence[int],
                    strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int],
                    pad_value: int = 0) -> np.ndarray:
    """The int8 conv in layout "nc1hwc0": x5 [N, C1, H, W, 16] f16, wz
    [C1_32*Kh*Kw, Cout1, 16, 32] i8 -> [N, Cout1, Ho, Wo, 16] i32 (an odd C1's
    last 16 channels of the 32-block read zeros; their weights are zero)."""
    w = oihw_of_fractal_z_int8(wz, *kernel)
    x = nchw_of_5hd(x5)
    if x.shape[1] < w.shape[1]:
        x = np.concatenate([x, np.zeros((x.shape[0], w.shape[1] - x.shape[1], *x.shape[2:]),
                                        x.dtype)], axis=1)
    out = conv2d_int8(x, w, bias, strides, pads, dilations, pad_value)
    n, c, ho, wo = out.shape
    return np.ascontiguousarray(out.reshape(n, c // 16, 16, ho, wo).transpose(0, 1, 3, 4, 2))


def nchw_of_5hd(x5: np.ndarray) -> np.ndarray:
    """[N, C1, H, W, C0] -> [N, C1*C0, H, W]."""
    n, c1, h, w, c0 = x5.shape
    return x5.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)


def oihw_of_fractal_z(wz: np.ndarray, kh: int, kw: int) -> np.ndarray:
    """Fractal-Z [C1*Kh*Kw, Cout1, C0(out), C0(in)] -> [Cout1*C0, C1*C0, Kh, Kw]."""
    k1, co1, n0, c0 = wz.shape
    c1 = k1 // (kh * kw)
    return wz.reshape(c1, kh, kw, co1, n0, c0).transpose(3, 4, 0, 5, 1, 2).reshape(
        co1 * n0, c1 * c0, kh, kw)


def oihw_of_small(wz: np.ndarray, kh: int, kw: int) -> np.ndarray:
    """Small-channel fractal-Z [ceil(Kh*Kw/4), Cout1, C0(out), 16] (column j of
    group g: kernel point 4g + j // 4, channel j % 4) -> [Cout1*C0, 4, Kh, Kw]."""
    groups, co1, n0, _ = wz.shape
    points = wz.reshape(groups, co1 * n0, 4, 4).transpose(1, 3, 0, 2).reshape(co1 * n0, 4, groups * 4)
    return np.ascontiguousarray(points[:, :, :kh * kw].reshape(co1 * n0, 4, kh, kw))


def conv2d_5hd(x5: np.ndarray, wz: np.ndarray, bias: np.ndarray | None, kernel: Sequence[int],
               strides: Sequence[int], pads: Sequence[int], dilations: Sequence[int],
               out_dtype=np.float32, small: bool = False, diagonal: bool = False) -> np.ndarray:
    """`ascend.conv2d` in layout "nc1hwc0" (the NCHW conv of the padded
    channels), "nc1hwc0_c4" (`small`: channels 0..3 of the one block) or
    "nc1hwc0_bd" (`diagonal`: block j of the output from block j of the input)."""
    if diagonal:
        taps, c1 = wz.shape[:2]
        dense = np.zeros((c1 * taps, c1, 16, 16), wz.dtype)
        for j in range(c1):
            dense[j * taps:(j + 1) * taps, j] = wz[:, j]
        wz = dense
    if small and x5.ndim == 4:  # the NCHW image itself (channels 4 - C are zeros)
        x = np.zeros((x5.shape[0], 4, *x5.shape[2:]), x5.dtype)
        x[:, :x5.shape[1]] = x5
    else:
        x = nchw_of_5hd(x5)[:, :4] if small else nchw_of_5hd(x5)
    w = oihw_of_small(wz, *kernel) if small else oihw_of_fractal_z(wz, *kernel)
    out = conv2d(x, w, bias, strides, pads, dilations, 1, out_dtype)
    n, c, ho, wo = out.shape
    return np.ascontiguousarray(out.reshape(n, c // 16, 16, ho, wo).transpose(0, 1, 3, 4, 2))


def conv2d_of(op: ir.Operation, ins: list[np.ndarray]) -> np.ndarray:
    """The result of the `ascend.conv2d` `op` on its operands' arrays `ins`."""
    bias = ins[2] if len(ins) == 4 else None
    geo = [int_array_attr(op, a) for a in ("strides", "pads", "dilations")]
    form = layout(op)
    if ins[1].dtype == np.int8:  # the int8 form
        if form == "nchw":
            return conv2d_int8(ins[0], ins[1], bias, *geo, pad_value(op))
        return conv2d_int8_5hd(ins[0], ins[1], bias, int_array_attr(op, "kernel"), *geo,
                               pad_value(op))
    if form == "nchw":
        return conv2d(ins[0], ins[1], bias, *geo, int_attr(op, "groups"), ins[-1].dtype)
    return conv2d_5hd(ins[0], ins[1], bias, int_array_attr(op, "kernel"), *geo, ins[-1].dtype,
                      form == "nc1hwc0_c4", form == "nc1hwc0_bd")
