"""Reference semantics of `ascend.conv2d` in numpy (see dialects/README.md).

Written from the contract alone, as a plain sum over kernel points, and
shared by nothing but the reference interpreter and host constant folding:
f16 input and weight multiply exactly in fp32, accumulate in fp32 with the
bias (fp32), then round once to the output type. Pads are zeros.
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
        out += bias.astype(np.float32).reshape(1, cout, 1, 1)
    return out.astype(out_dtype)
