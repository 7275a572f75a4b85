"""Image rows folded into a pixel's slots: the small-channel conv of an
NCHW image (an RGB stem) with img2col's fast mode for most of its kernel.

The small-channel mode of img2col reads 4 kernel points of 4 channels a K
fractal at half the normal rate (`Target.img2col_small_bytes_per_cycle`):
the 7x7 stem's 13 fractals took 50 cycles of MTE1 per M fractal, more
than the cube's 4 per fractal and Cout block x 13, and the conv was bound
by MTE1. Its map's slots 4..15 held zeros. Here (`image_map`'s staging,
`ImageMap.prior`) slot 4j + c of pixel (h, w) holds channel c of pixel
(h - j, w): one normal-mode fetch of kernel point (FOLD - 1, kw) reads
kernel rows FOLD-1..0 of column kw, 4 points in one fractal at the full
rate. The first Kw fractals are those (rows 0..3, column by column), the
rest the small mode's from point 4*Kw on, as before (the point count per
fractal is 4 either way, so K1 stays ceil(Kh*Kw/4)). The fetch row must
never fall in the padding (its pad would zero all four rows' slots), and
the image width must be whole 32-byte blocks (the rows above are read at
a block offset).

Only without an epilogue group on the drain, or with only a ReLU that the
drain applies on its way out of L0C (`drain_relu`: a model's stem, Conv
then Relu; `folded_stem`): the fold's staging takes UB an epilogue's tiles
need.

Slot 3 (channel 3 of a 3-channel image), folded or not, is a free input:
staged as ones, a weight there adds the bias in the cube, for free, where
a window reads the kernel point (pad_top, pad_left) in range every time
(`bias_point`); the drain then has no vadd.

The weights are the conv's host constants, reordered by npu-lower-conv
(`passes/lower_conv/stem_fold.py`).
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv.epilogue import CONV_EPILOGUE_ATTR, drain_cast, group_members
from npu.costmodel.conv.stem_pool import drain_pool
from npu.dialects.ascend_conv import NC1HWC0_C4, ConvGeometry, geometry, has_bias, is_int8, layout

SLOTS, REAL = 16, 4
FOLD = SLOTS // REAL  # image rows in a pixel's slots


def _in_range(g: ConvGeometry, axis: int, tap: int) -> bool:
    """Whether every window reads kernel row (axis 0) or column (1) `tap`
    inside the map, never in its padding."""
    size, pad, stride = (g.h, g.w)[axis], g.pads[axis], g.strides[axis]
    out = g.out_hw[axis]
    first, last = tap - pad, (out - 1) * stride + tap - pad
    return g.dilations[axis] == 1 and first >= 0 and last <= size - 1


def folds_rows(g: ConvGeometry, channels: int) -> bool:
    """Whether a small-channel conv of an NCHW image of `channels` channels
    folds its image rows (see the module docstring): at most 3 channels
    (slot 4j + 3 is a zero or ones row), a kernel of at least FOLD rows,
    the fetch row FOLD - 1 always in range, whole-block rows."""
    return (channels < REAL and g.kh >= FOLD and g.w % SLOTS == 0
            and _in_range(g, 0, FOLD - 1))


def bias_point(g: ConvGeometry, channels: int, fold: bool) -> tuple[int, int] | None:
    """(K fractal, column) of the weight that carries the bias: the column
    of channel 3 (a slot staged as ones) at kernel point (pad_top,
    pad_left), which every window reads in range; None where there is no
    such point or no free channel."""
    kh, kw = g.pads[0], g.pads[1]
    if channels >= REAL or not (kh < g.kh and kw < g.kw and _in_range(g, 0, kh)
                                and _in_range(g, 1, kw)):
        return None
    if fold and kh < FOLD:  # row kh of column kw: slot group FOLD - 1 - kh of fractal kw
        return kw, (FOLD - 1 - kh) * REAL + REAL - 1
    point = kh * g.kw + kw
    if fold and point < FOLD * g.kw:  # (kh >= FOLD here: the small fractals start at 4*Kw)
        return None
    return point // REAL, point % REAL * REAL + REAL - 1


def constant_root(value: ir.Value) -> ir.Value | None:
    """The function argument behind `value` through `memref.subview`s (npu-split-cores'
    channel parts) when it is a host constant (`npu.constant`), else None."""
    while not nir.is_block_argument(value):
        op = nir.defining_op(value)
        if op is None or op.name != "memref.subview":
            return None
        value = op.operands[0]
    # its data at hand (not an elided resource: IR printed without it)
    return value if isinstance(nir.constant_attr(value), ir.DenseElementsAttr) else None


def stem_with_constants(op: ir.Operation) -> bool:
    """Whether `op` is a small-channel conv of an NCHW image whose weights
    are a host constant (npu-lower-conv may rewrite them: `stem_fold`)."""
    x = nir.memref_shape(op.operands[0])
    return (layout(op) == NC1HWC0_C4 and len(x) == 4 and not is_int8(op)
            and constant_root(op.operands[1]) is not None)


def is_relu(m: ir.Operation) -> bool:
    """An `ascend.relu`, or the frontend's ReLU: `ascend.maxs` with 0."""
    if m.name == "ascend.relu":
        return True
    return (m.name == "ascend.maxs" and "scalar" in m.attributes
            and ir.FloatAttr(m.attributes["scalar"]).value == 0.0)


def bias_in_cube(op: ir.Operation) -> bool:
    """Whether npu-lower-conv puts this stem's bias in its weights
    (`bias_point`, folded or not, and a constant bias)."""
    if not stem_with_constants(op) or not has_bias(op) or constant_root(op.operands[2]) is None:
        return False
    g, channels = geometry(op), nir.memref_shape(op.operands[0])[1]
    return all(bias_point(g, channels, fold) is not None for fold in (False, True))


def drain_relu(op: ir.Operation) -> ir.Operation | None:
    """The member of the conv's epilogue group that its drain applies on
    the way out of L0C (the move's ReLU, `hivm.L0C_CONVERSIONS`
    "f32_to_f16_relu"), or None: the conv is a stem (`stem_with_constants`:
    the cube's kernel drains it), its group is the drain's rounding cast and
    one ReLU of its result, and nothing is added to the tile before the
    ReLU (no bias, or the bias in the cube: `bias_in_cube`). A model's stem
    (Conv, Relu) then has no vector work on its drain, and folds. A max
    pool after the ReLU may end the group (`stem_pool`: pooled on the drain)."""
    region = nir.enclosing_group(op, CONV_EPILOGUE_ATTR)
    cast = drain_cast(region, op) if region is not None and stem_with_constants(op) else None
    if cast is None:
        return None
    pool = drain_pool(region, op)
    members = [m for m in group_members(region, op) if m != cast and (pool is None or m != pool)]
    if len(members) != 1 or not is_relu(members[0]) or members[0].operands[0] != cast.operands[-1]:
        return None
    if nir.memref_element(members[0].operands[-1]) != "f16":
        return None
    return members[0] if not has_bias(op) or bias_in_cube(op) else None


def folded_stem(op: ir.Operation) -> bool:
    """Whether npu-lower-conv folds the image rows of this conv: a stem
    with constant weights (`stem_with_constants`) and no epilogue group on
    its drain, or only a ReLU its drain applies (`drain_relu`). The fold's
    staging holds 3 more image rows a channel in UB, which the epilogue's
    tiles need: stem 7x7/2 3->64 224 with a ReLU on V (per-op cycles)
    62,516 before, 60,490 with the bias in the cube, 67,241 folded; without
    a group (bench/conv.py) 54,072 before, 51,441 folded."""
    return ((nir.enclosing_group(op, CONV_EPILOGUE_ATTR) is None or drain_relu(op) is not None)
            and stem_with_constants(op)
            and folds_rows(geometry(op), nir.memref_shape(op.operands[0])[1]))


def k_order(kw: int, k1: int, tail: bool) -> tuple[int, ...]:
    """The K fractals of a folded stem in the order its chunks take them
    (position -> fractal): the small-channel ones (Kw..K1-1, half rate on
    MTE1) spread evenly among the folded ones (0..Kw-1, full rate), the
    single tail (`single_tail`) last. In fractal order a chunk of 3 small
    ones took MTE1 longer than the cube its mads (302 vs 272 cycles a band
    in the 7x7 stem), and the cube waited for it every band."""
    body = k1 - 1 if tail else k1
    small = list(range(kw, body))
    if not small or kw >= body:
        return tuple(range(k1))
    at = {int((i + 0.5) * body / len(small)) for i in range(len(small))}
    folded, spread = iter(range(kw)), iter(small)
    order = [next(spread) if j in at else next(folded) for j in range(body)]
    return tuple(order + ([k1 - 1] if tail else []))


def single_tail(op: ir.Operation) -> bool:
    """`ConvShape.single_tail` of a small-channel conv: Kh*Kw = 4g + 1, and
    the map's slots 4..15 hold zeros: an NC1HWC0 input's padded channels,
    or an NCHW image of at most 3 channels (its staging fills slots 4..15
    from a zero channel row, `image_map`; folded, they hold the rows above,
    read with zero weights: the same products)."""
    g = geometry(op)
    x = nir.memref_shape(op.operands[0])
    return (layout(op) == NC1HWC0_C4 and g.kh * g.kw % 4 == 1
            and (len(x) == 5 or x[1] < 4))


def image_bytes(channels: int, w: int, band_rows: list[int]) -> int:
    """GM bytes a folded stem's bands read (`image_map`'s staging): each
    band's input rows of its NCHW f16 image, channel by channel, and the
    FOLD - 1 rows above them its staging reads again (not the map's 16
    slots a pixel). Stem 7x7/2 3->64 224 (38 bands of 11 rows): 715 KB;
    simulated, its conv reads 724 KB of image."""
    return sum(channels * (rows + FOLD - 1) * w * 2 for rows in band_rows)


def edges_hidden(fold: int, vector: float) -> bool:
    """Whether a conv's bands hide their first chunk's loads: a folded
    stem (`fold`) with no vector work on its drain (`vector`).

    A folded stem with no vector work on its drain (none, or the move's ReLU:
    `drain_relu`) keeps the cube busy from band to band: the next band's map
    is staged ahead (two maps) and its first chunk's img2col (the fold's
    normal mode) runs while the last mads of the band before do, so only the
    conv's first chunk is exposed. Simulated, 7x7/2 3->64 224 with its ReLU
    leaves the cube idle 3.4k of 50.0k cycles over its 38 bands; est. 70,472
    cycles with each band's first chunk exposed, 59,369 without (and the
    image's bytes on MTE2, `image_bytes`), simulated 52,490. The bands' edge
    cost (`tiling.BAND_OVERHEAD`) stays: without it the plain folded stem
    (bench/conv.py) takes bands of 3 rows, not 4 (51,441 -> 53,780 cycles)."""
    return bool(fold) and not vector
