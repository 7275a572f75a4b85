"""A matmul loop's odd last chunk loaded before the barrier too (mixed into
`PrefetchPass`).

Why: npu-double-buffer unrolls a streamed matmul loop by two and leaves an
odd trip count's last iteration as a one-trip loop of its own after it,
with its own weight buffer. npu-prefetch filled only the main loop's two
slots, so that chunk always loaded after the chip barrier: BERT seq 128's
ffn_out (three 1,024-deep chunks of its 295 KB of weights a core) loaded
its third 98 KB chunk in its own phase, which is MTE2-bound, while L1
(1 MB) had room for it beside the two slots before the barrier. Here,
once all of the main loop's slots are placed, the remainder's buffer is a
third slot: its first-iteration copy goes into the idle time the slots
left in the same gaps (the previous op's tail and the one before it),
where L1 holds it from there to the remainder loop. Its copy in the loop
runs only on a later iteration (there is none), as the slots' do.

A resident strip's parts (npu-lower-matmul's column strips, outside a
share's guard) after those its gaps held go the same way, as whole bursts
into earlier phases' tails (`strip-phases`, `_strip_earlier`).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from npu.analysis.pipe_work import instruction_cycles, trip_count
from npu.ir import block_dim, int_attr

from .facts import outruns_bus
from .parts import Candidate, Part

# The least of a later slot in the gaps' idle time left (the rest loads in
# the loop's first iteration): see `RemainderSlots._later_slot`.
LATER_SLOT_LEAST = 0.75


@dataclass
class Remainder:
    """The remainder loop's candidate, its slots placed, their parts in the
    gaps and the bursts left to its iteration."""

    candidate: Candidate
    slots: list
    parts: list[Part]
    rests: list[Part]


class RemainderSlots:
    """Finding a matmul loop's remainder loop and placing its chunk
    (`self.facts`, `self._candidate`, `self._place`: the pass's)."""

    def _remainder(self, ops: list[ir.Operation], at: int) -> tuple[int, ir.Operation] | None:
        """(index, loop) of the one-trip loop of the same op right after the
        matmul loop `ops[at]` (only index arithmetic between), else None."""
        where = self.facts.location(ops[at])
        for j in range(at + 1, len(ops)):
            op = ops[j]
            if op.name == "scf.for":
                if self.facts.location(op) == where and trip_count(op) == 1 and \
                        self._has_weights(op):
                    return j, op
                return None
            if op.regions or not op.name.startswith("arith."):
                return None
        return None

    def _has_weights(self, loop: ir.Operation) -> bool:
        body = loop.regions[0].blocks[0]
        return any(o.operation.name == "cce.copy_gm_to_l1" for o in body.operations)

    def _remainder_parts(self, func: ir.Operation, c: Candidate, parts: list[Part],
                         gaps: list[tuple[int, float]], low: int, bound: int,
                         counted: set[int], collector, tops: list[ir.Operation], at: int,
                         live_from: dict[int, int], runs: dict, share=None) -> Remainder | None:
        """The remainder loop's candidate, its parts in `gaps` (the idle time
        `parts`, the main loop's, left) and those left to its iteration, when
        it has a weight slot that fits there and in L1 up to it."""
        if share is None:
            found = self._remainder(tops, at)
        else:  # in the share's guard, after the loop: L1 counts up to the guard
            ops = [o.operation for o in share.guard.regions[0].blocks[0].operations]
            found = self._remainder(ops, ops.index(c.loop)) if c.loop in ops else None
            found = None if found is None else (at, found[1])
        if found is None:
            return None
        rem_at, rem = found
        rc, _ = self._candidate(rem, self.constants)
        if rc is None or rc.resident:
            return None
        # Not what the slots left of their own gaps: those end at the barrier
        # before the loop's op, where a load past the estimate holds the
        # phase (BERT seq 128's ffn_in: 45,311 -> 45,659 cycles); the earlier
        # phases' tails, a whole phase ahead of the op.
        before = min(k for k, _ in gaps)
        rest_gaps = self._phase_gaps(tops, before, self.remainder_phases)
        if not rest_gaps:
            return None
        tails = [rest_gaps]
        if share is not None and self.tail_bus and outruns_bus(block_dim(func), self.target):
            # A share's chunk loads on its cores alone: not where every core
            # streams another op's weights already (`_phase_gaps(quiet=True)`),
            # when such tails hold it. From BERT-base seq 128's second layer on
            # (32 cores), V's projection (cores 24-31, the bus's last) loaded it
            # in the previous layer's ffn_in phase behind ffn_out's two slots,
            # which then ran ~1k cycles into ffn_out's phase there and held its
            # A; now it loads after V's own projection a layer earlier, on
            # into the attention's phase, where V's cores run nothing
            # (`tail_bus.py`).
            quiet = self._phase_gaps(tops, before, self.remainder_phases, quiet=True)
            if quiet and quiet != rest_gaps:
                tails.insert(0, quiet)
        for rest in tails:
            found = self._remainder_in(func, c, parts, rest, low, bound, counted, collector,
                                       tops, at, live_from, runs, share, rem_at, rc)
            if found is not None:
                return found
        return None

    def _remainder_in(self, func: ir.Operation, c: Candidate, parts: list[Part],
                      rest_gaps: list[tuple[int, float]], low: int, bound: int,
                      counted: set[int], collector, tops: list[ir.Operation], at: int,
                      live_from: dict[int, int], runs: dict, share, rem_at: int,
                      rc: Candidate) -> Remainder | None:
        """`_remainder_parts` in the phase tails `rest_gaps`, for `rc`, the
        remainder loop's candidate at `tops[rem_at]`."""
        # A tail that ends a run of share guards loads in each of them
        # (`_emit_remainder_run`): live from the run's first guard on.
        live_from = dict(live_from)
        for k, _ in rest_gaps if share is None else ():
            run = self._share_run(tops, k)
            if run is not None:
                live_from[k] = run[0][0]
        low = min(low, min(k for k, _ in rest_gaps), min(live_from.values(), default=low))
        # L1 from the gaps to the remainder: the ops' bounds, plus the main
        # loop's slots where they are live ahead of it.
        need = dict(zip(range(low, rem_at),
                        collector.space_bounds_over(func, "l1", low, rem_at, bound)))
        for alloc, copies in c.slots:
            size = collector.space_size(alloc)[1]
            first = min(live_from.get(p.gap, p.gap + 1) for p in parts if p.copy in copies)
            for j in range(first, at):
                if j not in counted:
                    need[j] += size
        # the ops from the main loop to the remainder count neither slot
        counted = counted - set(range(at, rem_at))
        mine, placed = self._place(rc, rest_gaps, need, counted, collector, rem_at, live_from)
        if not placed or any(p.gap in runs for p in mine):
            return None
        return Remainder(rc, rc.slots[:placed], [p for p in mine if p.gap != rem_at],
                         [p for p in mine if p.gap == rem_at])

    def _phase_gaps(self, tops: list[ir.Operation], before: int, depth: int,
                    quiet: bool = False) -> list[tuple[int, float]]:
        """(k, idle) for the phases (between chip barriers) ending before
        `tops[before]`'s, latest first, up to `depth` of them: the last op
        with GM loads in each and the idle MTE2 estimated after it, its
        tail and the following ops' work up to the barrier, less the loads
        already placed there (earlier prefetches: weights, or a bias row
        moved before the barrier, which ends no work), plus the barrier's.
        (With the row taken as the last op, BERT seq 128's attention phase
        on 32 cores had the barrier's 700 cycles, not its ~2.2k tail:
        one burst of ffn_in's rest there instead of five, 42,233 -> 43,071.)

        `quiet`: only the phases whose tails no core streams another op's
        weights in already (no top-level weight copy), of the `depth` + 1
        latest, for a share's remainder (`_remainder_parts`)."""
        gaps: list[tuple[int, float]] = []
        k = before - 1
        while k >= 0 and tops[k].name != "cce.sync_all":
            k -= 1
        seen = 0  # phases with a tail, quiet or not
        while k > 0 and len(gaps) < depth and seen < depth + quiet:
            idle = self.facts.barrier_idle
            streams = False
            k -= 1
            while k >= 0 and tops[k].name != "cce.sync_all":
                f = self.facts(tops[k])
                if f.loads and not self._is_constant_load(tops[k]):
                    seen += 1
                    if not (quiet and streams):
                        gaps.append((k, max(0.0, idle + f.tail_span)))
                    break
                streams = streams or self._is_weight_copy(tops[k])
                idle += f.tail_span - f.loads
                k -= 1
            while k >= 0 and tops[k].name != "cce.sync_all":
                k -= 1
        return gaps

    def _earlier_phases(self, func: ir.Operation, c: Candidate, placed: int, parts: list[Part],
                        rests: list[Part], gaps: list[tuple[int, float]], low: int, bound: int,
                        counted: set[int], collector, tops: list[ir.Operation], at: int,
                        live_from: dict[int, int], runs: dict, share, need: dict[int, int]
                        ) -> tuple[list[Part], list[Part], Remainder | None, int]:
        """After the slots' own gaps: a partial slot's rest in earlier phases,
        a resident strip's later parts there (`_strip_earlier`), or a share's
        next slot mostly in what the gaps left (`_later_slot`),
        then the remainder loop's chunk in earlier phases (parts, rests,
        remainder, the slots placed)."""
        if self.rest_phases and rests and share is None and not c.resident:
            moved = self._rests_earlier(func, c.slots[:placed], parts, rests, gaps, bound,
                                        counted, collector, tops, at, live_from)
            if moved is not None:
                parts, rests = parts + moved[0], moved[1]
        elif self.strip_phases and c.resident and share is None and not rests \
                and not self.chunks and 0 < placed < len(c.slots):
            moved = self._strip_earlier(func, c, placed, parts, gaps, bound, counted, collector,
                                        tops, at, live_from)
            if moved is not None:
                parts, rests, placed = parts + moved[0], moved[1], moved[2]
        elif self.later_slots and share is not None and not rests and not self.chunks \
                and not c.resident and placed < len(c.slots):
            later = self._later_slot(c, placed, parts, gaps, counted, collector, at,
                                     live_from, need)
            if later is not None:
                parts, placed = parts + [p for p in later if p.gap != at], placed + 1
                rests = [p for p in later if p.gap == at]
        extra = self._remainder_parts(func, c, parts, gaps, low, bound, counted, collector, tops,
                                      at, live_from, runs, share) if (
            self.remainder_phases and not c.resident and not rests
            and placed == len(c.slots)) else None
        return parts, rests, extra, placed

    def _later_slot(self, c: Candidate, placed: int, parts: list[Part],
                    gaps: list[tuple[int, float]], counted: set[int], collector, at: int,
                    live_from: dict[int, int], need: dict[int, int]) -> list[Part] | None:
        """In a share's guard, slot `placed` (the slots before it placed
        whole, `parts`) when the idle time the gaps left takes at least
        `LATER_SLOT_LEAST` of it (latest gap first, as `_fill`): its parts,
        the bursts left to the loop's first iteration at `at`; None when
        less fits or L1 has no room beside the slots before it. From the
        second layer of BERT-base seq 128 on 32 cores on, Q's and K's
        projections (12 cores each, two 98 KB slots a core) loaded their
        second slot in their own phase; now 7 of its 8 bursts load in the
        previous layer's ffn_out and ln2 tails (12 layers 500,991 ->
        498,239 cycles). Not less of it: at seq 512, V's share (before the
        input cast's barrier) then took half of its second slot, and L1
        had no room left for out_proj's slot (98,916 -> 101,284); nor the
        last bursts into earlier phases (`_rests_earlier`): the slot held
        through ffn_out's phase reshaped its L1 and its loads waited
        (12 layers 520,255)."""
        t = self.target
        left = dict(gaps)
        for p in parts:
            left[p.gap] -= instruction_cycles(p.copy, t) * (p.end - p.first) / \
                int_attr(p.copy, "n_burst")
        alloc, copies = c.slots[placed]
        trial, _ = self._fill(copies, gaps, left, t.path("gm_to_l1").bytes_per_cycle,
                              rest_at=at, least=LATER_SLOT_LEAST)
        if trial is None or all(p.gap != at for p in trial):
            return None  # too little fits, or all of it did and L1 refused it (`_place`)
        held = dict(need)
        for a, cs in c.slots[:placed]:
            size = collector.space_size(a)[1]
            for j in range(min(live_from.get(p.gap, p.gap + 1) for p in parts if p.copy in cs),
                           at):
                held[j] += size
        size = collector.space_size(alloc)[1]
        earliest = min(live_from.get(p.gap, p.gap + 1) for p in trial if p.gap != at)
        if any(held[j] + size > t.capacity("l1") for j in range(earliest, at)
               if j not in counted):
            return None
        return trial

    def _earlier_tails(self, func: ir.Operation, tops: list[ir.Operation],
                       gaps: list[tuple[int, float]], phases: int, at: int, bound: int,
                       collector) -> tuple[list[tuple[int, float]], dict[int, int]] | None:
        """The MTE2 tails of up to `phases` phases before `gaps`, and L1's
        planned need at each position from the first of them to `at`; None
        without such a tail."""
        back = self._phase_gaps(tops, min(k for k, _ in gaps), phases)
        if not back:
            return None
        first = min(k for k, _ in back)
        return back, dict(zip(range(first, at),
                              collector.space_bounds_over(func, "l1", first, at, bound)))

    def _rests_earlier(self, func: ir.Operation, slots, parts: list[Part], rests: list[Part],
                       gaps: list[tuple[int, float]], bound: int, counted: set[int], collector,
                       tops: list[ir.Operation], at: int, live_from: dict[int, int]
                       ) -> tuple[list[Part], list[Part]] | None:
        """The bursts of a partly prefetched slot left to the loop's first
        iteration (`rests`), as whole bursts in the MTE2 tails of up to
        `rest-phases` phases before its gaps, where L1 holds the slot from
        there on: (the new parts, the rests still left), or None."""
        earlier = self._earlier_tails(func, tops, gaps, self.rest_phases, at, bound, collector)
        if earlier is None:
            return None
        back, need = earlier
        capacity = self.target.capacity("l1")
        left = dict(back)
        moved: list[Part] = []
        still: list[Part] = []
        for rest in rests:
            alloc = next(a for a, copies in slots if rest.copy in copies)
            size = collector.space_size(alloc)[1]
            n = int_attr(rest.copy, "n_burst")
            cycles = instruction_cycles(rest.copy, self.target) / n
            b = rest.first
            for k, _ in back:
                live = min([live_from.get(p.gap, p.gap + 1) for p in parts + moved
                            if p.copy == rest.copy] + [at])
                span = [j for j in range(k + 1, live) if j not in counted]
                take = min(rest.end - b, int(left[k] // cycles))
                if take <= 0 or any(need[j] + size > capacity for j in span):
                    continue
                for j in span:
                    need[j] += size
                moved.append(Part(k, rest.copy, b, b + take))
                left[k] -= take * cycles
                b += take
                if b == rest.end:
                    break
            if b < rest.end:
                still.append(Part(at, rest.copy, b, rest.end))
        return (moved, still) if moved else None

    def _strip_earlier(self, func: ir.Operation, c: Candidate, placed: int, parts: list[Part],
                       gaps: list[tuple[int, float]], bound: int, counted: set[int], collector,
                       tops: list[ir.Operation], at: int, live_from: dict[int, int]
                       ) -> tuple[list[Part], list[Part], int] | None:
        """A resident strip's parts after the `placed` ones (on every core:
        its buffers are function-level), as whole bursts in the MTE2 tails of
        up to `strip-phases` phases before its gaps, latest first, where L1
        holds each part from there on: (the new parts, the bursts of the last
        one left to the loop's first iteration, the slots placed), or None."""
        earlier = self._earlier_tails(func, tops, gaps, self.strip_phases, at, bound, collector)
        if earlier is None:
            return None
        back, need = earlier
        for alloc, copies in c.slots[:placed]:
            size = collector.space_size(alloc)[1]
            live = min(live_from.get(p.gap, p.gap + 1) for p in parts if p.copy in copies)
            for j in range(live, at):
                if j not in counted:
                    need[j] += size
        capacity = self.target.capacity("l1")
        left = dict(back)
        moved: list[Part] = []
        for alloc, copies in c.slots[placed:]:
            copy = copies[0]
            size = collector.space_size(alloc)[1]
            n = int_attr(copy, "n_burst")
            cycles = instruction_cycles(copy, self.target) / n
            b, live = 0, at
            for k, _ in back:
                span = [j for j in range(k + 1, live) if j not in counted]
                take = min(n - b, int(left[k] // cycles))
                if take <= 0 or any(need[j] + size > capacity for j in span):
                    continue
                for j in span:
                    need[j] += size
                moved.append(Part(k, copy, b, b + take))
                left[k] -= take * cycles
                b, live = b + take, k + 1
                if b == n:
                    break
            if b == 0:
                break
            placed += 1
            if b < n:
                return moved, [Part(at, copy, b, n)], placed
        return (moved, [], placed) if moved else None

    @staticmethod
    def _remainder_gaps(extra: Remainder | None) -> set[int]:
        return set() if extra is None else {p.gap for p in extra.parts}

    def _remainder_runs(self, extra: Remainder | None, tops: list[ir.Operation],
                        parts: list[Part], share=None) -> dict[int, list]:
        """The remainder's gaps (no slot part in them) that end a run of
        share guards, and each run (not for an op in a share's guard, whose
        copies stay under a guard of its cores). Cloned after the run, on every core, a
        copy there waited for the share guards' exit flags, which
        npu-insert-sync puts outside them, and so for the landing of the
        slots loaded in the guards (`shares.py`): in BERT seq 128's
        12-layer model ffn_out's remainder third, in the projections'
        phase, started ~350 cycles after out_proj's slot was done with
        MTE2 and ran ~540 past the barrier, ahead of the attention's loads."""
        if extra is None or share is not None:
            return {}
        taken = {p.gap for p in parts}
        return {k: run for k in self._remainder_gaps(extra) - taken
                if (run := self._share_run(tops, k)) is not None}

    def _emit_remainder_run(self, extra: Remainder, gap: int, run: list, tops: list[ir.Operation],
                            collector) -> None:
        """The remainder's parts of `gap` cloned into each guard of `run`
        after its op (`_emit_run`), each slot's alloc before the run."""
        allocs = [a for a, copies in extra.slots
                  if min(p.gap for p in extra.parts if p.copy in copies) == gap]
        self._emit_run(extra.candidate, allocs, [p for p in extra.parts if p.gap == gap], gap,
                       run, tops, collector)

    def _emit_remainder(self, extra: Remainder | None, gap: int, issue: ir.Operation,
                        share=None) -> list[ir.Operation]:
        """The remainder's parts of `gap` cloned before `issue` (after the
        main loop's), each slot's alloc moved to its first gap."""
        if extra is None or not any(p.gap == gap for p in extra.parts):
            return []
        allocs = [a for a, copies in extra.slots
                  if min(p.gap for p in extra.parts if p.copy in copies) == gap]
        mine = [p for p in extra.parts if p.gap == gap]
        if share is None:
            return self._emit(extra.candidate, allocs, mine, issue)
        return self._emit_share(extra.candidate, allocs, mine, issue, share)

    def _guard_remainder(self, extra: Remainder | None, tops: list[ir.Operation], at: int,
                         collector, share=None) -> None:
        if extra is None:
            return
        loop = extra.candidate.loop
        self._guard(extra.candidate, extra.slots, extra.rests)
        self.facts.forget(loop)
        collector.changed(tops.index(loop if share is None else share.guard, at),
                          same_accesses=True)

    @staticmethod
    def _remainder_remark(extra: Remainder | None, collector) -> str:
        if extra is None:
            return ""
        size = sum(collector.space_size(a)[1] for a, _ in extra.slots)
        return (f"; the remainder loop's {len(extra.slots)} slot(s) ({size} bytes, "
                f"{len(extra.parts)} copies) too")
