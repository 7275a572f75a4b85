"""Reference semantics of the int8 cube matmul in numpy (see reference.py).

i8 x i8 products are exact and accumulate in i32 (wrapping, like the
cube's accumulator); a's Nz blocks are 16 x K0 and b's K0 x 16 (K0 = 32), so
the fractal helpers here take rectangular blocks. Written from
dialects/README.md and ../shared/CONV.md, sharing no code with the lowerings.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


def fractalize_blocks(src: np.ndarray, dst_shape: Sequence[int]) -> np.ndarray:
    """ND `[..., R, C]` -> Nz `[..., C1, R1, r0, c0]`, zero padding."""
    *lead, c1, r1, r0, c0 = dst_shape
    full = tuple(lead) + (r1 * r0, c1 * c0)
    if tuple(src.shape) == full:  # no padding: the zero fill and its copy were two passes
        padded = src             # over a BERT-12's 170 MB of weights for nothing
    else:
        padded = np.zeros(full, dtype=src.dtype)
        padded[..., :src.shape[-2], :src.shape[-1]] = src
    n = len(lead)
    blocks = padded.reshape(tuple(lead) + (r1, r0, c1, c0))
    return blocks.transpose(*range(n), n + 2, n, n + 1, n + 3).copy()


def defractalize_blocks(src: np.ndarray) -> np.ndarray:
    """Nz `[..., C1, R1, r0, c0]` -> the whole padded ND `[..., R1*r0, C1*c0]`."""
    *lead, c1, r1, r0, c0 = src.shape
    n = len(lead)
    return src.transpose(*range(n), n + 1, n + 2, n, n + 3).reshape(
        tuple(lead) + (r1 * r0, c1 * c0)).copy()


def matmul_i8(a: np.ndarray, b: np.ndarray, c_shape: Sequence[int]) -> np.ndarray:
    """C (Nz i32) = A (Nz i8, 16xK0 blocks) x B (Nz i8, K0x16 blocks)."""
    a_nd = defractalize_blocks(a).astype(np.int64)
    b_nd = defractalize_blocks(b).astype(np.int64)
    # int64 holds every partial sum of K < 2**48 exactly; i32 wraps once at the end,
    # which equals wrapping at every step (two's complement addition).
    product = np.matmul(a_nd, b_nd).astype(np.int32)
    return fractalize_blocks(product, c_shape)


def _per_column(value: float | np.ndarray, cols: int) -> np.ndarray:
    """A scalar or a per-column (output channel) vector, broadcast over rows."""
    v = np.asarray(value, dtype=np.float64)
    if v.ndim == 0:
        return v
    if v.shape != (cols,):
        raise ValueError(f"a per-channel value needs {cols} entries, got shape {v.shape}")
    return v


def dequantize_acc(acc: np.ndarray, scale: float | np.ndarray, out_dtype: type) -> np.ndarray:
    """i32 accumulator [..., M, K] -> float: acc * scale (one scale or one per
    column), computed in float64 and rounded once to `out_dtype` (f16/f32)."""
    s = _per_column(scale, acc.shape[-1])
    return (acc.astype(np.float64) * s).astype(out_dtype)


def requantize(acc: np.ndarray, scale: float | np.ndarray, zero_point: int | np.ndarray,
               out_dtype: type = np.int8) -> np.ndarray:
    """i32 accumulator -> int8/uint8 as ONNX QuantizeLinear defines it:
    round half to even of acc * scale, plus the zero point, saturated."""
    s = _per_column(scale, acc.shape[-1])
    zp = _per_column(zero_point, acc.shape[-1])
    info = np.iinfo(out_dtype)
    q = np.rint(acc.astype(np.float64) * s) + zp  # np.rint: ties to even
    return np.clip(q, info.min, info.max).astype(out_dtype)
