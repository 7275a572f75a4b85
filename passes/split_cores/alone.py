"""A one-core unit on a core its phase leaves idle.

A unit that no split takes runs on core 0 (a peeled row group's last rows,
`peel`: ViT-base's 5 of 197 tokens after its 192 on 24 cores). Where no
barrier orders it after the other units of its phase, core 0 still runs
it after its own share of them, and the phase ends when core 0 does. On a
core that its phase leaves idle it runs beside them instead: ViT-base's
layernorms on 32 cores, each phase 4.5-5.0k -> 3.9k cycles.
"""

from __future__ import annotations

from .barriers import Unit, place


def _phases(units: list[Unit], barriers: set[int]) -> list[range]:
    """The runs of unit indices between barriers."""
    edges = [0] + sorted(b for b in barriers if b) + [len(units)]
    return [range(a, b) for a, b in zip(edges, edges[1:]) if a < b]


def move(units: list[Unit], splits: list, wanted: int) -> list[int]:
    """Move each one-core unit left unsplit (`splits[i]` None, an ascend op
    or a fused kernel) to the first core after its phase's other units,
    when there is one and the barriers stay where they were; the indices
    moved."""
    barriers = set(place(units))
    moved: list[int] = []
    for phase in _phases(units, barriers):
        for i in phase:
            u = units[i]
            if (u.cores != 1 or u.base or splits[i] is not None
                    or not (u.op.name.startswith("ascend.") or u.op.name == "scf.execute_region")):
                continue
            used = max((units[j].base + units[j].cores for j in phase if j != i), default=0)
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
