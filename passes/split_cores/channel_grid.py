"""A lone elementwise op over an NC1HWC0 map of fewer channel blocks than
cores: a grid of its channel blocks by runs of rows; a fused group with a
per-channel operand that no split gives one block a core: its ops alone.

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
from typing import Callable

from mlir import ir

from npu import ir as nir
from npu.costmodel.fusion.rows import FUSED_ATTR, has_per_block, per_block

from .split import Split


def per_block_op(types: list) -> bool:
    """An op of a per-channel operand (`fusion.rows.per_block`): its
    lowering loops over the channel blocks, one latency-bound row-broadcast
    pass each, so its cores' time is in their blocks, not their bytes: every
    even split pays, however few bytes a core moves (DenseNet's BN at 7x7
    on 34-62 blocks: two cores of 17 took 29k cycles)."""
    out = nir.memref_shape(types[-1])
    return any(per_block(nir.memref_shape(t), out) for t in types[:-1])


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


def dissolve_per_block(region: ir.Operation) -> bool:
    """Dissolve a fused group with a per-channel operand
    (`fusion.rows.per_block`: a row operand only on a core of one channel
    block) into its ops, which then split or lower alone; False (nothing
    done) for any other group."""
    if FUSED_ATTR not in region.attributes or not has_per_block(region):
        return False
    nir.dissolve_group(region, [])
    return True


def dissolve_unsplit(func: ir.Operation, best: Callable[[ir.Operation], object]) -> None:
    """Before the split: the per-channel groups of `func` that no core count
    splits (`best(op)`, the split over the most cores, None) are dissolved,
    so that their ops take their own splits (`channel_grid`)."""
    for op in [child.operation for child in func.regions[0].blocks[0].operations]:
        if (op.name == "scf.execute_region" and FUSED_ATTR in op.attributes and has_per_block(op)
                and best(op) is None):
            dissolve_per_block(op)


def one_block(group: ir.Operation, split: Split) -> bool:
    """A per-channel group's split of one channel block a core: taken
    however few bytes a core moves (the alternative is its ops alone, a GM
    round trip each)."""
    return (FUSED_ATTR in group.attributes and dict(split.grid).get("y") == 1
            and has_per_block(group))
