"""A conv over cores: its output channel blocks times runs of its output rows.

Channel blocks alone leave most cores idle on the layers that hold most of
a CNN's work (64 channels are 4 blocks). So the cores form a grid of `pc`
channel parts and `pr` row parts (`pc * pr` = the cores asked for):

* a channel part takes Cout/pc channels: its columns of the fractal-Z
  weights (a strided slice: one burst per K1 row), of the bias and of the
  output; in the block-diagonal form (depthwise) its input blocks too;
* a row part computes Ho/pr output rows. The operands stay whole along H
  (slicing a map by rows would lose the pads at its edges): the conv gets
  `npu.core_part` and its lowering computes the core's rows, reading their
  input rows with the halo. For the barriers, the output counts as cut
  along its rows (the `"r"` axis is `unsliced`) and the input as read whole.

The grid has as few row parts as the channel blocks allow and gives each
core a tiling (the conv cost model's estimate of one core's share, or the
chip's GM traffic over its bandwidth, is the split's cost). Each row part
reads all of its channels' weights again, and an op after it cut by
channels waits at a barrier: on the simulator, more row parts than needed
cost more than the per-core estimate of a small conv says they save.

Row parts need Ho to divide evenly, and with three or more of them the inner
parts must see no padding, so that one static band plan serves all of them
(the lowering emits at most three variants: first, inner and last part).
"""

from __future__ import annotations

from dataclasses import replace

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv.tiling import ConvShape, choose_tiling, conv_shape
from npu.dialects.ascend_conv import FORMS_5HD, NC1HWC0_BD, geometry, has_bias, layout
from npu.target import Target

from .split import ROWS, Split


def split_conv(op: ir.Operation, parts: int, target: Target) -> Split | None:
    """The cheapest channel x row grid of `parts` cores for a one-image conv."""
    if layout(op) not in FORMS_5HD:
        return None
    out = nir.memref_shape(op.operands[-1].type)
    if out[0] != 1:
        return None
    shape = conv_shape(op)
    diagonal = layout(op) == NC1HWC0_BD
    for pr in range(1, parts + 1):
        pc = parts // pr
        if parts % pr or shape.co1 % pc or shape.ho % pr or not _inner_parts_unpadded(op, pr):
            continue
        cost = _cost(shape, pc, pr, target)
        if cost is None:
            continue
        channels = {1: "x"}
        out_cut = {1: "x", 2: ROWS} if pr > 1 else channels
        cuts = (channels if diagonal else {}, channels,
                *(({0: "x"},) if has_bias(op) else ()), out_cut)
        grid = (("x", pc), (ROWS, pr)) if pr > 1 else (("x", pc),)
        return Split(cuts, grid, cost, frozenset({ROWS}))
    return None


def _inner_parts_unpadded(op: ir.Operation, pr: int) -> bool:
    """Parts 1 .. pr-2 read no padding rows (always true for pr <= 2)."""
    if pr <= 2:
        return True
    g = geometry(op)
    rows = g.out_hw[0] // pr
    ext = g.kernel_extent[0]
    first = rows * g.strides[0] - g.pads[0]
    last = ((pr - 1) * rows - 1) * g.strides[0] - g.pads[0] + ext
    return first >= 0 and last <= g.h


def _cost(shape: ConvShape, pc: int, pr: int, t: Target) -> float | None:
    """One core's estimate (the conv cost model on its share), or the chip's
    GM traffic over the chip's bandwidth when that is longer."""
    core = replace(shape.row_part(pr), co1=shape.co1 // pc,
                   c1=shape.c1 // pc if shape.diagonal else shape.c1)
    tiling = choose_tiling(core, t)
    if tiling is None:
        return None
    frac = t.fractal_bytes(2)
    moved = (core.c1 * core.h * core.w * 32 + core.k1 * core.co1 * frac
             + core.ho * core.wo * core.co1 * 16 * core.out_bytes)
    return max(tiling.cycles, pc * pr * moved / t.gm_chip_bytes_per_cycle)
