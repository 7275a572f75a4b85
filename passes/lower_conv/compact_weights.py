"""The depthwise vector path's weight operand, made on the host.

The frontend lays a depthwise conv's constant weights out as the cube wants
them: the diagonal fractals [Kh*Kw, C1, 16, 16] of layout "nc1hwc0_bd", of
which one entry in 16 is real. The vector path reads one 16-channel block
per kernel point and C1 block, so when npu-lower-conv puts a conv on the
vector unit it takes the fractals' diagonals instead: [C1, Kh*Kw, 16] (a
tile's blocks are one burst), the constant argument retyped in place when
this conv is its only reader. 16x fewer weight bytes: at 960@7 the
fractals were 276 KB against 94 KB of input map, and the layer was bound
by GM reads. A weight that is not a constant (IR
written by hand) keeps its fractals, which the kernel sums out on chip.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu import ir as nir


def compact_data(fractals: np.ndarray) -> np.ndarray:
    """Diagonal fractals [K, C1, 16, 16] -> [C1, K, 16]: channel i of block j
    at kernel point k is fractal (k, j)'s entry (i, i)."""
    return np.ascontiguousarray(np.diagonal(fractals, axis1=2, axis2=3).transpose(1, 0, 2))


def has_constant(wz: ir.Value) -> bool:
    """Whether `wz` is an `npu.constant` argument (the frontend's host-made
    weights) that only this conv reads (so it can take the compact form)."""
    return (nir.is_block_argument(wz) and nir.constant_argument(wz) is not None
            and len(list(wz.uses)) == 1)


def compact_operand(wz: ir.Value) -> ir.Value:
    """The constant diagonal fractals `wz` become their diagonals, in place:
    same argument, new type and data (the interface's constants keep their
    positions, before the block index and the workspace)."""
    with wz.context:
        nir.retype_constant(wz, compact_data(nir.constant_argument(wz)))
    return wz
