"""Reference semantics of `ascend.conv2d` in numpy (see dialects/README.md).

Written from the contract alone, as a plain sum over kernel points, and
shared by nothing but the reference interpreter and host constant folding:
f16 input and weight multiply exactly in fp32, accumulate in fp32; an f32
result adds the bias and rounds once; an f16 result is rounded to f16, then
the f16 bias added (one more rounding: the cube's converting drain). Pads
are zeros.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


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
