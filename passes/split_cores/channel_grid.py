"""A lone elementwise op over an NC1HWC0 map of fewer channel blocks than
cores: a grid of its channel blocks by runs of rows.

A BatchNorm the conversion cannot fold into a conv (DenseNet's is
pre-activation: BN, ReLU, then the 1x1 conv) is a per-channel scale and
shift on the concat's NC1HWC0 map, [1, C1, H, W, 16] by [1, C1, 1, 1, 16]
(npu-fuse leaves it alone: its operand is no row, column or scalar). Cut
along one dim (`SplitRules.split`) it takes only C1 cores (4 of 32 at
DenseNet's first block). As a fused row group's (`groups._leading_pair`),
the grid here gives each core [1, 1, H / y, W, 16], contiguous, with its
channels' operand block; scalars whole. DenseNet-121 with BN drawn at
random, 224x224 on 32 cores: 1,200,149 -> 1,123,605 cycles.
"""

from __future__ import annotations

import math

from npu import ir as nir

from .split import Split


def channel_grid(types: list, parts: int) -> Split | None:
    """The grid of `parts` cores for an op whose result is `types[-1]`
    (None: not such an op, or no even grid)."""
    out = nir.memref_shape(types[-1])
    if len(out) != 5 or out[0] != 1 or out[1] >= parts or parts % out[1]:
        return None
    c1, y = out[1], parts // out[1]
    if out[2] % y or not all(nir.is_contiguous(t) for t in types):
        return None
    cuts = []
    for t in types:
        shape = nir.memref_shape(t)
        if shape == out:
            cuts.append({1: "x", 2: "y"})
        elif shape == [1, c1, 1, 1, out[4]]:
            cuts.append({1: "x"})
        elif math.prod(shape) == 1:
            cuts.append({})
        else:
            return None
    return Split(tuple(cuts), (("x", c1), ("y", y)))
