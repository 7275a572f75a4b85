"""Convs on the rows their input was written on: no chip barrier between them.

A conv whose output rows are cut into runs over the cores (a grid of pb
images x 1 channel part x pr runs: every core writes all channels of its
rows) is often followed by a 1x1 conv (a ResNet bottleneck's conv3, the
next block's conv1) that reads exactly the rows of each run (unpadded,
H = stride * Ho; `conv.reads_own_rows`). On the same grid each core then
reads only what it wrote itself, and `barriers.place` puts no chip barrier
between the two: the barrier's `sync_all_cycles` and the wait for the
slowest core are saved, and the second conv's first loads overlap the
first's last stores on each core.

`choose` takes that grid when the conv cost model's estimate of it is at
most the best grid's plus what the barrier costs (`saving`). A depthwise
conv after a conv that cuts only channels takes its channel parts alike
(block-diagonal: each core reads the channel blocks it wrote).

`steer` looks one op ahead, for the conv before such a 1x1 conv (a
MobileNet block's depthwise 3x3 before its projection): its own best grid
often cuts channels (12 x 2, 18), on which the projection needs a barrier.
It puts that conv on a grid of whole-row runs instead when the two convs on
that grid (the second with no barrier after the first) model cheaper than
each on its best grid with a barrier between them, and the second conv then
takes the same grid (`planned`). It also steers ResNet-50's layer1 3x3
conv2s onto 1 x 28 for their conv3 (an earlier rule that steered every
bottleneck's conv2 so, without weighing the pair, measured slower: 353,931
-> 360,331 cycles in all, when ResNet-50 took 354k).
"""

from __future__ import annotations

import math
from itertools import islice
from typing import Protocol

from mlir import ir

from npu import ir as nir

from npu.costmodel.conv.epilogue import CONV_EPILOGUE_ATTR
from npu.dialects.ascend_conv import NC1HWC0_BD, layout
from npu.target import Target

from .barriers import Unit, place
from .rules import SplitRules
from .split import BATCH, INERT, ROWS, Split, split_of


class SplitCoresPass(Protocol):
    """What `choose` uses of the pass (`npu-split-cores`)."""

    rules: SplitRules
    target: Target

    def _split_at(self, op: ir.Operation, n: int) -> Split | tuple | None: ...

    def _best(self, op: ir.Operation, wanted: int) -> Split | tuple | None: ...

    def _unit(self, op: ir.Operation, found: Split | tuple) -> Unit: ...

    planned: dict  # op -> (images, runs): the grid `steer` chose it


def _is_conv(op: ir.Operation) -> bool:
    return op.name == "ascend.conv2d" or (
        op.name == "scf.execute_region" and CONV_EPILOGUE_ATTR in op.attributes)


def row_grid(split: Split | None) -> tuple[int, int] | None:
    """(images, runs) of a conv grid that cuts rows but not channels."""
    if split is None:
        return None
    grid = dict(split.grid)
    if grid.get("x") != 1 or grid.get(ROWS, 1) < 2:
        return None
    return grid.get(BATCH, 1), grid[ROWS]


def channel_grid(split: Split | None) -> int | None:
    """The channel parts of a conv grid that cuts only its channels."""
    if split is None:
        return None
    grid = dict(split.grid)
    return grid["x"] if set(grid) == {"x"} and grid["x"] > 1 else None


def saving(p: "SplitCoresPass") -> float:
    """Cycles a barrier-free start saves (an estimate): the barrier, and a
    load's and a store's latency that overlap the previous op's instead of
    following a drained chip."""
    t = p.target
    return t.sync_all_cycles + 2 * t.path("gm_to_ub").latency


def margin(p: "SplitCoresPass") -> float:
    """What `steer`'s pair must model cheaper by: the barrier and one
    latency, not `saving`'s two (the estimate's error on the row grids: by
    `saving`, MobileNetV2's 28x28x192 blocks went to 1 x 14 and measured
    about 1,000 cycles slower each, ResNet-50's layer2 conv3s to 1 x 28 and
    448 slower in all; a removed barrier measured about 1,100 cycles)."""
    t = p.target
    return t.sync_all_cycles + t.path("gm_to_ub").latency


def _on(p: "SplitCoresPass", op: ir.Operation, grid: tuple[int, int, int]
        ) -> Split | tuple | None:
    """`op`'s split on exactly that (images, channel parts, runs) grid."""
    p.rules.grid_of = grid
    try:
        return p._split_at(op, grid[0] * grid[1] * grid[2])  # noqa: SLF001
    finally:
        p.rules.grid_of = None


def _own(split: Split | None, p: "SplitCoresPass") -> float:
    """A conv split's estimate without the barrier `split_conv` adds to a
    row cut for its consumer: `steer` counts the barriers itself."""
    if split is None:
        return math.inf
    return split.cost - (p.target.sync_all_cycles if dict(split.grid).get(ROWS, 1) > 1 else 0)


def _conv(op: ir.Operation) -> ir.Operation:
    """The conv of a conv or of its epilogue group."""
    return op if op.name == "ascend.conv2d" else next(
        o for o in nir.walk(op, lambda o: o.name == "ascend.conv2d"))


def _runs(op: ir.Operation) -> list[int]:
    """The numbers of row runs a conv's output rows divide into."""
    ho = nir.memref_shape(_conv(op).operands[-1].type)[2]
    return [r for r in range(2, ho + 1) if ho % r == 0]


def _third(p: "SplitCoresPass", ops: list[Unit], nxt: ir.Operation, found: Split | tuple,
           last: tuple[ir.Operation, Split | tuple] | None) -> bool:
    """Whether the op after `nxt` (`last`, on its own best grid) needs a
    barrier after `ops` and `nxt` on `found`."""
    if last is None:
        return False
    both = ops + [p._unit(nxt, found), p._unit(*last)]  # noqa: SLF001
    return len(both) - 1 in place(both)


def steer(op: ir.Operation, found: Split | tuple | None, after_op: list[ir.Operation],
          units: list[Unit], wanted: int, p: "SplitCoresPass") -> Split | tuple | None:
    """`found`, or a grid of whole-row runs on which the next op, a conv,
    follows `op` with no barrier, when the two model cheaper on it than on
    their own best grids with a barrier between them, the op after them
    counted too (then the next op's grid is planned: `choose` takes it)."""
    if not _is_conv(op) or found is None or (units and units[-1].base):
        return found
    later = list(islice((o for o in after_op if not o.name.startswith(INERT)), 2))
    nxt = later[0] if later else None
    if nxt is None or not _is_conv(nxt):
        return found
    here, best_next = split_of(found), p._best(nxt, wanted)
    after = split_of(best_next)
    if after is None:
        return found
    third = p._best(later[1], wanted) if len(later) > 1 else None
    last = (later[1], third) if third is not None else None
    before = units + [p._unit(op, found)]  # noqa: SLF001
    then = _third(p, before, nxt, best_next, last)  # the op after them behind a barrier
    barrier = len(units) in place(before)  # before `op` on its own grid
    grid = row_grid(here)
    alone = _own(here, p) + _own(after, p) + saving(p)
    if grid is not None:  # on its own best grid already: would the next op follow it?
        same = _on(p, nxt, (grid[0], 1, grid[1]))
        if same is not None and len(units) + 1 not in place(before + [p._unit(nxt, same)]):  # noqa: SLF001
            alone = min(alone, _own(here, p) + _own(split_of(same), p))
    best: tuple[float, tuple[int, int, int], Split | tuple] | None = None
    for runs in _runs(op):
        if runs > wanted or (1, runs) == grid:
            continue
        mine, theirs = _on(p, op, (1, 1, runs)), _on(p, nxt, (1, 1, runs))
        if mine is None or theirs is None:
            continue
        cost = _own(split_of(mine), p) + _own(split_of(theirs), p)
        if best is not None and cost >= best[0]:
            continue
        ahead = units + [p._unit(op, mine)]  # noqa: SLF001
        if len(units) + 1 in place(ahead + [p._unit(nxt, theirs)]):  # noqa: SLF001
            continue
        if not barrier and len(units) in place(ahead):
            cost += saving(p)
        if not then and _third(p, ahead, nxt, theirs, last):
            cost += saving(p)
        best = (cost, (1, 1, runs), mine)
    if best is None or best[0] + margin(p) >= alone:
        return found
    p.planned[nxt] = best[1]
    return best[2]


def choose(op: ir.Operation, found: Split | tuple | None, units: list[Unit],
           splits: list, p: "SplitCoresPass") -> Split | tuple | None:
    """`found`, or the grid `steer` planned for it, or the previous unit's
    grid when on it the op needs no barrier and it models no more than
    `saving` slower: its row grid, or the channel parts of a conv that cut
    only channels when `op` is depthwise (each core's channel blocks in and
    out are the ones it wrote)."""
    if not _is_conv(op) or not units or units[-1].base:
        return found
    if (plan := p.planned.pop(op, None)) is not None:
        same = _on(p, op, plan)
        if same is not None and len(units) not in place(units + [p._unit(op, same)]):  # noqa: SLF001
            return same
    prev = split_of(splits[-1])
    rows, parts = row_grid(prev), channel_grid(prev)
    if rows is not None:
        grid = (rows[0], 1, rows[1])
    elif parts is not None and layout(_conv(op)) == NC1HWC0_BD:
        grid = (1, parts, 1)
    else:
        return found
    same = _on(p, op, grid)
    if same is None or split_of(same).cost <= 0:
        return found
    best = split_of(found)
    if best is not None and split_of(same).cost > best.cost + saving(p):
        return found
    if rows is None and best is not None and _own(split_of(same), p) + margin(p) >= _own(best, p) + saving(p):
        return found  # channel parts: weighed as `steer` weighs its pair
    if len(units) in place(units + [p._unit(op, same)]):  # noqa: SLF001
        return found  # still behind a barrier: nothing saved
    if best is not None and len(units) not in place(units + [p._unit(op, found)]):  # noqa: SLF001
        return found
    return same


def pick(op: ir.Operation, found: Split | tuple | None, after: list[ir.Operation],
         units: list[Unit], splits: list, wanted: int, p: "SplitCoresPass"
         ) -> Split | tuple | None:
    """`choose`, then `steer` with the next op of `after` (the ops after `op`)."""
    return steer(op, choose(op, found, units, splits, p), after, units, wanted, p)
