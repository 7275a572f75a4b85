"""`npu-prefetch`: load a matmul's first weight chunks while the op before it
still runs.

Why: MTE2 issues in program order, so a matmul's weight loads (GM -> L1)
queue behind its first wait on its activation input, i.e. behind the end of
the previous op; meanwhile the previous op (a GELU epilogue, attention, a
layernorm) often leaves MTE2 idle for thousands of cycles after its last
load. Weights are host constants (`npu.constant` arguments nothing writes),
so nothing orders their loads after the previous op but L1 space.

How, on lowered `cce` after `npu-double-buffer` and before memory planning
and sync insertion: in an op's first top-level matmul loop (`scf.for` with
`cce.mad`) that stages a host constant GM -> L1 in its body (the pipelined
schedule's B chunk, once per ping-pong slot), the first iteration's weight
copies are cloned (with their index arithmetic, the induction variable
replaced by the lower bound) into the MTE2 idle gaps of the previous op
and of this op's own preparation (the cast and fractalize of A), ahead of
this op's first wait on its input; their L1 buffers move out of the loop to
function level, and the copies in the loop run only on later iterations
(`scf.if`). The first op of a function uses its preparation's gaps alone.
The loop's steady state and its L1 footprint stay as they were: the
prefetched chunks are the slots the loop streams through, only filled
earlier. Memory planning places them where nothing live needs
L1, and sync insertion orders them after the previous op's last reads of
bytes they reuse.

The cost model (`npu.analysis.pipe_work`: each pipe's work from the target's rates)
estimates the MTE2 idle gaps from the previous op's first step to the loop:
after each top-level op with GM loads, the other pipes' work that follows
its last load (the last iteration of a loop, then the ops up to the next
op with loads), where that next op waits, i.e. reads GM bytes written since
(loads that need nothing run at once: in the previous op the idle time
counts after them, in this op's preparation, e.g. a bias, before them;
the preparation waits when any of its loads does, e.g. the copy of A's
resident strip behind a bias).
The gap after the last load of the op before the previous one comes
first (when the previous op's first load that waits on it does: loads
before it that wait for nothing, a layernorm's gamma and beta, run at once
and only shorten the gap; a matmul's tail there is its last mads plus its
busier drain pipe, since its C pieces overlap on V and MTE3), and is
dropped when L1 has no room over the previous op; slots are placed
in body order, each cut at its bursts (the chunk's column
blocks) over the gaps, then latest first, a gap taking bursts while at least
half of the next one fits its idle time left; a slot is prefetched only
whole (but the first: with at least half of it in the gaps, the rest
loads in the loop's first iteration, in place of its copy), and only if L1
(the collector's bound at every op from its first part to the loop, plus
the slots placed before; the ops that a function-level alloc, A's resident
strip, ties to the loop have the loop's slots in their bound already) has
room: by default beside the bytes live there (`l1-room=live`, which the
planner nearly always achieves; npu-lower lowers again with `safe`, the
collector's upper bound, if L1 then overflows, and says so). An op that reads
nothing the previous op writes gets nothing: its loads do not wait. Each
prefetch and each refusal is a remark (`remarks=true`), with the gaps.

After a run of ops on disjoint shares of the cores (npu-split-cores'
`share`: Q, K and V's projections), the loads of that gap go into each
share's guard after its op, and after the run under a guard of the cores
in none of them (`shares.py`).

A loop keeping B's strip resident (npu-lower-matmul's column strips: each
part's copy alone under an `scf.if` of the body, into a function-level
buffer) has its parts as the slots: their first copies are cloned the same
way, the buffers stay where they are, and the loop's copies also ask for a
later iteration. In a share's guard (`resident.py`) its first part may go
in part: the whole bursts that fit its gaps, the rest in the first iteration.

A gap's copies go right after its load, unless a single instruction of
another pipe that reads what the load brought follows it (a fused row
group's last chunk and its first vector step): then after that one, or
npu-insert-sync would sink the flag releasing it past the weights
(`gaps._issue_index`). The op's broadcast rows (a bias) join the latest
weights placed in the previous op, or go alone into its latest gap that
holds their load and latency (`rows.py`).

One op's later loops on other shares of the cores (a split reduction's
runs) load their first slots into the first share's buffers, at its points
(`twins.py`): no core runs two of them.

An odd last chunk (npu-double-buffer's one-trip remainder loop, its own
buffer) goes into earlier phases' MTE2 tails once the slots are placed
(`remainder.py`), and so do a resident strip's parts that its gaps did
not hold (`strip-phases`).

A conv's resident weights get the same treatment (`conv.py`, `convs=true`):
its first pieces, whole, after the previous op's last load (`conv_split.py`).
On one core a streamed conv's first weight tile does too (`conv_streamed.py`),
where L1 holds it beside the previous op.
"""

from __future__ import annotations

from mlir import ir

from npu.ir import arg_attrs, block_dim, defining_op, functions, view_root
from npu.passes.applies import GM_LOADS, MANY_CORES
from npu.passes.base import Option, Pass
from npu.passes.patterns import CONV_WEIGHTS, L1_WEIGHTS
from npu.passes.buffer_lifetimes import BufferCollector, collector_for
from npu.analysis.pipe_work import trip_count

from .conv import ConvDriver
from .emit import EmitParts, fold_one_trip_guards
from .facts import FactsCache
from .gaps import IdleGaps
from .guarded import GuardedLoops, Share
from .parts import L1_ROOMS, Candidate, _label, _writers
from .resident import ResidentStrips
from .barrier_rows import BarrierRows
from .guard_rows import GuardRows
from .barrier_stores import BarrierStores
from .rows import RowLoads
from .remainder import RemainderSlots
from .share_rows import ShareRows
from .shares import ShareRuns
from .tail_bus import OUTRUNS_BUS, TailBus
from .twins import Lead, TwinShares

CONSTANT_ATTR = "npu.constant"


class PrefetchPass(IdleGaps, EmitParts, ShareRuns, GuardedLoops, RowLoads, BarrierRows,
                   GuardRows, BarrierStores, ShareRows, ConvDriver, ResidentStrips,
                   RemainderSlots, TailBus, TwinShares, Pass):
    name = "npu-prefetch"
    summary = ("Issue a matmul's first host-constant weight loads during the previous op's "
               "idle MTE2 tail, into L1 free there")
    acts_on = GM_LOADS  # every option: the program has one (it runs on lowered programs)
    options = (
        Option("remarks", bool, False, "a remark for each prefetch formed and each matmul loop "
               "left alone, with the cost model's figures"),
        Option("chunks", int, 0, "weight slots (ping-pong buffers) to prefetch per matmul "
               "loop instead of the cost model's choice (still bounded by L1; 0: cost model)",
               low=0, needs=(L1_WEIGHTS,)),
        Option("convs", bool, True, "also a conv's first resident weight pieces (host "
               "constants, `npu.resident_weights`) or, on one core, its first streamed "
               "weight tile (`npu.streamed_weights`), in the previous op's idle MTE2 tail",
               needs=(CONV_WEIGHTS,)),
        Option("l1-room", str, "live", "L1 a prefetched slot may take at each op: beside the "
               "bytes live there (live; npu-lower retries with safe, with a remark, should "
               "npu-plan-memory then overflow L1) or beside every buffer whose lifetime meets those live "
               "there (safe: always placeable)", choices=L1_ROOMS, needs=(L1_WEIGHTS,)),
        Option("remainder-phases", int, 3, "on several cores: an odd last chunk's own buffer "
               "(the loop npu-double-buffer leaves after the slots') in the idle time they "
               "leave or in the MTE2 tails of up to this many earlier phases (between chip "
               "barriers; 0: not at all)", low=0, needs=(MANY_CORES, L1_WEIGHTS)),
        Option("rest-phases", int, 2, "on several cores: the bursts of a partly prefetched "
               "slot left to the loop's first iteration in the MTE2 tails of up to this many "
               "earlier phases (between chip barriers; 0: not at all)", low=0,
               needs=(MANY_CORES, L1_WEIGHTS)),
        Option("strip-phases", int, 2, "on several cores: a resident column strip's parts "
               "after those its gaps hold in the MTE2 tails of up to this many earlier phases "
               "(between chip barriers; 0: not at all)", low=0, needs=(MANY_CORES, L1_WEIGHTS)),
        Option("later-slots", bool, True, "on several cores: in a share's guard, a slot after "
               "whole ones most of which fits the idle time they leave (the rest in the first "
               "iteration)", needs=(MANY_CORES, L1_WEIGHTS)),
        Option("twin-shares", bool, True, "on several cores: an op's later loops on other "
               "shares of the cores (one ONNX node on several shares: a split reduction's runs) "
               "load their first slots into the first share's prefetched buffers (`twins.py`)",
               needs=(MANY_CORES, L1_WEIGHTS)),
        Option("tail-bus", bool, True, "on several cores: a run of shares' first slots kept "
               "below the chip's bus in the earlier tail (cheapest shares to the previous op's "
               "gaps), a share's odd last chunk in phases where no core streams other weights "
               "(`tail_bus.py`)", needs=(MANY_CORES, L1_WEIGHTS, OUTRUNS_BUS)),
        Option("barrier-rows", bool, True, "on several cores: host-constant UB rows an op "
               "loads first after a chip barrier (a layernorm's gamma and beta, a conv's bias, "
               "also in its core guard) issued before the barrier", needs=(MANY_CORES,)),
        Option("barrier-inputs", bool, True, "on several cores: with them, the GM -> UB loads "
               "of its first chunk that read bytes no core writes in the phase before the "
               "barrier (ln2's residual rows, ln1's output), and the later chunks' where the "
               "chip's bus binds the phase", needs=(MANY_CORES,)),
        Option("barrier-stores", bool, True, "on several cores: a UB -> GM store before a chip "
               "barrier whose bytes no core touches in the phase after it issued after the "
               "barrier (ln1's f32 rows for ln2; `barrier_stores.py`)", needs=(MANY_CORES,)),
    )

    # func -> the `BufferCollector` `npu-double-buffer` left (set by
    # `npu-lower`): told about every change, so that the memory planner can
    # keep reusing it.
    collectors: dict = {}

    def run(self, module: ir.Operation) -> None:
        for func in functions(module):
            if func.regions[0].blocks:
                self._run_function(func)

    def _run_function(self, func: ir.Operation) -> None:
        block = func.regions[0].blocks[0]
        # A constant argument some op writes is not a host constant to us.
        constants = {arg for arg in block.arguments
                     if CONSTANT_ATTR in arg_attrs(func, arg.arg_number) and not _writers(arg)}
        # The function body, kept up to date as prefetches are inserted (as
        # the collector's own list is), and each op's facts worked out once.
        tops = [o.operation for o in block.operations]
        self.constants = constants
        self.facts = FactsCache(self.target, landing=block_dim(func) > 1)
        self._guards: dict = {}  # (guard, cores) -> `shares.guard_cores` of it
        self._tail_plans: dict = {}  # a run's first guard -> `TailBus._tail_plan` of the run
        # barriers loads before them are estimated to run past (`twins.py`'s
        self._spilled: set = set()  # spill): their stores stay (`barrier_stores.py`)
        loops = self._matmul_loops(tops)
        collector = collector_for(self.collectors, func)
        if collector is None:
            collector = BufferCollector(self.target)
            collector.track(func)
        seen: set[str] = set()
        leads: dict[str, Lead] = {}  # an op's first share loop prefetched (`twins.py`)
        at = 0
        for top, loop, share in loops:
            where = self.facts.location(loop)
            if where in seen:  # once per op: attention has several such loops
                if share is not None and where in leads and self.twin_shares:  # `twins.py`
                    twin, _ = self._candidate(loop, constants)
                    if twin is not None:
                        self._twin(leads[where], twin, share, collector, tops)
                continue
            seen.add(where)
            candidate, why = self._candidate(loop, constants)
            at = tops.index(top, at)
            # On a share's cores only what runs there counts (`guarded.py`).
            self.facts.skip = None if share is None else self._elsewhere(share)
            try:
                fit = self._share_rows_fit(func, loop, tops, share, collector, at)
                if candidate is None:
                    self._say(loop, f"npu-prefetch: not prefetched: {why}")
                else:
                    lead = self._prefetch(func, candidate, collector, tops, at, share)
                    if lead is not None:
                        leads[where] = lead
                self._share_rows(func, loop, tops, share, collector, fit, at)
            finally:
                self.facts.skip = None
            at = tops.index(top, at)
        fold_one_trip_guards(tops, collector, self.facts)
        if self.convs:
            self._prefetch_convs(func, tops, collector, constants)
        if self.barrier_rows:
            self._barrier_rows(func, tops, collector)  # and `_guarded_rows`
        if self.barrier_stores:
            self._barrier_stores(tops, collector)

    # ------------------------------------------------------------ analysis

    def _candidate(self, loop: ir.Operation, constants: set[ir.Value]
                   ) -> tuple[Candidate | None, str]:
        body = loop.regions[0].blocks[0]
        ops = [o.operation for o in body.operations]
        copies = [o for o in ops if o.name == "cce.copy_gm_to_l1"
                  and view_root(o.operands[0]) in constants]
        if not copies:
            return self._resident_candidate(loop, ops, constants)
        if trip_count(loop) is None:
            return None, "the loop has no constant trip count"
        slots: dict[ir.Value, list[ir.Operation]] = {}
        for copy in copies:
            slots.setdefault(view_root(copy.operands[1]), []).append(copy)
        owners = [defining_op(a) for a in slots]
        if any(o is None or o.name != "memref.alloc" or o not in ops for o in owners):
            return None, "a weight buffer is not allocated in the loop body"
        # The weight buffers are written by the weight copies only.
        if any(op not in copies for slot in slots for op in _writers(slot)):
            return None, "a weight buffer is also written by another copy"
        return Candidate(loop, [(defining_op(a), c) for a, c in slots.items()], body=ops), ""

    # ------------------------------------------------------------ transformation

    def _prefetch(self, func: ir.Operation, c: Candidate, collector,
                  tops: list[ir.Operation], at: int, share: Share | None = None) -> Lead | None:
        """Prefetch what the cost model finds room for of `c`, the loop at
        `tops[at]` (`tops` is spliced as ops go in before it); a share's loop
        whose slots went to plain gaps is the lead its op's twins follow
        (`twins.py`)."""
        where = self.facts.location(c.loop)

        def works(k: int) -> bool:
            return self.facts.works(tops[k])

        # The previous op: the last op before the loop doing any work under
        # another location (this op's own preparation, e.g. the cast of A,
        # shares the loop's); its first op, going back over its location.
        # (or of its location before a chip barrier: A's cast, cut otherwise)
        barrier = next((k for k in range(at - 1, -1, -1) if tops[k].name == "cce.sync_all"), -1)
        prev = next((k for k in range(at - 1, -1, -1) if works(k) and (
            self.facts.location(tops[k]) != where or k < barrier)), None)
        if prev is None:
            # The first op: only its own preparation (the cast and
            # fractalize of A) can leave MTE2 idle before the loop.
            prev = start = -1
            name = "this op's preparation"
            idle_cores = None if share is None else self._idle_before_barrier(tops, at)
            if idle_cores is not None:
                name = "the chip barrier its cores wait at"
            elif not self._reads_written([c.loop], tops[:at]):
                self._say(c.loop, "npu-prefetch: not prefetched: no earlier op or preparation "
                                  "whose idle MTE2 time the weight loads could use")
                return
        else:
            idle_cores = None
            name = f"'{_label(tops[prev])}'"
            before = self.facts.location(tops[prev])
            start = prev
            for k in range(prev - 1, -1, -1):
                if works(k):
                    if self.facts.location(tops[k]) != before:
                        break
                    start = k
            if not self._reads_written(tops[prev + 1:at + 1], tops[start:prev + 1]):
                self._say(c.loop, f"npu-prefetch: not prefetched: this op reads nothing {name} "
                                  f"writes, so its loads follow that op's without waiting")
                return
        bandwidth = self.target.path("gm_to_l1").bytes_per_cycle
        gaps = self._gaps(tops, max(start, 0), prev, at) if idle_cores is None else [idle_cores]
        # The tail of the op before the previous one is tried first: the
        # previous op's own loads follow it, so a chunk there delays nothing
        # it does (in the previous op's tail it delays that op's last
        # steps), while L1 has room over the previous op.
        earlier = self._earlier_tail(tops, start, at) if start > 0 else None
        if earlier is not None and self._off_earlier_tail(share):
            # the run's slots there would outrun the bus: it takes only what
            # the previous op's own gaps leave (`tail_bus.py`)
            gaps, earlier = gaps + [earlier], None
        if earlier is not None:
            gaps = [earlier] + gaps
        # A gap after a run of ops on disjoint shares of the cores: its loads
        # go into each of them (`shares`), live from the run's first op on.
        runs = {k: run for k, _ in gaps if (run := self._share_run(tops, k)) is not None
                and self._fits_run(c, run, block_dim(func))}
        live_from = {k: run[0][0] for k, run in runs.items()}
        low = min([max(start, 0)] + [k for k, _ in gaps] + list(live_from.values()))
        # L1 each op from a gap to the loop needs at most: at least what is
        # live there; at most with every buffer a lifetime live there meets
        # (its whole component: the planner can always place beside it). A
        # long kernel's component (attention with its projection) spans it
        # all, so its mostly dead tail would never take a chunk.
        bound = L1_ROOMS.index(self.l1_room)
        need = dict(zip(range(low, at), collector.space_bounds_over(func, "l1", low, at, bound)))
        # The ops that function-level allocs tie to the loop (A's resident
        # strip, copied before it) share its bound, which counts the loop's
        # slots (the prefetched ones among them).
        tied = collector.tied_span(func, "l1", at)
        counted = set(range(tied[0], at)) if tied is not None else set()
        first = self._own_tail_first(func, tops, c, gaps, earlier, need, counted, collector, at,
                                     live_from)
        # A share's strip (`resident.py`): its first part's bursts that fit
        # the honest gap before the barrier, whatever their share of it.
        least = 0.0 if c.resident and share is not None else 0.5
        parts, placed = first or self._place(c, gaps, need, counted, collector, at, live_from,
                                             least)
        if not placed and earlier is not None:
            # The previous op may fill L1 (a matmul's chunks): its own tail
            # alone may still have room.
            parts, placed = self._place(c, gaps[1:], need, counted, collector, at, live_from,
                                        least)
        chunk = collector.space_size(c.slots[0][0])[1]
        own = gaps[1:] if earlier is not None else gaps
        figures = (f"estimated MTE2 idle gaps from {name} on: "
                   f"{', '.join(str(int(g)) for _, g in reversed(own)) or 'none'} cycles"
                   + (f", after the op before it {int(earlier[1])}" if earlier is not None else "")
                   + f"; a chunk of {chunk} bytes takes {int(chunk / bandwidth)}")
        if not placed:
            fits = self._fill(c.slots[0][1], gaps, dict(gaps), bandwidth)[0] is not None
            reason = ("no chunk fits in L1 there" if fits
                      else "its idle gaps are too short for a chunk's load")
            self._say(c.loop, f"npu-prefetch: not prefetched: {reason} ({figures})")
            return
        rests = [p for p in parts if p.gap == at]
        parts = [p for p in parts if p.gap != at]
        parts, rests, extra, placed = self._earlier_phases(func, c, placed, parts, rests, gaps,
                                                           low, bound, counted, collector, tops,
                                                           at, live_from, runs, share, need)
        slots = c.slots[:placed]
        rows, row_issue, row_after = ([], None, None) if share is not None else self._row_place(
            func, c, tops, prev, at, parts, gaps, runs, collector, bound)
        # A resident strip's parts stay where they are (function level, ahead
        # of every use); slots move out of the loop to their first gap.
        home = {} if c.resident else {
            alloc: min(p.gap for p in parts if p.copy in copies) for alloc, copies in slots}
        # Working ops counted from the window's start, as the remark numbers
        # steps (only for it: a walk of the window, 40k ops on BERT-12).
        steps, count = {}, 0
        for k in range(low, at) if self.remarks else ():
            count += works(k)
            steps[k] = count
        # From the latest insertion point back: earlier indices stay valid.
        rem_runs = self._remainder_runs(extra, tops, parts, share)
        lead = (Lead(c, share, placed, rests, tail=dict(gaps).get(max((p.gap for p in parts), default=-1), 0.0),
                     room=self._room_left(earlier, parts, bandwidth))
                if share is not None and extra is None
                and not any(p.gap in runs for p in parts) else None)
        for gap in sorted({p.gap for p in parts} | self._remainder_gaps(extra), reverse=True):
            if gap in runs:
                self._emit_run(c, [a for a, k in home.items() if k == gap],
                               [p for p in parts if p.gap == gap], gap, runs[gap], tops, collector)
                continue
            if gap in rem_runs:
                self._emit_remainder_run(extra, gap, rem_runs[gap], tops, collector)
                continue
            at_k = self._issue_index(tops, gap, at)
            issue = tops[at_k]
            allocs = [a for a, k in home.items() if k == gap]
            mine = [p for p in parts if p.gap == gap]
            made = (self._emit(c, allocs, mine, issue) if share is None
                    else self._emit_share(c, allocs, mine, issue, share))
            if lead is not None:
                lead.points.append((issue, mine))
            made += self._emit_remainder(extra, gap, issue, share)
            collector.inserted(at_k, made)
            tops[at_k:at_k + 1] = made + [issue]
        if c.resident:
            self._guard_resident(c, slots, rests)
        else:
            self._guard(c, slots, rests)
        self._guard_remainder(extra, tops, at, collector, share)
        self.facts.forget(c.loop)
        # The guards wrap the loop's copies and its slots moved out: its
        # accesses are the same.
        collector.changed(tops.index(c.loop if share is None else share.guard, at),
                          same_accesses=True)
        if rows:
            self._move_rows(rows, row_issue, tops, collector, at)
        if not self.remarks:
            return lead

        def nth(k: int, first: int) -> int:  # k's number among the working ops from `first`
            return steps[k] - (steps[first - 1] if first > low else 0)

        points = ", ".join(f"before {name}, on its cores alone" if idle_cores is not None else
                           f"in each of the {len(runs[k])} ops on shares of the cores ending at "
                           f"'{_label(tops[k])}', after its op" if k in runs else
                           f"after {name} step #{nth(k, start)} (of {nth(prev, start)})"
                           if start <= k <= prev else
                           f"after the op before {name} (its last load)" if k < start else
                           f"after this op's preparation step #{nth(k, prev + 1)}"
                           for k in sorted({p.gap for p in parts}))
        self._say(c.loop, f"npu-prefetch: {placed} of {len(c.slots)} weight slot(s) "
                          f"({sum(collector.space_size(a)[1] for a, _ in slots)} bytes, "
                          f"{len(parts)} copies) loaded {points}"
                          + (f" (of the last, {sum(p.end - p.first for p in rests)} bursts in "
                             f"the loop's first iteration)" if rests else "")
                          + self._remainder_remark(extra, collector)
                          + (f"; its {len(rows)} broadcast row load(s) "
                             f"({int(self._row_cycles(rows))} cycles) before its first wait too, "
                             f"after {row_after}"
                             if rows else "")
                          + f", ahead of this op's first wait ({figures})")
        return lead

    def _say(self, op: ir.Operation, message: str) -> None:
        if self.remarks:
            self.remark(op, message)
