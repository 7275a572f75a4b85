"""Which ops of a run of shares keep their first weights out of the tail of
the op before the previous one, when the run's slots there would load
faster than the chip's GM bus carries them (mixed into `PrefetchPass`).

Why: from the second layer of BERT-base seq 128 on 32 cores on, Q's, K's
and V's projections (12, 12 and 8 cores) each load their first slots in
the previous layer's ffn_out tail: when ffn_out's last A part lands every
core starts them, and the cores that miss in L2 (one core of each of Q's
and K's column pairs, all of V's: 20 movers at 64 B/cycle, 1,280 B/cycle
against the bus's 1,200) hold the bus while the cores it serves last
store ffn_out's rows: core 31 arrived ~1.1k cycles after core 0. Here the
ops of such a run whose slots there would exceed the bus go, cheapest
first (their op's MTE2 work; the first of equals), to the previous op's
own gaps (ln2's tail) first, until the rest fit: Q's projection, whose
share ends its phase ~2k cycles before V's. What those gaps do not hold
still goes into the earlier tail (a third of Q's first slot), not into
its loop's first iteration, where it loaded behind its A on the bus and
Q's cores then ended the projections late (12 layers 453,455 -> 452,879).

With it (the same option), a share's odd last chunk goes into the MTE2
tails of earlier phases in which no core streams another op's weights
already, when those hold it (`RemainderSlots._remainder_parts`): V's
cores, served last on the bus, otherwise carried it in the previous
layer's ffn_in phase behind ffn_out's slots and began ffn_out late.
Either alone measured slower (3 layers 115,215 and 114,767 cycles against
114,575); together 114,127.
"""

from __future__ import annotations

from mlir import ir

from npu.analysis.pipe_work import trip_count
from npu.ir import block_dim, memref_bytes, view_root
from npu.passes.applies import CoresNeed

from .facts import _guarded, outruns_bus
from .guarded import _is_matmul_loop


def _within_bus(cores: int, target) -> str | None:
    """Why the movers of `cores` cores cannot outrun the chip's GM bus
    together, or None when they can (the rule acts only then)."""
    if outruns_bus(cores, target):
        return None
    return (f"the movers of {cores} cores ({cores * target.path('gm_to_l1').bytes_per_cycle:g} "
            f"B/cycle) cannot outrun the chip's GM bus ({target.gm_chip_bytes_per_cycle:g} B/cycle)")


# `tail-bus`'s need: on fewer cores the rule has nothing to act on.
OUTRUNS_BUS = CoresNeed("movers outrunning the chip's GM bus", _within_bus)


class TailBus:
    """`_off_earlier_tail` (`self.facts`, `self._candidate`,
    `self._remainder`, `self._guard_cores`, `self.target`: the pass's)."""

    def _off_earlier_tail(self, share) -> bool:
        """Whether the loop of `share` (a `guarded.Share`) keeps its slots
        out of the earlier tail (`_tail_plan` of its run, once per run)."""
        if not self.tail_bus or share is None or len(share.run) < 2:
            return False
        key = share.run[0]
        if key not in self._tail_plans:
            self._tail_plans[key] = self._tail_plan(share.run)
        return share.guard in self._tail_plans[key]

    def _tail_plan(self, run: tuple) -> list[ir.Operation]:
        """The guards of `run` whose slots leave the earlier tail: while the
        run's L2 misses there (per op, its cores or its distinct weight
        parts if fewer, each at the mover's rate) exceed the chip's bus,
        the op with the least MTE2 work (the first of equals) leaves. None
        leaves where the cores' movers cannot fill the bus anyway. (Whether
        each op's slots would go into that tail at all is not asked: in a
        run after one earlier op, all of them do.)"""
        t = self.target
        func = run[0].parent.operation
        cores = block_dim(func)
        rate = t.path("gm_to_l1").bytes_per_cycle
        bus = t.gm_chip_bytes_per_cycle
        if not outruns_bus(cores, t):
            return []
        demand: dict[int, tuple[float, float]] = {}  # run index -> (B/cycle, MTE2 work)
        with self.facts.every_core():  # every guard's own work
            for i, guard in enumerate(run):
                misses = self._share_misses(guard, cores)
                if misses:
                    demand[i] = (misses * rate, self.facts(guard).loads)
        total = sum(d for d, _ in demand.values())
        off: list[ir.Operation] = []
        for i in sorted(demand, key=lambda i: (demand[i][1], i)):
            if total <= bus:
                break
            off.append(run[i])
            total -= demand[i][0]
        return off

    def _share_misses(self, guard: ir.Operation, cores: int) -> int:
        """The cores of `guard` whose first weight slot misses in L2 when all
        load it at once: its cores, or fewer when cores share a part of the
        weights (a grid's row parts: the weights' bytes over a core's); 0
        when its matmul loop is no streamed candidate."""
        mine = self._guard_cores(guard, cores)
        ops = list(_guarded(guard))
        loop = next((o for o in ops if _is_matmul_loop(o)), None)
        if mine is None or loop is None:
            return 0
        c, _ = self._candidate(loop, self.constants)
        trips = trip_count(loop)
        if c is None or c.resident or not trips:
            return 0
        copies = [copy for _, cs in c.slots for copy in cs]
        own = sum(memref_bytes(copy.operands[0]) for copy in copies) * trips
        rem = self._remainder(ops, ops.index(loop))
        if rem is not None:
            rc, _ = self._candidate(rem[1], self.constants)
            if rc is not None and not rc.resident:
                own += sum(memref_bytes(copy.operands[0]) for _, cs in rc.slots for copy in cs)
        whole = memref_bytes(view_root(copies[0].operands[0]))
        return min(len(mine), max(1, round(whole / own))) if own else 0
