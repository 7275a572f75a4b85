"""A conv (or a pool) over cores: its output channel blocks times runs of its
output rows.

Channel blocks alone leave most cores idle on the layers that hold most of
a CNN's work (64 channels are 4 blocks). So the cores form a grid of `pc`
channel parts and `pr` row parts (`pc * pr` at most the cores asked for):

* a channel part takes Cout/pc channels: its columns of the fractal-Z
  weights (a strided slice: one burst per K1 row), of the bias and of the
  output; in the block-diagonal form (depthwise) its input blocks too;
* a row part computes Ho/pr output rows. The operands stay whole along H
  (slicing a map by rows would lose the pads at its edges): the conv gets
  `npu.core_part` and its lowering computes the core's rows, reading their
  input rows with the halo. For the barriers, the output counts as cut
  along its rows (the `"r"` axis is `unsliced`) and the input as read whole.

The grid is the cheapest of all grids of at most the cores asked for: the
conv cost model's estimate of one core's share (`choose_tiling`), or the
chip's GM traffic over its bandwidth when longer, plus a chip barrier for a
row cut (its consumer, a pool or the next conv's halo, usually waits for
other cores' rows). Channel parts each img2col the same input rows again
and row parts each read their channels' weights again: on ResNet-18's
56x56x64 layer the model's ranking of the 11 grids matched the simulator's
(1 x 28 best: 4,544 cycles against 5,923 for 4 x 8).

An NC1HWC0 pool splits the same way (`split_pool`), its lowering choosing
its rows by the same `core_part`.

Row parts need Ho to divide evenly, and with three or more of them the inner
parts must see no padding, so that one static band plan serves all of them
(the lowering emits at most three variants: first, inner and last part).
"""

from __future__ import annotations

from dataclasses import replace

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv.tiling import ConvShape, choose_tiling, conv_shape
from npu.dialects.ascend_conv import FORMS_5HD, NC1HWC0, NC1HWC0_BD, geometry, has_bias, layout
from npu.dialects.ascend_pool import Pool2d
from npu.target import Target

from .split import ROWS, Split


def split_conv(op: ir.Operation, parts: int, target: Target) -> Split | None:
    """The cheapest channel x row grid of at most `parts` cores for a one-image conv."""
    if layout(op) not in FORMS_5HD:
        return None
    out = nir.memref_shape(op.operands[-1].type)
    if out[0] != 1:
        return None
    shape = conv_shape(op)
    diagonal = layout(op) == NC1HWC0_BD
    best: Split | None = None
    for pc in range(1, parts + 1):
        for pr in range(1, parts // pc + 1):
            if shape.co1 % pc or shape.ho % pr or not _inner_parts_unpadded(op, pr):
                continue
            cost = _cost(shape, pc, pr, target)
            if cost is None:
                continue
            # a row cut's consumer (a pool, the next conv's halo) waits at a barrier
            cost += target.sync_all_cycles if pr > 1 else 0
            if best is not None and (cost, -pc * pr) >= (best.cost, -best.parts):
                continue
            channels = {1: "x"}
            out_cut = {1: "x", 2: ROWS} if pr > 1 else channels
            cuts = (channels if diagonal else {}, channels,
                    *(({0: "x"},) if has_bias(op) else ()), out_cut)
            grid = (("x", pc), (ROWS, pr)) if pr > 1 else (("x", pc),)
            best = Split(cuts, grid, cost, frozenset({ROWS}))
    return best if best is not None and best.parts > 1 else None


def _inner_parts_unpadded(op: ir.Operation, pr: int) -> bool:
    g = geometry(op)
    return inner_runs_unpadded(g.out_hw[0], g.h, g.strides[0], g.pads[0], g.kernel_extent[0], pr)


def inner_runs_unpadded(ho: int, h: int, stride: int, pad_top: int, extent: int, pr: int) -> bool:
    """Runs 1 .. pr-2 of Ho/pr output rows read no padding rows (always
    true for pr <= 2): then one static plan serves all of them."""
    if pr <= 2:
        return True
    rows = ho // pr
    first = rows * stride - pad_top
    last = ((pr - 1) * rows - 1) * stride - pad_top + extent
    return first >= 0 and last <= h


def split_pool(op: ir.Operation, parts: int) -> Split | None:
    """An NC1HWC0 pool of one image over its channel blocks and, when they
    are too few, runs of its output rows (its lowering's `core_part`)."""
    if layout(op) != NC1HWC0:
        return None
    x, y = (nir.memref_shape(v.type) for v in op.operands)
    if y[0] != 1:
        return None
    pool = Pool2d.of(op)
    for pr in range(1, parts + 1):
        pc = parts // pr
        if parts % pr or y[1] % pc or y[2] % pr or not inner_runs_unpadded(
                y[2], x[2], pool.strides[0], pool.pads[0], pool.span(0), pr):
            continue
        channels = {1: "x"}
        grid = (("x", pc), (ROWS, pr)) if pr > 1 else (("x", pc),)
        return Split((channels, {1: "x", 2: ROWS} if pr > 1 else channels), grid,
                     unsliced=frozenset({ROWS}))
    return None


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
