"""Independent ops side by side, each on its own share of the cores.

Between two chip barriers, ops that touch nothing another of them writes
(BERT's Q, K and V projections: three matmul epilogues reading one input)
would run one after another on every core: each core reads its slice of
the shared input once per op, and waits out each op's start (its first
loads' latency, the pipeline filling) and end. On disjoint shares of the
cores instead, each op runs once, on a wider slice per core: at seq 128 a
core of a projection on 8 cores reads 344 KB, where three projections on
32 cores read 516 KB per core (a 2 x 16 grid reads half of A per core for
each of them).

`plan` takes each run of consecutive units that are pairwise independent
and between the same two barriers, with at least two units whose splits
carry a modelled cost (the matmul grids, `rules.split_matmul`), and gives
them the shares of the cores that minimise the slowest one's modelled
cycles, when that is below `KEEP` of their cycles one after another on all
the cores; the cores those shares leave idle go to the other units
(`spread`). A unit whose lowering finds its part from the block index
itself (`npu.core_part`: a conv's runs of rows) counts it from its first
core.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .barriers import Unit, place
from .split import Split, split_of

# The side-by-side shares must model below this fraction of the units one
# after another (estimate: the models leave out each op's start, which
# sharing saves too, so any clear gain is taken).
KEEP = 0.9


@dataclass(frozen=True)
class Choice:
    """A unit's split over at most `cores` cores and its modelled cycles."""

    cores: int
    split: Split | tuple
    cost: float


def _independent(a: Unit, b: Unit) -> bool:
    """Neither writes GM the other touches (whatever the cores)."""
    return not any(x.root == y.root and (x.write or y.write)
                   for x in a.accesses for y in b.accesses)


def runs(units: list[Unit]) -> list[list[int]]:
    """Maximal runs of consecutive units between the same barriers that are
    pairwise independent, of two units or more."""
    barriers = set(place(units))
    found: list[list[int]] = []
    current: list[int] = []
    for i, u in enumerate(units):
        if i in barriers or not all(_independent(units[j], u) for j in current):
            if len(current) > 1:
                found.append(current)
            current = []
        current.append(i)
    if len(current) > 1:
        found.append(current)
    return found


def choices(split_at: Callable[[int], Split | tuple | None], wanted: int) -> dict[int, Choice]:
    """The cheapest modelled split of at most n cores, for n = 2 .. wanted
    (only splits with a cost: matmul and conv grids)."""
    best: Choice | None = None
    out: dict[int, Choice] = {}
    for n in range(2, wanted + 1):
        found = split_at(n)
        split = split_of(found)
        if split is not None and split.forced is not None:
            # a grid forced with `grids` is the unit's only choice
            return {m: Choice(split.parts, found, split.cost) for m in range(n, wanted + 1)}
        if split is not None and split.cost > 0 and (best is None or split.cost < best.cost):
            best = Choice(split.parts, found, split.cost)
        if best is not None:
            out[n] = best
    return out


def allocate(options: dict[int, dict[int, Choice]], wanted: int) -> dict[int, Choice] | None:
    """Each unit's choice, on disjoint shares of `wanted` cores, with the
    least slowest modelled cycles (None when they do not fit side by side);
    the cores that leaves over then go to the others (`spread`)."""
    levels = sorted({c.cost for opts in options.values() for c in opts.values()})
    for level in levels:
        picked: dict[int, Choice] = {}
        for i, opts in options.items():
            fit = [c for n, c in sorted(opts.items()) if c.cost <= level]
            if not fit:
                break
            picked[i] = min(fit, key=lambda c: c.cores)
        else:
            if sum(c.cores for c in picked.values()) <= wanted:
                return spread(picked, options, wanted)
    return None


def spread(picked: dict[int, Choice], options: dict[int, dict[int, Choice]],
           wanted: int) -> dict[int, Choice]:
    """`picked` with the cores it leaves idle handed out: the costliest unit
    (the first of equals) that a cheaper choice fitting the idle cores has
    takes the one with the fewest cores, until none does. The slowest unit
    stays as slow in the model, but the others end sooner: BERT seq 128 on
    32 cores, Q, K and V's projections on 8 cores each left cores 24-31 idle;
    Q and K on 12 each (V on 8, which still loads its first weights before
    the barrier) measure 49,151 -> 48,703 cycles for the layer (16, 8, 8:
    49,471, the fastest share's cores idle again while the others run)."""
    picked = dict(picked)
    spare = wanted - sum(c.cores for c in picked.values())
    while spare > 0:
        for i in sorted(picked, key=lambda i: -picked[i].cost):  # stable: the first of equals
            now = picked[i]
            cheaper = [c for c in options[i].values()
                       if c.cost < now.cost and 0 < c.cores - now.cores <= spare]
            if cheaper:
                better = min(cheaper, key=lambda c: (c.cores, c.cost))
                spare -= better.cores - now.cores
                picked[i] = better
                break
        else:
            break
    return picked


def plan(units: list[Unit], wanted: int,
         split_at: Callable[[int, int], Split | tuple | None]) -> dict[int, tuple[Choice, int]]:
    """Unit index -> (its choice, its first core) for the units that run side
    by side; `split_at(i, n)`: unit i's split over n cores, or None."""
    shares: dict[int, tuple[Choice, int]] = {}
    for run in runs(units):
        options = {i: opts for i in run if (opts := choices(lambda n, i=i: split_at(i, n), wanted))}
        if len(options) < 2 or any(wanted not in opts for opts in options.values()):
            continue
        picked = allocate(options, wanted)
        serial = sum(opts[wanted].cost for opts in options.values())
        if picked is None or max(c.cost for c in picked.values()) >= KEEP * serial:
            continue
        base = 0
        for i, choice in picked.items():
            shares[i] = (choice, base)
            base += choice.cores
    return shares
