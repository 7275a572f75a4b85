"""A one-core unit on a core its phase leaves idle.

A unit that no split takes runs on core 0 (a peeled row group's last rows,
`peel`: ViT-base's 5 of 197 tokens after its 192 on 24 cores). Where no
barrier orders it after the other units of its phase, core 0 still runs
it after its own share of them, and the phase ends when core 0 does. On a
core that its phase leaves idle it runs beside them instead: ViT-base's
layernorms on 32 cores, each phase 4.5-5.0k -> 3.9k cycles.
"""

from __future__ import annotations

from typing import Callable

from mlir import ir

from npu.costmodel.fusion.rows import FUSED_ATTR

from .barriers import Unit, place
from .split import split_of


def _phases(units: list[Unit], barriers: set[int]) -> list[range]:
    """The runs of unit indices between barriers."""
    edges = [0] + sorted(b for b in barriers if b) + [len(units)]
    return [range(a, b) for a, b in zip(edges, edges[1:]) if a < b]


def _rows(u: Unit) -> int | None:
    """A fused row group's rows."""
    if FUSED_ATTR not in u.op.attributes:
        return None
    return ir.IntegerAttr(ir.DictAttr(u.op.attributes[FUSED_ATTR])["rows"]).value


def _narrow(units: list[Unit], splits: list, phase: range, i: int, wanted: int,
            regroup: Callable[[int, int], tuple | None]) -> None:
    """Where the one-core row group `units[i]` has no idle core beside the
    phase's one other unit, a row group on every core, that group on fewer
    cores when its rows a core then stay under its rows a core on all of
    them plus `units[i]`'s (ViT-base's final layernorm: 6 rows a core on
    32 and the 5 of the rest on core 0, or 8 a core on 24)."""
    others = [j for j in phase if j != i]
    if len(others) != 1 or _rows(units[i]) is None:
        return
    j = others[0]
    rows = _rows(units[j])
    if rows is None or units[j].base or units[j].cores != wanted:
        return
    limit = rows / wanted + _rows(units[i])
    for n in range(wanted - 1, 1, -1):
        found = regroup(j, n)
        if found is not None and split_of(found[1]).parts == n and rows / n < limit:
            units[j], splits[j] = found
            return


def regrouped(op: ir.Operation, found: tuple | None,
              unit_of: Callable[[ir.Operation, tuple], Unit]) -> tuple | None:
    """(unit, split) of group `op` on the split `found`, if any."""
    return None if found is None else (unit_of(op, found), found)


def move(units: list[Unit], splits: list, wanted: int,
         regroup: Callable[[int, int], tuple | None] | None = None) -> list[int]:
    """Move each one-core unit left unsplit (`splits[i]` None, an ascend op
    or a fused kernel) to the first core after its phase's other units,
    when there is one (or `_narrow` makes one: `regroup(j, n)`, unit j's
    (unit, split) over n cores) and the barriers stay where they were; the
    indices moved."""
    barriers = set(place(units))
    moved: list[int] = []
    for phase in _phases(units, barriers):
        for i in phase:
            u = units[i]
            if (u.cores != 1 or u.base or splits[i] is not None
                    or not (u.op.name.startswith("ascend.") or u.op.name == "scf.execute_region")):
                continue
            used = max((units[j].base + units[j].cores for j in phase if j != i), default=0)
            if used >= wanted and regroup is not None:
                kept = list(units), list(splits)
                _narrow(units, splits, phase, i, wanted, regroup)
                used = max((units[j].base + units[j].cores for j in phase if j != i), default=0)
                if used >= wanted or set(place(units)) != barriers:
                    units[:], splits[:] = kept
                    continue
            if used == 0 or used >= wanted:
                continue
            before = ([dict(a.boxes) for a in u.accesses], u.what)
            _to(u, used)
            if set(place(units)) != barriers:
                _to(u, 0)
                for a, boxes in zip(u.accesses, before[0]):
                    a.boxes = boxes
                u.what = before[1]
                continue
            u.what = before[1] + f" on core {used}"
            moved.append(i)
    return moved


def _to(u: Unit, base: int) -> None:
    for a in u.accesses:
        a.boxes = {base + c - u.base: box for c, box in a.boxes.items()}
    u.base = base
