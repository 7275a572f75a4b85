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
