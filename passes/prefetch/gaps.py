"""The MTE2 idle gaps of `npu-prefetch`'s cost model and the placement of
weight copies into them (mixed into `PrefetchPass`: its target and
options). On a chip whose cores' movers outrun its GM bus, a phase that
already loads one matmul's early weights takes no slot of the next's when
the previous matmul's own tail holds them (`_own_tail_first`)."""

from __future__ import annotations

from mlir import ir

from npu.ir import block_dim, int_attr, memref_shape, view_root
from npu.analysis.pipe_work import instruction_cycles

from .facts import FactsCache, outruns_bus, overlaps
from .parts import Candidate, Part


class IdleGaps:
    """Where MTE2 is estimated to idle between the previous op and a matmul
    loop, and which bursts of its weight copies go there (`self.facts`: the
    function's `FactsCache`)."""

    facts: FactsCache
    constants: set[ir.Value]  # the function's host constants (`PrefetchPass`)

    def _reads_written(self, readers: list[ir.Operation], writers: list[ir.Operation]) -> bool:
        """Whether `readers` load GM bytes that `writers` store (the writers
        from the last: what a reader waits for is usually written last)."""
        read = frozenset().union(*(self.facts.reads(r) for r in readers))
        return any(overlaps(read, self.facts(w).writes) for w in reversed(writers))

    def _is_weight_copy(self, op: ir.Operation) -> bool:
        """A GM -> L1 copy of host-constant weights."""
        return op.name == "cce.copy_gm_to_l1" and self._is_constant_load(op)

    def _is_constant_load(self, op: ir.Operation) -> bool:
        """A top-level GM load of a host constant (weights into L1, a bias
        row into UB): an earlier prefetch's copy, which waits for nothing
        and ends no op's work."""
        return op.name in ("cce.copy_gm_to_l1", "cce.copy_gm_to_ub") \
            and view_root(op.operands[0]) in self.constants

    def _gaps(self, tops: list[ir.Operation], first: int, last: int, end: int
              ) -> list[tuple[int, float]]:
        """(k, cycles), latest first, for each op `tops[k]` in [first, end) with
        GM loads: how long MTE2 is estimated to idle after its last load (the
        last iteration of a loop, then the ops up to the next op with loads).
        `tops[last]` ends the previous op; the ops after it prepare this op.
        A next op that reads nothing op `k` or a later one writes does not
        wait: its loads run at once (see below where the idle time then
        counts; before the loop there is none). One pass back over the
        window: the GM bytes written from op `k` on to the loop and to the
        next op with loads grow as `k` goes back."""
        gaps: list[tuple[int, float]] = []
        idle = 0.0
        following = end
        loop_reads = self.facts.reads(tops[end])
        to_loop: set = set()       # GM ranges written in tops[k:end]
        to_following: set = set()  # ... in tops[k:following]
        for k in range(end - 1, first - 1, -1):
            facts = self.facts(tops[k])
            to_loop |= facts.writes
            to_following |= facts.writes
            idle += facts.tail
            if not facts.loads:
                continue
            if following == end:
                # Writes before op k are long done: only its own and later
                # ones keep the loop's first load waiting.
                if not overlaps(loop_reads, to_loop):
                    idle = 0.0
            elif overlaps(self.facts.reads(tops[following]), to_following):
                pass  # the next op's loads wait for op k: its gap stands
            elif following > last and (
                    waiter := self._waiter(tops, following, end, to_following)) is not None:
                # This op's preparation waits for op k behind loads that
                # wait for nothing (BERT's out-projection: its bias row,
                # then A's resident strip, the attention's result): MTE2
                # runs those at once, then idles until op k's results are
                # stored. The idle time is op k's gap less their loads;
                # theirs is none.
                free = {j for j, _ in gaps if following <= j < waiter}
                idle = max(0.0, idle - sum(self.facts(tops[j]).loads for j in free))
                gaps = [(j, 0.0 if j in free else g) for j, g in gaps]
            elif following > last:
                # MTE2 goes on to the next op's loads at once. This op's
                # preparation (a bias, gamma, beta) may wait for a chunk:
                # its loads only precede the loop's first wait.
                idle += max(0.0, gaps.pop()[1] - self.facts(tops[following]).loads)
                gaps.append((following, 0.0))
                if not overlaps(loop_reads, to_loop):
                    idle = 0.0  # nor does the loop wait for op k
            else:
                # In the previous op what remains of this idle time comes
                # after the next op's loads (its own work: not delayed).
                loads = self.facts(tops[following]).loads
                gaps[-1] = (following, gaps[-1][1] + max(0.0, idle - loads))
                idle = 0.0
            gaps.append((k, idle))
            if k < last and sum(1 for j, _ in gaps if j <= last) == 2:
                # The previous op's tail and the op before it: earlier ops
                # could only add to the latter's gap, which counts nothing.
                break
            idle = 0.0
            following = k
            to_following = set()
        # Of the previous op only its tail: loads into its earlier gaps
        # would run ahead of its own later loads, which its remaining steps
        # wait for (measured on the unfused BERT layer, whose layernorm and
        # GELU are chains of many steps: +23k cycles at seq 512).
        tail = max((k for k, _ in gaps if k <= last), default=None)
        return [(k, g if k > last or k == tail else 0.0) for k, g in gaps]

    def _own_tail_first(self, func: ir.Operation, tops: list[ir.Operation], c: Candidate,
                        gaps: list[tuple[int, float]], earlier: tuple[int, float] | None,
                        need: dict[int, int], counted: set[int], collector, at: int,
                        live_from: dict[int, int]) -> tuple[list[Part], int] | None:
        """Every slot in the previous op's own gaps (`gaps[1:]`; `gaps[0]`
        is `earlier`, the tail of the op before it), when their idle time
        holds all of the slots' loads and, on more cores than the chip's
        GM bus serves at their movers' rate (32 on ascend910: 2,048 B/cycle
        of movers against 1,200), the earlier op's phase (between its chip
        barriers) already loads another matmul's prefetched weights; else
        None (the usual order: the earlier tail first). Two matmuls' slots
        in one phase share the bus with its own loads on every core, and
        slots in its tail hold its barrier: BERT seq 512's ln1 held
        ffn_in's first slot and ffn_out's (147,456 and 98,304 bytes a
        core), which ffn_in's last C tile holds alone: 107,141 -> 106,084
        cycles. With its phase free the earlier tail stays first (ln ->
        ffn_in -> ffn_out alone, 512 x 768 rows: 52,190 cycles against
        52,438)."""
        t = self.target
        if earlier is None or not outruns_bus(block_dim(func), t):
            return None  # the cores' movers cannot fill the chip's bus: no contention
        lo = next((k for k in range(earlier[0], -1, -1) if tops[k].name == "cce.sync_all"), -1)
        hi = next((k for k in range(earlier[0], at) if tops[k].name == "cce.sync_all"), at)
        if not any(self._is_weight_copy(op) for op in tops[lo + 1:hi]):
            return None
        loads = sum(instruction_cycles(copy, t) for _, copies in c.slots
                    for copy in copies)
        if loads > sum(g for _, g in gaps[1:]):
            return None
        parts, placed = self._place(c, gaps[1:], need, counted, collector, at, live_from)
        if placed < len(c.slots) or any(p.gap == at for p in parts):
            return None
        return parts, placed

    def _room_left(self, earlier: tuple[int, float] | None, parts: list[Part],
                   bandwidth: float) -> float:
        """The idle MTE2 cycles the earlier tail (`_earlier_tail`'s gap)
        leaves after the bursts `parts` place there (0 without one)."""
        if earlier is None:
            return 0.0
        k, idle = earlier
        used = sum((p.end - p.first) * int_attr(p.copy, "burst_len") * self.target.vector_block_bytes
                   for p in parts if p.gap == k)
        return max(0.0, idle - used / bandwidth)

    def _issue_index(self, tops: list[ir.Operation], gap: int, at: int) -> int:
        """Where the copies of the gap after `tops[gap]` go: before the op
        at the returned index. Right after it, unless it is a single load
        followed (past index arithmetic, views and other pipes' instructions,
        up to the next load or region) by an instruction of another pipe
        that reads what it loads (a fused row group's last chunk and its
        first vector step; a straight-line conv's last weight chunk and its
        first L0B load, behind the previous chunk's img2cols and mads):
        then after that instruction. Right after the load, the copies would
        extend its run of loads, and `npu-insert-sync` sinks the flag that
        releases the consumer to the run's end: the consumer would wait for
        the weights too, which the gap model counts as running beside it
        (BERT's ln1 on 32 cores: its last chunk's vector work waited for
        ffn_in's and ffn_out's 56 KB; ResNet-50's last conv's last mads
        waited 5.3k cycles for the fc's first 254 KB). The instructions
        passed are other pipes': MTE2 issues the copies just as early."""
        return self.facts.after_first_reader(tops, gap, at)

    def _waiter(self, tops: list[ir.Operation], following: int, end: int, written: set
                ) -> int | None:
        """The first op of this op's preparation, from `following` on, whose
        loads read GM bytes in `written` (None when none does)."""
        return next((j for j in range(following, end)
                     if overlaps(self.facts.reads(tops[j]), written)), None)

    def _place(self, c: Candidate, gaps: list[tuple[int, float]], need: dict[int, int],
               counted: set[int], collector, at: int, live_from: dict[int, int],
               least: float = 0.5) -> tuple[list[Part], int]:
        """The parts of the first slots that fit `gaps` (their idle time)
        and L1 (`need`: each op's bound, plus the slots placed before; the
        ops in `counted` have the loop's slots in their bound already; a
        slot is live from the op after its first part's gap on, or from
        `live_from[gap]`, a share run's first op), and how many slots they
        are."""
        bandwidth = self.target.path("gm_to_l1").bytes_per_cycle
        capacity = self.target.capacity("l1")
        need = dict(need)
        left = dict(gaps)
        parts: list[Part] = []
        placed = 0
        for alloc, copies in c.slots:
            if self.chunks and placed == self.chunks:
                break
            size = collector.space_size(alloc)[1]
            trial, rest = self._fill(copies, gaps, left, bandwidth)
            partial = False
            if trial is None and not self.chunks and not placed and (least < 0.5
                                                                      or not c.resident):
                # The first slot, at least half of it in the gaps, still
                # pays: the rest loads in the loop's first iteration, where
                # all of it did. (A later slot filling the gaps to the brim
                # leans on their estimates too hard: BERT's ffn_in, whose
                # second slot would go three quarters into out_proj's tail,
                # runs 7.8k cycles longer.)
                trial, rest = self._fill(copies, gaps, left, bandwidth, rest_at=at, least=least)
                partial = True
            if trial is None:
                break
            earliest = min(live_from.get(part.gap, part.gap + 1) for part in trial)
            if any(need[j] + size > capacity for j in range(earliest, at) if j not in counted):
                break
            for j in range(earliest, at):
                if j not in counted:
                    need[j] += size
            left = rest
            parts.extend(trial)
            placed += 1
            if partial:
                break
        return parts, placed

    def _fill(self, copies: list[ir.Operation], gaps: list[tuple[int, float]],
              left: dict[int, float], bandwidth: int, rest_at: int | None = None,
              least: float = 0.5) -> tuple[list[Part] | None, dict]:
        """Split `copies` at bursts over the gaps, latest first: a gap takes
        bursts while at least half of the next one's load fits its idle time
        left (with `chunks` given, the latest gap takes everything). None
        when they do not all fit, unless `rest_at` (the loop's index): then
        what does not fit stays in the loop's first iteration (parts at
        `rest_at`), provided the gaps take at least `least` of the load
        (and some of it)."""
        left = dict(left)
        parts: list[Part] = []
        order = iter(k for k, _ in gaps)
        gap = next(order, None)
        total = sum(instruction_cycles(copy, self.target) for copy in copies)
        taken = 0.0
        for copy in copies:
            n = int_attr(copy, "n_burst")
            bursts = n if self._splittable(copy) else 1
            cycles = instruction_cycles(copy, self.target) / bursts
            b = 0
            while b < bursts:
                if gap is None:
                    if rest_at is None or not taken or taken < least * total:
                        return None, left
                    parts.append(Part(rest_at, copy, b * n // bursts, n))
                    break
                if not self.chunks and left[gap] < cycles / 2:
                    gap = next(order, None)
                    continue
                # (with `least` 0, a share's strip before the barrier, only
                # whole bursts in the gap: any excess holds the core's arrival)
                take = bursts - b if self.chunks else \
                    min(bursts - b, max(1, int((left[gap] + cycles / 2) // cycles)) if least
                        else int(left[gap] // cycles))
                if not take:
                    gap = next(order, None)
                    continue
                left[gap] -= take * cycles
                taken += take * cycles
                parts.append(Part(gap, copy, b * n // bursts, (b + take) * n // bursts))
                b += take
        return parts, left

    @staticmethod
    def _splittable(copy: ir.Operation) -> bool:
        """A copy whose views' first dimension is its bursts (a B chunk's
        column blocks) can be cut into runs of bursts."""
        n = int_attr(copy, "n_burst")
        return n > 1 and all(memref_shape(v)[0] == n for v in copy.operands)


    def _earlier_tail(self, tops: list[ir.Operation], start: int, at: int
                      ) -> tuple[int, float] | None:
        """The gap after the last load of the op before the previous one
        (ending before `start`): its tail work and the previous op's steps
        up to its first load that reads what the earlier op writes (else
        MTE2 goes on at once). Loads before that one which wait for
        nothing (a layernorm's gamma and beta) run at once and only
        shorten the gap."""
        k = next((j for j in range(start - 1, -1, -1) if self.facts.works(tops[j])), None)
        if k is None:
            return None
        while k >= 0 and not self.facts(tops[k]).loads:
            k -= 1
        if k < 0:
            return None
        idle = self.facts(tops[k]).tail_span
        f = k + 1
        while f < at:
            facts = self.facts(tops[f])
            if not facts.loads:
                idle += facts.tail_span
            elif self._reads_written([tops[f]], tops[k:f]):
                return k, max(0.0, idle)
            else:
                idle -= facts.loads  # its own work follows them: no wait of ours
            f += 1
        return None
