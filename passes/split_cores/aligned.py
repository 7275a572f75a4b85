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
most the best grid's plus what the barrier costs (`saving`). (Also steering
the conv before, a bottleneck's 3x3 conv2, onto a row grid for its conv3
cut ResNet-50's barriers from 50 to 47 but made it slower, 353,931 ->
360,331 cycles: the model's row grids on 28 rows are too cheap.)
"""

from __future__ import annotations

from typing import Protocol

from mlir import ir

from npu.costmodel.conv.epilogue import CONV_EPILOGUE_ATTR
from npu.target import Target

from .barriers import Unit, place
from .rules import SplitRules
from .split import BATCH, ROWS, Split, split_of


class SplitCoresPass(Protocol):
    """What `choose` uses of the pass (`npu-split-cores`)."""

    rules: SplitRules
    target: Target

    def _split_at(self, op: ir.Operation, n: int) -> Split | tuple | None: ...

    def _unit(self, op: ir.Operation, found: Split | tuple) -> Unit: ...


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


def saving(p: "SplitCoresPass") -> float:
    """Cycles a barrier-free start saves (an estimate): the barrier, and a
    load's and a store's latency that overlap the previous op's instead of
    following a drained chip."""
    t = p.target
    return t.sync_all_cycles + 2 * t.path("gm_to_ub").latency


def _with_rows(p: "SplitCoresPass", op: ir.Operation, grid: tuple[int, int]
               ) -> Split | tuple | None:
    p.rules.rows_of = grid
    try:
        return p._split_at(op, grid[0] * grid[1])  # noqa: SLF001
    finally:
        p.rules.rows_of = None


def choose(op: ir.Operation, found: Split | tuple | None, units: list[Unit],
           splits: list, p: "SplitCoresPass") -> Split | tuple | None:
    """`found`, or the previous unit's row grid when on it the op needs no
    barrier and it models no more than `saving` slower."""
    if not _is_conv(op) or not units or units[-1].base:
        return found
    grid = row_grid(split_of(splits[-1]))
    if grid is None:
        return found
    same = _with_rows(p, op, grid)
    if same is None or split_of(same).cost <= 0:
        return found
    best = split_of(found)
    if best is not None and split_of(same).cost > best.cost + saving(p):
        return found
    if len(units) in place(units + [p._unit(op, same)]):  # noqa: SLF001
        return found  # still behind a barrier: nothing saved
    if best is not None and len(units) not in place(units + [p._unit(op, found)]):  # noqa: SLF001
        return found
    return same
