"""The host side of a folded stem (`npu.costmodel.conv.stem_fold`): the
conv's constant small-channel weights reordered for the folded map, with
the bias in the column its map's slot of ones feeds.

Small-channel fractal-Z [K1, Cout1, 16, 16]: column 4p + c of fractal f is
channel c of kernel point 4f + p. Folded, fractals 0..Kw-1 are column kw's
rows FOLD-1..0: column 4j + c of fractal kw is channel c of point
(FOLD - 1 - j, kw); the others keep their points. The constant is
rewritten in place (same shape: a channel part's subview stays valid), so
only where this conv is its one reader.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.costmodel.conv.stem_fold import FOLD, REAL, bias_point, constant_root, k_order
from npu.dialects.ascend_conv import ConvGeometry
from npu.passes.lower_conv.compact_weights import constant_chain


@dataclass(frozen=True)
class StemFold:
    """What npu-lower-conv does to a small-channel conv of an NCHW image."""

    rows: bool   # image rows folded into the slots (`folds_rows`)
    bias: bool   # the bias in the weights, fed by a slot of ones (`bias_point`)
    order: tuple[int, ...] = ()  # folded: fractal of each K position (`k_order`)


def folded_weights(w: np.ndarray, kh: int, kw: int) -> np.ndarray:
    """Small-channel fractals -> the folded order (module docstring)."""
    out = w.copy()
    for col in range(kw):
        out[col] = 0
        for j in range(FOLD):
            point = (FOLD - 1 - j) * kw + col
            f, p = divmod(point, REAL)
            out[col, :, :, j * REAL:(j + 1) * REAL] = w[f, :, :, p * REAL:(p + 1) * REAL]
    return out


def with_bias(w: np.ndarray, bias: np.ndarray, at: tuple[int, int]) -> np.ndarray:
    """`w` with the bias of Cout block b, channel n at (fractal, column) `at`
    of block b's row n. Every other channel-3 weight is zeroed: the staged
    image's slot 3 is ones, where the conv's own input has no channel 3
    (fractal weights written by hand may carry values in that padding)."""
    out = w.copy()
    out[..., REAL - 1::REAL] = 0
    co1 = w.shape[1]
    out[at[0], :, :, at[1]] = bias[:co1 * 16].reshape(co1, 16).astype(w.dtype)
    return out


def fold_stem(g: ConvGeometry, channels: int, wz: ir.Value, bias: ir.Value | None,
              rows: bool) -> StemFold:
    """Rewrite the constant weights behind `wz` for the fold (`rows`) and
    the bias where they apply (weights and bias host constants, this conv
    the weights' one reader); returns what applies."""
    found = constant_chain(wz)
    at = bias_point(g, channels, rows)
    b_root = constant_root(bias) if bias is not None else None
    folded_bias = at is not None and b_root is not None
    if found is None or not (rows or folded_bias):
        return StemFold(False, False)
    root = found[0]
    data = nir.constant_argument(root)
    if rows:
        data = folded_weights(data, g.kh, g.kw)
    if folded_bias:
        data = with_bias(data, nir.constant_argument(b_root), at)
    order = k_order(g.kw, data.shape[0], g.kh * g.kw % REAL == 1) if rows else ()
    if order:
        data = data[list(order)]  # fractal order[j] at K position j
    with wz.context:
        nir.retype_constant(root, data)
    return StemFold(rows, folded_bias, order)
