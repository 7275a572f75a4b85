"""A row group before side-by-side shares, on fewer cores.

Between the input's cast (a fused row group over every core) and BERT's
Q, K and V projections (matmuls on shares of the cores, `share`), there is
a chip barrier: a share can start its matmul only once every core has cast
its rows, but its first weights (host constants) need no barrier, and
npu-prefetch loads them before it where the core has nothing else to do.
On every core the cast leaves little room (a load past the cast delays the
core's arrival), so the costliest share (V's 8 cores at seq 512: 13,824
modelled cycles against Q's and K's 11,264) loads its weights after the
barrier. With the group on fewer cores, the shares whose cores it leaves
free load their first weight slots during it.

`narrow` takes the group's split over fewer cores when the model says
the two phases are shorter: the group's GM bytes a core (read and written, at one core's
`gm_to_ub` rate), plus the slowest share less what its idle cores load
before the barrier (its `slot` x `slots` bytes at its `per_byte` saving,
at most the group's time). BERT-base seq 512 on 32 cores: the cast on 16
cores (modelled 14,976 -> 14,592), V's cores load their slots during it:
the cast's phase 4,007 -> 4,908 cycles, the projections' 17,794 -> 15,671.
Seq 128 keeps the cast on 16 cores (on 8 K's share would be free too, but
Q's is then the slowest: 6,144 -> 6,272 modelled).

Only the function's first unit: a later group's shares already load their
first slots in the tail of the matmul before it (npu-prefetch), which the
model does not see. Narrowing the 12-layer encoder's ln2 groups too (seq
128, before layers 2-12's projections) measured 563,455 -> 577,535 cycles.
"""

from __future__ import annotations

import math
from typing import Callable

from mlir import ir

from npu.target import Target

from .barriers import Unit, gm_operands, place
from .split import Split, split_of


def _bytes(v: ir.Value) -> int:
    t = ir.MemRefType(v.type)
    return t.element_type.width // 8 * math.prod(t.shape)


def _group_cycles(op: ir.Operation, cores: int, target: Target) -> float:
    """The row group's GM bytes a core (every operand read or written once,
    split evenly) at one core's GM -> UB rate."""
    moved = sum(_bytes(v) for v in gm_operands(op))
    return moved / cores / target.path("gm_to_ub").bytes_per_cycle


def _phase(shares: list[tuple[Unit, Split]], free_from: int, room: float) -> float:
    """The slowest share's modelled cycles, a share whose cores all come
    from `free_from` on less what it loads early (at most `room` cycles)."""
    return max(s.cost - (min(s.slot * s.slots * s.per_byte, room) if u.base >= free_from else 0.0)
               for u, s in shares)


def narrow(units: list[Unit], splits: list, shared: set[int],
           group_at: Callable[[int], tuple | None],
           is_rows: Callable[[ir.Operation], bool], target: Target) -> tuple | None:
    """The first unit's new split (a row group's (split, cuts) over fewer
    cores) when it is worth narrowing before the run of shares after it
    (`shared`: the units on shares), or None; `group_at(n)`: its split
    over n cores, or None."""
    if len(units) < 3 or 0 in shared or 1 not in shared or units[0].base \
            or not is_rows(units[0].op) or split_of(splits[0]) is None:
        return None
    barriers = set(place(units))
    if 1 not in barriers:
        return None
    run = []
    for i in range(1, len(units)):
        if i not in shared or (run and i in barriers):
            break
        run.append((units[i], split_of(splits[i])))
    if len(run) < 2 or any(s is None or s.cost <= 0 for _, s in run):
        return None
    op, now = units[0].op, units[0].cores
    t = _group_cycles(op, now, target)
    best, choice = t + _phase(run, now, t), None
    for n in range(now - 1, 1, -1):
        found = group_at(n)
        if found is None or split_of(found).parts != n:
            continue
        t = _group_cycles(op, n, target)
        if t + _phase(run, n, t) < best:
            best, choice = t + _phase(run, n, t), found
    return choice
