"""`npu-prefetch` for convs (mixed into `PrefetchPass`): a conv's first
resident weight pieces load during the previous op's idle MTE2 tail.

Why: npu-lower-conv keeps a conv's fractal-Z weights resident in L1 for the
whole conv, copied in pieces (`passes/lower_conv/weights.py`), the first
right after the first band's map copies; both queue on MTE2 behind the
map's wait for the previous op's result (on many cores, behind the chip
barrier), so the cube's first chunk waits for the map, then its weights.
The weights are host constants: nothing orders their loads after the
previous op but L1 space.

How: the resident alloc carries `npu.resident_weights`; its pieces are the
copies into it grouped by their offset there (one copy per plan of a conv
cut into runs of rows over the cores: the first, inner and last runs load
the same rows). The conv's first wait is its first op reading GM that is
no host constant (the band's map); the gaps and the L1 room are
`_prefetch`'s (`gaps.py`, `collector.space_bounds_at`): pieces are taken
in order, whole, while they all fit the gaps (at least half of a piece's
load in a gap's idle time left; on one core, past the first piece, all of
it: the map queues behind them) and the whole resident buffer fits L1 at
every op from the earliest one to the conv (the buffer moves to function
level, before the first load). When it does not, on one core, the pieces
that fit get a buffer of their own cut from it (`conv_split.py`). A piece is
cloned with its views (a core's slice of the weights at the block index)
and, for a conv on a share of the cores (under `scf.if` without else), under
that guard, after the first step reading the gap's load (`_after_reader`);
its copies in the conv are erased.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import scf

from npu.analysis.pipe_work import instruction_cycles
from npu.ir import VIEW_OPS, block_dim, clone_into, defining_op, int_attr, top_level, view_root
from npu.passes.lower_conv.weights import RESIDENT_ATTR, STREAMED_ATTR

from .conv_split import ConvSplit
from .conv_streamed import StreamedConv
from .conv_up_front import UpFrontConv
from .emit import _Order
from .parts import L1_ROOMS, ConvCandidate, Part, _label, _writers


def resident_allocs(op: ir.Operation) -> list[ir.Operation]:
    """The allocs marked resident in top-level op `op`: itself, or in the
    blocks of its `scf.if`s (not in loops: a piece there loads each time)."""
    if op.name == "memref.alloc":
        return [op] if RESIDENT_ATTR in op.attributes else []
    if op.name != "scf.if":
        return []
    found = []
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                found.extend(resident_allocs(child.operation))
    return found



def _offset(view: ir.Value) -> tuple[int, ...] | None:
    op = defining_op(view)
    if op is None or op.name != "memref.subview":
        return None
    return tuple(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))


class ConvPrefetch:
    """Candidates, placement and IR of the conv form (see the module docstring)."""

    one_core: bool = True  # the function runs on one core (`_prefetch_convs` sets it)
    up_front: bool = False  # the sweep for weights loaded before their map (`conv_up_front.py`)

    def _conv_candidate(self, alloc: ir.Operation, func: ir.Operation, constants: set
                        ) -> tuple[ConvCandidate | None, str]:
        writers = _writers(alloc.results[0])
        if not writers:
            return None, "nothing copies into the resident weights"
        groups: dict[tuple[int, ...], list[ir.Operation]] = {}
        for copy in writers:
            key = _offset(copy.operands[1])
            if (copy.name != "cce.copy_gm_to_l1" or key is None
                    or view_root(copy.operands[0]) not in constants):
                return None, "the resident weights are not only copies of a host constant"
            groups.setdefault(key, []).append(copy)
        pieces = [groups[k] for k in sorted(groups)]
        guards: list[ir.Operation] = []
        first = pieces[0][0]
        op = first.parent
        while op != func:
            if op.name != "scf.if":
                return None, "the first weight piece loads in a loop"
            orelse = op.regions[1].blocks
            if not len(orelse) or len(orelse[0].operations) <= 1:
                guards.append(op)  # a share guard: the clone runs under it
            elif {_branch(op, c) for c in pieces[0]} - {None} != {0, 1}:
                return None, "the first weight piece loads in one branch of a choice"
            op = op.parent
        # Pieces are taken in order while every copy of each sits under the
        # same guards (no loops): later ones may be in a band loop.
        kept = [pieces[0]]
        for piece in pieces[1:]:
            if any(_in_loop(c, func) for c in piece):
                break
            kept.append(piece)
        maker = _unclonable([c for piece in kept for c in piece] + guards, alloc)
        if maker is not None:
            return None, f"'{maker}' makes a weight copy's operand (only views and index " \
                         "arithmetic are cloned)"
        return ConvCandidate(alloc, kept, list(reversed(guards))), ""

    def _first_wait(self, tops: list[ir.Operation], own: int, last: int, constants: set
                    ) -> int | None:
        """The conv's first top-level op (from `own` to `last`, the first
        piece's) that loads GM other than host constants: its map (None when
        the pieces come first, as for a conv of several images)."""
        for j in range(own, last + 1):
            if any(root not in constants for root, _, _ in self.facts.reads(tops[j])):
                return j
        return None

    def _place_conv(self, c: ConvCandidate, gaps, need: dict[int, int], size: int,
                    end: int) -> list[Part]:
        """The pieces (in order) that fit `gaps` and L1 (`need`, each op's
        bound, plus the whole buffer from the earliest load to `end`)."""
        bandwidth = self.target.path("gm_to_l1").bytes_per_cycle
        capacity = self.target.capacity("l1")
        best: list[Part] = []
        reps = [piece[0] for piece in c.pieces]
        for n in range(1, len(reps) + 1):
            if self.chunks and n > self.chunks:
                break
            trial, _ = self._fill(reps[:n], gaps, dict(gaps), bandwidth)
            if trial is None or (n > 1 and self.one_core and self._overfull(trial, gaps)):
                break
            earliest = min(p.gap for p in trial)
            if any(need.get(j, 0) + size > capacity for j in range(earliest + 1, end)):
                break
            best = trial
        return best

    def _overfull(self, parts: list[Part], gaps) -> bool:
        """Whether `parts` load longer than a gap's idle time: `_fill` lets a
        gap take a piece when half of it fits, but the conv's map queues on
        MTE2 behind the pieces, so past the first (which its first chunk
        waits for anyway) a piece must fit whole (3x3 128->128 28 after
        1x1 512->128: its 6th piece, 64 KB, 1k cycles over an estimated 3.9k
        gap holding 3k, delayed the map: 119,757 cycles; with 5 pieces 118,732,
        none 118,940)."""
        idle = dict(gaps)
        used: dict[int, float] = {}
        for p in parts:
            cycles = instruction_cycles(p.copy, self.target) * (p.end - p.first) / \
                max(1, int_attr(p.copy, "n_burst"))
            used[p.gap] = used.get(p.gap, 0.0) + cycles
        return any(cycles > idle[g] for g, cycles in used.items())

    def _emit_conv(self, c: ConvCandidate, parts: list[Part], issue: ir.Operation,
                   alloc: ir.Operation | None) -> list[ir.Operation]:
        """Clone `parts`' copies (with their views and index arithmetic after
        `issue`) before `issue`, under the candidate's guards; with `alloc`,
        move it there first. Returns the top-level ops now before `issue`."""
        made: list[ir.Operation] = []
        if alloc is not None:
            alloc.move_before(issue)
            made.append(alloc)
        order = _Order(issue)
        guards = [g.operands[0] for g in c.guards]
        chain: set[ir.Operation] = set()
        pending = [v for p in parts for v in p.copy.operands] + guards
        while pending:
            op = defining_op(pending.pop())
            # Only views and index arithmetic: `_unclonable` refused the rest.
            if op is None or op in chain or op == c.alloc or not order.after(op):
                continue
            chain.add(op)
            pending.extend(op.operands)
        mapping: dict[ir.Value, ir.Value] = {}
        with issue.context, issue.location, ir.InsertionPoint(issue):
            made += clone_into(sorted(chain, key=order.key), mapping, set())
        point, outer = ir.InsertionPoint(issue), None
        with issue.context, issue.location:
            for cond in guards:  # outermost first
                with point:
                    guard = scf.IfOp(mapping.get(cond, cond), [], has_else=False)
                with ir.InsertionPoint(guard.then_block):
                    scf.YieldOp([])
                outer = outer or guard.operation
                point = ir.InsertionPoint.at_block_terminator(guard.then_block)
            with point:
                copies = clone_into([p.copy for p in parts], mapping, set())
        made += [outer] if outer is not None else copies
        return made


def _unclonable(ops: list[ir.Operation], alloc: ir.Operation) -> str | None:
    """The name of an op other than a view or index arithmetic that the
    copies' (or guards') operands come from, which `_emit_conv` could not
    clone; None when there is none."""
    seen: set[ir.Operation] = set()
    pending = [v for op in ops for v in (op.operands if op.name != "scf.if" else op.operands[:1])]
    while pending:
        op = defining_op(pending.pop())
        if op is None or op in seen or op == alloc:
            continue
        if not (op.name in VIEW_OPS or op.name.startswith("arith.")):
            return op.name
        seen.add(op)
        pending.extend(op.operands)
    return None


def _branch(choice: ir.Operation, op: ir.Operation) -> int | None:
    """Which region of `choice` (an op `op` is nested in) holds `op`."""
    while op.parent != choice:
        op = op.parent
        if op.name == "func.func":
            return None
    for k, region in enumerate(choice.regions):
        if any(op == o.operation for b in region.blocks for o in b.operations):
            return k
    return None


def _in_loop(op: ir.Operation, func: ir.Operation) -> bool:
    op = op.parent
    while op != func:
        if op.name != "scf.if":
            return True
        op = op.parent
    return False


class ConvDriver(ConvPrefetch, ConvSplit, StreamedConv, UpFrontConv):
    """The conv form's analysis and transformation over a function body."""

    def _prefetch_convs(self, func: ir.Operation, tops: list[ir.Operation], collector,
                        constants: set) -> None:
        # A barrier counts `sync_all_cycles` of idle MTE2 (`FactsCache.barrier_idle`):
        # the pieces it draws before a barrier fill it and the wait of cores
        # that arrive early (a conv's cut over channels and rows is uneven);
        # counted as none, 32 cores: ResNet-18 127,223 -> 138,566 cycles,
        # ResNet-50 327,924 -> 351,920, MobileNetV2 195,411 -> 206,252.
        # On many cores a gap before a barrier is that estimate, not idle
        # time to fill exactly: pieces may overrun it (`_overfull`).
        self.one_core = block_dim(func) == 1
        # Weights loaded before their conv's map go in a second sweep
        # (`conv_up_front.py`).
        self.up_front = False
        later: list[ir.Operation] = []
        k = 0
        while k < len(tops):
            op = tops[k]
            streamed = self.one_core and op.name == "memref.alloc" and STREAMED_ATTR in op.attributes
            for alloc in [op] if streamed else \
                    resident_allocs(op) if op.name in ("memref.alloc", "scf.if") else []:
                c, why = (self._streamed_candidate(alloc, tops, k, constants) if streamed
                          else self._conv_candidate(alloc, func, constants))
                maker = _unclonable(c.pieces[0], alloc) if streamed and c is not None else None
                if maker is not None:
                    c, why = None, f"'{maker}' makes a weight copy's operand"
                if c is None:
                    self._say(alloc, f"npu-prefetch: conv weights not prefetched: {why}")
                    continue
                own = tops.index(top_level(alloc))
                if not streamed and self._up_front(c, tops, own, constants):
                    later.append(alloc)
                    continue
                op = self._prefetch_conv(func, c, collector, tops, own, constants)
                k = tops.index(op)  # ops went in before it (one look-up per conv)
            k += 1
        self.up_front = True
        for alloc in later:
            c, _ = self._conv_candidate(alloc, func, constants)
            if c is not None:
                self._prefetch_conv(func, c, collector, tops, tops.index(top_level(alloc)), constants)

    def _prefetch_conv(self, func: ir.Operation, c: ConvCandidate, collector,
                       tops: list[ir.Operation], own: int, constants: set) -> ir.Operation:
        """Prefetch what fits of `c` (its alloc in top-level op `own`);
        returns the top-level op of the conv's first wait (kept)."""
        last = tops.index(top_level(c.pieces[0][0]))
        at = self._first_wait(tops, own, last, constants)
        if at is None and self.up_front:
            at = self._map_after(tops, last, constants)
        if at is None or tops[at] == c.pieces[0][0]:
            self._say(c.alloc, "npu-prefetch: conv weights not prefetched: they load ahead of "
                               "the conv's map, waiting for nothing")
            return tops[own]
        waiter = tops[at]
        where = self.facts.location(waiter)
        works = self.facts.works
        prev = next((k for k in range(at - 1, -1, -1)
                     if self.facts.location(tops[k]) != where and works(tops[k])), None)
        if prev is None:
            self._say(waiter, "npu-prefetch: conv weights not prefetched: no earlier op whose "
                              "idle MTE2 time their loads could use")
            return waiter
        name = f"'{_label(tops[prev])}'"
        before, start = self.facts.location(tops[prev]), prev
        for k in range(prev - 1, -1, -1):
            if works(tops[k]):
                # In the second sweep a later conv's prefetched pieces may
                # sit in the previous op: they are part of its loads.
                if self.facts.location(tops[k]) != before and not (
                        self.up_front and self._is_constant_load(tops[k])):
                    break
                start = k
        if not self._reads_written(tops[prev + 1:at + 1], tops[start:prev + 1]):
            self._say(waiter, f"npu-prefetch: conv weights not prefetched: this conv reads "
                              f"nothing {name} writes, so its loads follow that op's at once")
            return waiter
        gaps = self._gaps(tops, start, prev, at)
        earlier = self._earlier_tail(tops, start, at) if start > 0 else None
        if earlier is not None:
            gaps = [earlier] + gaps
        low = min([start] + [k for k, _ in gaps])
        bound = L1_ROOMS.index(self.l1_room)
        end = max(at, last)  # the ops up to the first piece newly hold the buffer
        need = dict(zip(range(low, end), collector.space_bounds_over(func, "l1", low, end, bound)))
        size = collector.space_size(c.alloc)[1]
        room = size
        parts = self._place_conv(c, gaps, need, room, end)
        if not parts and earlier is not None:
            parts = self._place_conv(c, gaps[1:], need, room, end)
        whole = size
        if not parts and not c.guards and c.alloc == tops[own]:
            parts, c, size = self._split_conv(func, c, tops, collector, gaps, earlier, need, end)
        bandwidth = self.target.path("gm_to_l1").bytes_per_cycle
        own_gaps = gaps[1:] if earlier is not None else gaps
        figures = (f"estimated MTE2 idle gaps from {name} on: "
                   f"{', '.join(str(int(g)) for _, g in reversed(own_gaps)) or 'none'} cycles"
                   + (f", after the op before it {int(earlier[1])}" if earlier is not None else "")
                   + f"; the first piece of {self._bytes(c.pieces[0][0])} bytes takes "
                   f"{int(self._bytes(c.pieces[0][0]) / bandwidth)}")
        if not parts:
            fits = self._fill([c.pieces[0][0]], gaps, dict(gaps), bandwidth)[0] is not None
            reason = (f"the resident weights ({size} bytes) do not fit in L1 there" if fits
                      else "its idle gaps are too short for the first piece's load")
            self._say(waiter, f"npu-prefetch: conv weights not prefetched: {reason} ({figures})")
            return waiter
        taken = len(parts)
        loaded = sum(self._bytes(p.copy) for p in parts)
        earliest = min(p.gap for p in parts)
        # The buffer moves before the first load: out of the conv's guard,
        # or up the function body.
        moved = c.alloc != tops[own] or own > earliest
        if c.alloc == tops[own] and moved:
            collector.changed(own, [])
            tops.pop(own)
        for gap in sorted({p.gap for p in parts}, reverse=True):
            # After the first step reading the gap's load, not right after
            # it: npu-insert-sync would sink the flag that releases that
            # step to the end of the run the pieces extend (`_issue_index`).
            k = self._after_reader(tops, gap, at)
            issue = tops[k]
            made = self._emit_conv(c, [p for p in parts if p.gap == gap], issue,
                                   c.alloc if moved and gap == earliest else None)
            collector.inserted(k, made)
            tops[k:k + 1] = made + [issue]
        for piece in c.pieces[:taken]:
            for copy in piece:
                self._erase_copy(copy, func, tops, collector)
        points = ", ".join(f"after {name}'s last load" if start <= k <= prev else
                           f"after the op before {name} (its last load)" if k < start else
                           "after this conv's preparation" for k in sorted({p.gap for p in parts}))
        cut = f" (cut from its {whole}-byte buffer)" if size < whole else ""
        kind = "streamed first-tile" if STREAMED_ATTR in c.alloc.attributes else "resident"
        self._say(waiter, f"npu-prefetch: conv: {taken} of {len(c.pieces)} {kind} weight "
                          f"piece(s) ({loaded} of {whole} bytes){cut} "
                          f"loaded {points}, ahead of this conv's first wait ({figures})")
        return waiter

    def _after_reader(self, tops: list[ir.Operation], gap: int, at: int) -> int:
        """Where the pieces of the gap after `tops[gap]` go: after the first
        step of another pipe that reads what that load brings (the last
        band's img2col, or the weight piece's L1 -> L0B load), when only
        steps of other pipes come before it; else right after the load.
        Right after it, the pieces would extend its run of loads, whose
        flag npu-insert-sync sinks to the run's end: the previous conv's
        last band waited for them (1x1 512->128 then 3x3 128->128 at 28x28,
        one core: 262 KB, +4.1k cycles to the 1x1)."""
        return self.facts.after_first_reader(tops, gap, at)

    def _bytes(self, copy: ir.Operation) -> int:
        from npu.ir import element_bytes, memref_element, memref_shape

        n = element_bytes(memref_element(copy.operands[1]))
        for d in memref_shape(copy.operands[1]):
            n *= d
        return n

    def _erase_copy(self, copy: ir.Operation, func: ir.Operation, tops: list[ir.Operation],
                    collector) -> None:
        """Erase `copy` and the views only it used, telling the collector."""
        pending = [copy]
        while pending:
            op = pending.pop()
            top = top_level(op)
            nested = top != op
            operands = [defining_op(v) for v in op.operands]
            if not nested:
                k = tops.index(op)
                collector.changed(k, [])
                tops.pop(k)
                self.facts.forget(op)
            op.erase()
            if nested:
                collector.changed(tops.index(top))
                self.facts.forget(top)
            pending += [o for o in operands if o is not None and o.name in VIEW_OPS
                        and o not in pending and not any(True for r in o.results for _ in r.uses)]
