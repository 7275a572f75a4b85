"""What `npu-prefetch`'s cost model needs of each top-level op, worked out
once per op: the analysis of one candidate scans only its window (the
previous op to the loop), and each op in it is walked at most once per
function instead of once per question about it."""

from __future__ import annotations

import math
from collections import Counter
from contextlib import contextmanager
from typing import Callable, Iterator
from dataclasses import dataclass

from mlir import ir

from npu.dialects.cce import OP_SPACES, PIPE_OF
from npu.ir import VIEW_OPS, constant_int, defining_op, element_bytes, has_regions, memref_element, \
    memref_shape, view_root, walk_held
from npu.analysis.pipe_work import instruction_cycles, trip_count
from npu.target import Target

# Pipes whose work follows an op's last GM load (everything but MTE2 and
# the scalar unit, which only issues).
AFTER_LOAD_PIPES = ("MTE1", "M", "V", "MTE3")

# A GM tensor a copy touches: (root value, first byte, end byte).
GmRange = tuple[ir.Value, int, float]


def outruns_bus(cores: int, target: Target, path: str = "gm_to_l1") -> bool:
    """Whether `cores` cores' movers on `path` together load faster than
    the chip's GM bus carries: only then do a phase's loads contend for it."""
    return cores * target.path(path).bytes_per_cycle > target.gm_chip_bytes_per_cycle


@dataclass(frozen=True)
class OpFacts:
    """One top-level op as the cost model sees it."""

    work: Counter            # busy cycles per pipe
    reads: frozenset         # GM ranges its copies load
    writes: frozenset        # GM ranges its copies store
    tail: float              # work on the pipes after its last load (see `OpFacts.of`)
    # How long that work takes: a matmul's last load landing (a GM
    # latency; after a loop with loads), its last mads, then its drain, whose
    # pieces overlap on V and MTE3 (the busier one's work); other work
    # runs its steps in turn (all of it).
    tail_span: float = 0.0

    @property
    def works(self) -> bool:
        return any(self.work.values())

    @property
    def loads(self) -> float:
        return self.work.get("MTE2", 0.0)


def after_load(work: Counter) -> float:
    """Cycles of the pipes that follow a load (summed: a chunk is moved to
    L0, multiplied, drained and stored in turn)."""
    return sum(work.get(p, 0.0) for p in AFTER_LOAD_PIPES)


def _gm_tensor(value: ir.Value) -> GmRange:
    """A copy operand followed back to an argument; a `memref.view` of the
    workspace as its byte range there (each temporary its own)."""
    while True:
        op = defining_op(value)
        if op is not None and op.name == "memref.view":
            shift = constant_int(op.operands[1])
            if shift is not None:
                size = element_bytes(memref_element(op.results[0]))
                for d in memref_shape(op.results[0]):
                    size *= d
                return view_root(op.operands[0]), shift, shift + size
        if op is None or op.name not in VIEW_OPS:
            return value, 0, math.inf
        value = op.operands[0]


_NOTHING = OpFacts(Counter(), frozenset(), frozenset(), 0.0, 0.0)


class FactsCache:
    """`OpFacts` per top-level op, kept for the whole function: the ops the
    pass inserts are new keys, the loops it guards are dropped."""

    def __init__(self, target: Target, landing: bool = True):
        self.target = target
        # Whether a loop's tail counts its last load landing (see `_make`).
        self.landing = landing
        self._facts: dict[ir.Operation, OpFacts] = {}
        self._works: dict[ir.Operation, bool] = {}
        self._reads: dict[ir.Operation, frozenset] = {}
        self._locations: dict[ir.Operation, str] = {}
        # Idle MTE2 a chip barrier counts: `sync_all_cycles`. A core's loads
        # still queued on MTE2 stream on through a `cce.sync_all` (only its
        # other pipes drain, simulator/pipes.py), so weights placed before it
        # fill the barrier's cycles instead of delaying the core's arrival
        # (when every pipe drained there, none was counted: a slot there held
        # the barrier). BERT seq 128 on 32 cores 47,139 -> 46,719 cycles.
        self.barrier_idle = float(target.sync_all_cycles)
        # Ops the current caller's cores do not run (`guarded.py`: the
        # guards of other shares of the cores): no work, no GM traffic.
        self.skip: Callable[[ir.Operation], bool] | None = None

    @contextmanager
    def every_core(self) -> Iterator[None]:
        """Every op's own facts for a while, whatever the caller skips (a
        guard's work counted on its own cores)."""
        skip, self.skip = self.skip, None
        try:
            yield
        finally:
            self.skip = skip

    def __call__(self, op: ir.Operation) -> OpFacts:
        if self.skip is not None and self.skip(op):
            return _NOTHING
        if op.name == "cce.sync_all":
            return self._make(op)  # `barrier_idle` may change between callers
        facts = self._facts.get(op)
        if facts is None:
            facts = self._facts[op] = self._make(op)
        return facts

    def forget(self, op: ir.Operation) -> None:
        self._facts.pop(op, None)
        self._works.pop(op, None)
        self._reads.pop(op, None)

    def works(self, op: ir.Operation) -> bool:
        """Whether `op` has any instruction: up to the first one, not a
        whole walk, unless its facts are known."""
        if self.skip is not None and self.skip(op):
            return False
        known = self._works.get(op)
        if known is None:
            facts = self._facts.get(op)
            known = facts.works if facts is not None else \
                contains(op, lambda o: bool(PIPE_OF.get(o.name)))
            self._works[op] = known
        return known

    def after_first_reader(self, tops: list[ir.Operation], gap: int, at: int) -> int:
        """The index just past the first instruction of another pipe that
        reads what the single load `tops[gap]` brings, when only other pipes'
        steps (and ops without instructions) come before it up to `at`; else
        `gap + 1`, right after the load. The prefetches' copies go there, so
        that they do not extend the load's run, whose flag npu-insert-sync
        sinks to the run's end (`IdleGaps._issue_index`, `ConvDriver._after_reader`)."""
        if has_regions(tops[gap]) or PIPE_OF.get(tops[gap].name) != "MTE2":
            return gap + 1
        loaded = view_root(tops[gap].operands[1])
        for k in range(gap + 1, at):
            op = tops[k]
            if not self.works(op):
                continue
            if has_regions(op) or PIPE_OF.get(op.name) in (None, "MTE2"):
                break
            if any(view_root(v) == loaded for v in op.operands):
                return k + 1
        return gap + 1

    def reads(self, op: ir.Operation) -> frozenset:
        """The GM ranges `op`'s copies load: from its facts when known, else
        from its copies alone (cheaper than the facts of a loop whose work
        the model does not need: the matmul loop it prefetches for)."""
        if self.skip is not None and self.skip(op):
            return frozenset()
        facts = self._facts.get(op)
        if facts is not None:
            return facts.reads
        known = self._reads.get(op)
        if known is None:
            known = self._reads[op] = frozenset(
                _gm_tensor(copy.operands[0]) for copy in walk_held(
                    op, lambda o: OP_SPACES.get(o.name, ("",))[0] == "gm"))
        return known

    def location(self, op: ir.Operation) -> str:
        text = self._locations.get(op)
        if text is None:
            text = self._locations[op] = str(op.location)
        return text

    def _make(self, op: ir.Operation) -> OpFacts:
        """One walk of `op`: its pipes' work (as `npu.analysis.pipe_work` counts it), the
        GM ranges its copies touch and, for a loop, its tail."""
        if op.name == "cce.sync_all":
            # A chip barrier: its `barrier_idle` cycles of idle MTE2.
            return OpFacts(Counter(), frozenset(), frozenset(), self.barrier_idle,
                           self.barrier_idle)
        guarded = _guarded(op)
        if guarded:
            return self._sequence([self(o) for o in guarded])
        branches = _core_branches(op)
        if branches:
            return self._either([self._sequence([self(o) for o in ops]) for ops in branches])
        reads: set[GmRange] = set()
        writes: set[GmRange] = set()
        if op.name == "scf.for":
            per_op = []
            for child in op.regions[0].blocks[0].operations:
                per_op.append({})
                self._work(child.operation, 1, per_op[-1], reads, writes)
            body: Counter = Counter()
            for w in per_op:
                body.update(w)
            trips = trip_count(op)
            work = Counter({p: c * (1 if trips is None else trips) for p, c in body.items()})
            tail = self._loop_tail(per_op, body) if work.get("MTE2") else Counter(work)
        else:
            work = Counter()
            self._work(op, 1, work, reads, writes)
            tail = Counter() if work.get("MTE2") else Counter(work)
        # A loop's last mads wait for its last load to land, one GM latency
        # after MTE2 is done with it: idle MTE2 too (BERT seq 128's ffn_out
        # idles ~1.9k cycles after its last load before the barrier, 864 of
        # them counted without it, so V's projection of the next layer got one
        # of its two slots there: 12 layers 572,193 -> 564,031 cycles). Not
        # on one core (`landing`): there BERT's ffn_out then took its first
        # slot whole into ln1's tail, 347,368 -> 347,561 cycles.
        landing = (self.target.path("gm_to_l1").latency if self.landing and work.get("MTE2")
                   else 0)
        span = (landing + tail["M"] + max(tail.get("V", 0.0), tail.get("MTE3", 0.0))
                if tail.get("M") else after_load(tail))
        return OpFacts(work, frozenset(reads), frozenset(writes), after_load(tail), span)

    @staticmethod
    def _sequence(parts: list[OpFacts]) -> OpFacts:
        """The facts of ops run in turn: their work and ranges, and the tail
        of the last one with loads followed by all the work after it."""
        work: Counter = Counter()
        for f in parts:
            work.update(f.work)
        last = max((k for k, f in enumerate(parts) if f.loads), default=None)
        after = parts[(last + 1) if last is not None else 0:]
        rest = sum(after_load(f.work) for f in after)
        head = parts[last] if last is not None else None
        return OpFacts(work, frozenset().union(*(f.reads for f in parts)),
                       frozenset().union(*(f.writes for f in parts)),
                       (head.tail if head else 0.0) + rest, (head.tail_span if head else 0.0) + rest)

    @staticmethod
    def _either(parts: list[OpFacts]) -> OpFacts:
        """The facts of an op's branches, of which each core runs one: each
        pipe's work the most any branch has (as `_work` counts an `scf.if`),
        the least tail (a copy placed after the op runs on every core)."""
        work: Counter = Counter()
        for f in parts:
            for p, c in f.work.items():
                work[p] = max(work[p], c)
        return OpFacts(work, frozenset().union(*(f.reads for f in parts)),
                       frozenset().union(*(f.writes for f in parts)),
                       min(f.tail for f in parts), min(f.tail_span for f in parts))

    def _work(self, op: ir.Operation, times: int, into: dict[str, float],
              reads: set[GmRange], writes: set[GmRange]) -> None:
        """Add `times` x `pipe_work([op])` to `into`, noting the GM ranges of
        the copies on the way (one recursion, no counters made per op)."""
        name = op.name
        pipe = PIPE_OF.get(name)
        if pipe:
            spaces = OP_SPACES.get(name)
            if spaces is not None:
                if spaces[0] == "gm":
                    reads.add(_gm_tensor(op.operands[0]))
                if spaces[1] == "gm":
                    writes.add(_gm_tensor(op.operands[1]))
            into[pipe] = into.get(pipe, 0.0) + times * instruction_cycles(op, self.target)
            return
        if not has_regions(op):
            return
        regions = op.regions
        if name == "scf.for":
            trips = trip_count(op)
            inner = times * (1 if trips is None else trips)
            for child in regions[0].blocks[0].operations:
                self._work(child.operation, inner, into, reads, writes)
        elif name == "scf.if":
            branches = []
            for region in regions:
                for block in region.blocks:
                    branches.append({})
                    for child in block.operations:
                        self._work(child.operation, times, branches[-1], reads, writes)
            for p in {p for b in branches for p in b}:
                into[p] = into.get(p, 0.0) + max(b.get(p, 0.0) for b in branches)
        else:
            for region in regions:
                for block in region.blocks:
                    for child in block.operations:
                        self._work(child.operation, times, into, reads, writes)

    @staticmethod
    def _loop_tail(per_op: list[dict[str, float]], body: Counter) -> Counter:
        """Work left after a loop's last load: its last iteration's after the
        body's last load when MTE2 bounds the loop (the other pipes keep
        up), else the whole last iteration's (they lag behind by up to the
        ping-pong's other half)."""
        if body["MTE2"] >= max(body.get(p, 0.0) for p in AFTER_LOAD_PIPES):
            last = max(k for k, w in enumerate(per_op) if w.get("MTE2"))
            per_op = per_op[last + 1:]
        tail: Counter = Counter()
        for w in per_op:
            tail.update(w)
        return tail

def _guarded(op: ir.Operation) -> list[ir.Operation]:
    """The ops of an `scf.if` without an else (npu-split-cores' guard of an op
    that runs on some of the cores), else none: on the cores that run it,
    they are the op."""
    if op.name != "scf.if":
        return []
    orelse = op.regions[1].blocks
    if len(orelse) and len(orelse[0].operations) > 1:  # an else with more than its yield
        return []
    return [o.operation for o in op.regions[0].blocks[0].operations
            if o.operation.name != "scf.yield"]


def _core_branches(op: ir.Operation) -> list[list[ir.Operation]]:
    """The ops of each branch of an `scf.if` with an else, else none: each
    core runs one of them (BERT seq 512's attention on 32 cores, flat query
    runs, has a body for the six cores that span two heads). Taken whole,
    such an op had no tail (an op with loads, not a loop), so the idle MTE2
    after the attention's last loads (~4.2k cycles a core before its
    barrier) was never offered to a prefetch."""
    if op.name != "scf.if" or not len(op.regions[1].blocks):
        return []
    return [[o.operation for o in r.blocks[0].operations if o.operation.name != "scf.yield"]
            for r in op.regions]


def is_guard(op: ir.Operation) -> bool:
    """`bool(_guarded(op))` without listing the guard's ops: asked of every
    top-level op the share runs and barriers are looked for over, where a
    list of a share's whole matmul each time was 0.1 CPU s of BERT-12's
    (32 cores)."""
    if op.name != "scf.if":
        return False
    orelse = op.regions[1].blocks
    if len(orelse) and len(orelse[0].operations) > 1:
        return False
    return any(o.operation.name != "scf.yield" for o in op.regions[0].blocks[0].operations)


def contains(op: ir.Operation, predicate) -> bool:
    """Whether an op in `op` (itself included) satisfies `predicate`: a walk
    that stops at the first."""
    found = []

    def visit(o: ir.Operation) -> ir.WalkResult:
        if predicate(o):
            found.append(o)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return bool(found)


def overlaps(reads, writes) -> bool:
    """Whether some GM range in `reads` shares bytes with one in `writes`."""
    return any(r == w and lo < w_hi and w_lo < hi
               for r, lo, hi in reads for w, w_lo, w_hi in writes)
