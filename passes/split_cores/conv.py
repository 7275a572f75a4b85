"""A conv (or a pool) over cores: its output channel blocks times runs of its
output rows.

Channel blocks alone leave most cores idle on the layers that hold most of
a CNN's work (64 channels are 4 blocks). So the cores form a grid of `pb`
parts of the batch, `pc` channel parts and `pr` row parts (`pb * pc * pr` at
most the cores asked for):

* a batch part takes N/pb images: its slices of the input and output maps;
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
(1 x 28 best: 4,544 cycles against 5,923 for 4 x 8). A depthwise conv
that npu-lower-conv may put on the vector unit counts the smaller of that
and the vector path's estimate of the share (`_vector_cost`, compact
weights): by the cube's alone MobileNetV2's 144@56 stride-2 layer took 9 x
2 and stayed on the cube, 3,727 cycles on 32 cores against 2,420 on the
vector unit over 1 x 28 (96@112/2: 6,049 -> 4,981).

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
from npu.costmodel.conv import epilogue as epilogue_model
from npu.costmodel.conv.depthwise_vector import dw_shape, plan as vector_plan
from npu.costmodel.conv.tiling import ConvShape, choose_tiling, conv_shape
from npu.dialects.ascend_conv import (FORMS_5HD, NC1HWC0, NC1HWC0_BD, group_channels, has_bias,
                                      is_int8, layout)
from npu.passes.lower_conv.compact_weights import has_constant
from npu.dialects.ascend_pool import Pool2d
from npu.target import Target

from .split import BATCH, ROWS, Split


def split_conv(op: ir.Operation, parts: int, target: Target,
               grid_of: tuple[int, int, int] | None = None) -> Split | None:
    """The cheapest batch x channel x row grid of at most `parts` cores;
    with `grid_of = (pb, pc, pr)`, only that grid, to line up with the op
    that wrote its input (`aligned`)."""
    if layout(op) not in FORMS_5HD:
        return None
    shape = conv_shape(op)
    diagonal = layout(op) == NC1HWC0_BD
    best: Split | None = None
    grids = _grids(shape.batch, shape.co1, shape.ho, parts) if grid_of is None else (
        [grid_of] if grid_of[0] * grid_of[1] * grid_of[2] <= parts and shape.batch % grid_of[0] == 0
        and shape.co1 % grid_of[1] == 0 and shape.ho % grid_of[2] == 0 else [])
    for pb, pc, pr in grids:
        if not inner_runs_unpadded(shape.ho, shape.h, shape.stride_h, shape.pad_top,
                                   shape.extent_h, pr):
            continue
        cost = _cost(shape, pb, pc, pr, target)
        vector = _vector_cost(op, pb, pc, pr, target)
        cost = vector if cost is None else cost if vector is None else min(cost, vector)
        if cost is None:
            continue
        # a row cut's consumer (a pool, the next conv's halo) waits at a barrier
        cost += target.sync_all_cycles if pr > 1 else 0
        if best is not None and (cost, -pb * pc * pr) >= (best.cost, -best.parts):
            continue
        grid, out_cut = _grid(pb, pc, pr)
        in_cut = {**({0: BATCH} if pb > 1 else {}), **({1: "x"} if diagonal else {}),
                  **({2: ROWS} if pr > 1 and reads_own_rows(shape, pr) else {})}
        cuts = (in_cut, {1: "x"}, *(({0: "x"},) if has_bias(op) else ()), out_cut)
        best = Split(cuts, grid, cost, frozenset({ROWS}))
    return best if best is not None and best.parts > 1 else None


def _grids(batch: int, co1: int, ho: int, parts: int):
    """(pb, pc, pr) that divide the batch, the channel blocks and the rows,
    on at most `parts` cores."""
    for pb in range(1, min(batch, parts) + 1):
        for pc in range(1, parts // pb + 1):
            for pr in range(1, parts // (pb * pc) + 1):
                if batch % pb == 0 and co1 % pc == 0 and ho % pr == 0:
                    yield pb, pc, pr


def _grid(pb: int, pc: int, pr: int) -> tuple[tuple, dict[int, str]]:
    """The grid (its trivial axes left out but the channels) and the cut of
    an output map [N, C1, Ho, Wo, C0] on it."""
    grid = ((BATCH, pb),) * (pb > 1) + (("x", pc),) + ((ROWS, pr),) * (pr > 1)
    out_cut = {**({0: BATCH} if pb > 1 else {}), 1: "x", **({2: ROWS} if pr > 1 else {})}
    return grid, out_cut


def reads_own_rows(shape: ConvShape, pr: int) -> bool:
    """Each of the pr runs of output rows reads only its own pr-th of the
    input rows (a 1x1 conv, unpadded, H = stride * Ho): then its input
    counts as cut by rows for the barriers, and a conv after one that wrote
    the same runs of rows on the same cores needs no chip barrier."""
    if shape.h % pr:
        return False
    rows, part = shape.ho // pr, shape.h // pr
    for r in range(pr):
        first, n = shape.band_rows(r * rows, rows)
        top = r * rows * shape.stride_h - shape.pad_top
        if top < 0 or first < r * part or first + n > (r + 1) * part:
            return False
    return True


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
    """An NC1HWC0 pool over its images and channel blocks and, when they are
    too few, runs of its output rows (its lowering's `core_part`): the grid
    with the most cores, then the fewest runs."""
    if layout(op) != NC1HWC0:
        return None
    x, y = (nir.memref_shape(v.type) for v in op.operands)
    pool = Pool2d.of(op)
    most_cores_fewest_runs = sorted(_grids(y[0], y[1], y[2], parts),
                                    key=lambda g: (-g[0] * g[1] * g[2], g[2]))
    for pb, pc, pr in most_cores_fewest_runs:
        if not inner_runs_unpadded(y[2], x[2], pool.strides[0], pool.pads[0], pool.span(0), pr):
            continue
        if y[0] // pb > 1 and pc > 1:
            continue  # images of a cut of C1: a strided view, which npu-lower-pool refuses
        grid, out_cut = _grid(pb, pc, pr)
        in_cut = {**({0: BATCH} if pb > 1 else {}), 1: "x"}
        return Split((in_cut, out_cut), grid, unsliced=frozenset({ROWS}))
    return None


def _cost(shape: ConvShape, pb: int, pc: int, pr: int, t: Target) -> float | None:
    """One core's estimate (the conv cost model on its share), or the chip's
    GM traffic over the chip's bandwidth when that is longer."""
    core = replace(shape.row_part(pr), co1=shape.co1 // pc, batch=shape.batch // pb,
                   c1=shape.c1 // pc if shape.diagonal else shape.c1,
                   weights_gate=False)  # see ConvShape.weights_gate
    tiling = choose_tiling(core, t)
    if tiling is None:
        return None
    frac = t.fractal_bytes(2)
    map_block = 64 if core.int8 else 32  # an int8 block of 32 channels is two f16 blocks in GM
    moved = (core.batch * (core.c1 * core.read_rows * core.w * map_block
                           + core.ho * core.wo * core.co1 * 16 * core.out_bytes)
             + core.k1 * core.co1 * frac)
    return max(tiling.cycles, pb * pc * pr * moved / t.gm_chip_bytes_per_cycle)


def _vector_cost(op: ir.Operation, pb: int, pc: int, pr: int, t: Target) -> float | None:
    """The depthwise vector path's estimate of one core's share (its
    weights compact when they are a constant), which npu-lower-conv takes
    when it beats the cube's; None where that path does not apply."""
    if layout(op) != NC1HWC0_BD or group_channels(op) != 1 or is_int8(op):
        return None
    s = dw_shape(op, _tile_type(op), has_bias(op), compact=has_constant(op.operands[1]))
    s = replace(s, n=s.n // pb, c1=s.c1 // pc)
    p = vector_plan(s.row_part(pr) if pr > 1 else s, t, t.capacity("ub"))
    return p.cycles if p is not None else None


def _tile_type(op: ir.Operation) -> str:
    """The type the conv's tiles accumulate in on the vector path: f16 when
    its drain rounds the f32 result (MobileNetV2's depthwise convs with their
    ReLU6), as in `LowerConv.out_type`; else its result's type."""
    group = nir.enclosing_group(op, epilogue_model.CONV_EPILOGUE_ATTR)
    if group is not None and epilogue_model.drain_cast(group, op) is not None:
        return "f16"
    return nir.memref_element(op.operands[-1].type)
