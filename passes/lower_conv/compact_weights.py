"""Host-made forms of a conv's constant weights: the depthwise vector
path's diagonals (below), and streamed weights super tile by super tile
(`tile_major_data`, at the end).

The depthwise vector path's weight operand, made on the host.

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

On several cores npu-split-cores has already cut the fractals by channel
parts: the conv reads a `memref.subview` of the constant, a range of its C1
blocks (dim 1). The whole constant is then retyped once and the subview
re-cut along the compact form's C1 (dim 0), same offset and size: at
960@7 on 2 cores the vector path had summed the fractals again (each core
read 138 KB of weights for 4.7 KB of real ones).
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu import ir as nir


def compact_data(fractals: np.ndarray) -> np.ndarray:
    """Diagonal fractals [K, C1, 16, 16] -> [C1, K, 16]: channel i of block j
    at kernel point k is fractal (k, j)'s entry (i, i)."""
    return np.ascontiguousarray(np.diagonal(fractals, axis1=2, axis2=3).transpose(1, 0, 2))


def _cuts_channels_only(view: ir.Operation) -> bool:
    """A `memref.subview` of fractals [K, C1, 16, 16] that keeps every dim
    whole but C1 (dim 1), with unit strides: a channel part's slice."""
    src = nir.memref_shape(view.operands[0].type)
    offsets = list(ir.DenseI64ArrayAttr(view.attributes["static_offsets"]))
    sizes = list(ir.DenseI64ArrayAttr(view.attributes["static_sizes"]))
    strides = list(ir.DenseI64ArrayAttr(view.attributes["static_strides"]))
    return (len(src) == 4 and all(s == 1 for s in strides)
            and all(offsets[d] == 0 and sizes[d] == src[d] for d in (0, 2, 3)))


def constant_chain(wz: ir.Value) -> tuple[ir.Value, list[ir.Operation]] | None:
    """The `npu.constant` argument behind `wz` (the frontend's host-made
    weights) and the subviews from it to `wz`, outermost first, when this
    conv is its only reader and each subview is a range of C1 blocks
    (npu-split-cores' channel parts); else None."""
    chain: list[ir.Operation] = []
    value = wz
    while not nir.is_block_argument(value):
        view = nir.defining_op(value)
        if view.name != "memref.subview" or len(list(value.uses)) != 1 \
                or not _cuts_channels_only(view):
            return None
        chain.append(view)
        value = view.operands[0]
    if nir.constant_argument(value) is None or len(list(value.uses)) != 1:
        return None
    return value, chain[::-1]


def has_constant(wz: ir.Value) -> bool:
    """Whether `wz` can take the compact form (see `constant_chain`)."""
    return constant_chain(wz) is not None


def compact_operand(wz: ir.Value) -> ir.Value:
    """The constant diagonal fractals behind `wz` become their diagonals, in
    place: same argument, new type and data (the interface's constants keep
    their positions, before the block index and the workspace); each
    subview on the way to `wz` is re-cut along the compact C1 (dim 0) with
    its offset and size. Returns the value that replaces `wz`."""
    found = constant_chain(wz)
    assert found is not None, "compact_operand: not a constant read by this conv only"
    root, chain = found
    with wz.context:
        data = compact_data(nir.constant_argument(root))
        nir.retype_constant(root, data)
        value = root
        for view in chain:
            offset = list(ir.DenseI64ArrayAttr(view.attributes["static_offsets"]))[1]
            if offset == ir.ShapedType.get_dynamic_stride_or_offset():
                offset = view.operands[1]  # the one dynamic offset (the others are 0)
            size = list(ir.DenseI64ArrayAttr(view.attributes["static_sizes"]))[1]
            with view.location, ir.InsertionPoint(view):
                cut = nir.subview(value, [offset, 0, 0], [size, *data.shape[1:]])
            view.results[0].replace_all_uses_with(cut)
            view.erase()
            value = cut
    return value


# -- streamed weights, tile by tile -------------------------------------------
# A conv whose weights do not stay in L1 streams them a super tile (n1 Cout
# blocks, every K1 row) at a time. In fractal-Z [K1, Co1, 16, C0] a super
# tile's rows are K1 bursts of n1 blocks each, and every burst costs the mover
# `gm_burst_cycles`: ResNet-50's 3x3 512->512 on 7x7 streamed 4.7 MB in 3,456
# bursts, on its bound pipe (MTE2). Laid out super tile after super tile on the
# host, each tile ([K1, its blocks, 16, C0]) is one run of GM and one burst.


def streams_tiles(wz: ir.Value, co1: int, n1: int, resident: bool) -> bool:
    """Whether the conv streams its weights in super tiles of fewer than all
    Cout blocks and they are a host constant of this conv alone, not cut
    by npu-split-cores (a core's channel part would no longer be a range)."""
    if resident or n1 >= co1 or len(nir.memref_shape(wz)) != 4 or nir.memref_shape(wz)[1] != co1:
        return False
    attr = nir.constant_attr(wz)  # not an elided resource (IR printed without its data)
    if not isinstance(attr, ir.DenseElementsAttr):
        return False
    found = constant_chain(wz)
    return found is not None and not found[1]


def tile_major_data(fractals: np.ndarray, n1: int) -> np.ndarray:
    """Fractal-Z [K1, Co1, 16, C0] -> flat, super tile after super tile:
    the tile at Cout block s0 starts at element s0 * K1 * 16 * C0 (every
    earlier tile is n1 blocks wide), each [K1, its blocks, 16, C0]."""
    co1 = fractals.shape[1]
    return np.concatenate([fractals[:, s0:s0 + n1].reshape(-1) for s0 in range(0, co1, n1)])


def tile_major_operand(wz: ir.Value, n1: int) -> ir.Value:
    """The constant weights behind `wz` retyped in place to `tile_major_data`
    (one dimension: the kernel reads it as `ConvWeights.copy_tile_weights`)."""
    with wz.context:
        nir.retype_constant(wz, tile_major_data(nir.constant_argument(wz), n1))
    return wz
