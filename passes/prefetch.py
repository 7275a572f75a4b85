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
replaced by the lower bound) to just after the previous op's last
instruction, ahead of this op's own first wait; their L1 buffers move out of
the loop to function level, and the copies in the loop run only on later
iterations (`scf.if`). The loop's steady state and its L1 footprint stay as
they were: the prefetched chunks are the slots the loop streams through,
only filled earlier. Memory planning places them where nothing live needs
L1, and sync insertion orders them after the previous op's last reads of
bytes they reuse.

The cost model picks how many slots (0, 1 or 2): the chunks whose GM time
fits into the previous op's MTE2 idle tail (estimated by `npu.pipe_work`:
the other pipes' work in the last iteration of its last loop with loads and
in the ops after that loop, which follows its last load), and only if they
fit in L1 next to the function-level buffers live there. Each prefetch and
each refusal is a remark (`remarks=true`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from mlir import ir

from mlir.dialects import arith, scf

from npu.ir import (VIEW_OPS, arg_attrs, clone_into, create_op, defining_op, element_bytes, int_attr,
                    memory_space, memref_element, memref_shape, subview, view_root, walk_held)
from npu.passes.buffer_lifetimes import BufferCollector, collector_for
from npu.passes.base import Option, Pass
from npu.dialects.cce import OP_SPACES
from npu.pipe_work import constant_index, instruction_cycles, pipe_work, trip_count

CONSTANT_ATTR = "npu.constant"
# Pipes whose work follows an op's last GM load (everything but MTE2 and
# the scalar unit, which only issues).
_AFTER_LOAD_PIPES = ("MTE1", "M", "V", "MTE3")


@dataclass(frozen=True)
class Part:
    """Bursts [first, end) of a weight copy, issued after top-level op `gap`."""

    gap: int
    copy: ir.Operation
    first: int
    end: int


@dataclass
class Candidate:
    """A matmul loop whose body stages host-constant weights into L1."""

    loop: ir.Operation
    # Per weight buffer (a ping-pong slot) in body order: its alloc and copies.
    slots: list[tuple[ir.Operation, list[ir.Operation]]]


def _label(op: ir.Operation) -> str:
    """The source op's name of a (name-)location, else its line."""
    text = str(op.location)
    names = re.findall(r'"([A-Za-z_][A-Za-z_0-9.]*)"\(', text) or \
        re.findall(r'^loc\("([^"]+)"\)$', text)
    if names:
        return names[0]
    line = re.search(r":(\d+):\d+", text)
    return f"line {line.group(1)}" if line else text


class PrefetchPass(Pass):
    name = "npu-prefetch"
    summary = ("Issue a matmul's first host-constant weight loads during the previous op's "
               "idle MTE2 tail, into L1 free there")
    options = (
        Option("remarks", bool, False, "a remark for each prefetch formed and each matmul loop "
               "left alone, with the cost model's figures"),
        Option("chunks", int, 0, "weight slots (ping-pong buffers) to prefetch per matmul "
               "loop instead of the cost model's choice (still bounded by L1; 0: cost model)",
               low=0),
    )

    # func -> the `BufferCollector` `npu-double-buffer` left (set by
    # `npu-lower`): told about every change, so that the memory planner can
    # keep reusing it.
    collectors: dict = {}

    def run(self, module: ir.Operation) -> None:
        for func in walk_held(module, lambda o: o.name == "func.func"):
            if func.regions[0].blocks:
                self._run_function(func)

    def _run_function(self, func: ir.Operation) -> None:
        block = func.regions[0].blocks[0]
        constants = {arg for arg in block.arguments
                     if CONSTANT_ATTR in arg_attrs(func, arg.arg_number)}
        # A constant argument some op writes is not a host constant to us.
        for op in walk_held(func, lambda o: o.name.startswith("cce.copy_")):
            constants.discard(view_root(op.operands[1]))
        loops = [o.operation for o in block.operations if o.operation.name == "scf.for"
                 and walk_held(o.operation, lambda x: x.name == "cce.mad")]
        collector = collector_for(self.collectors, func)
        if collector is None:
            collector = BufferCollector(self.target)
            collector.track(func)
        seen: set[str] = set()
        for loop in loops:
            where = str(loop.location)
            first = where not in seen
            seen.add(where)
            candidate, why = self._candidate(loop, constants)
            if candidate is None or not first:
                if first:  # once per op: attention has several such loops
                    self._say(loop, f"npu-prefetch: not prefetched: {why}")
                continue
            self._prefetch(func, candidate, collector)

    # ------------------------------------------------------------ analysis

    def _candidate(self, loop: ir.Operation, constants: set[ir.Value]
                   ) -> tuple[Candidate | None, str]:
        body = loop.regions[0].blocks[0]
        ops = [o.operation for o in body.operations]
        copies = [o for o in ops if o.name == "cce.copy_gm_to_l1"
                  and view_root(o.operands[0]) in constants]
        if not copies:
            return None, "the loop stages no host-constant weights into L1"
        if trip_count(loop) is None:
            return None, "the loop has no constant trip count"
        slots: dict[ir.Value, list[ir.Operation]] = {}
        for copy in copies:
            slots.setdefault(view_root(copy.operands[1]), []).append(copy)
        owners = [defining_op(a) for a in slots]
        if any(o is None or o.name != "memref.alloc" or o not in ops for o in owners):
            return None, "a weight buffer is not allocated in the loop body"
        # The weight buffers are written by the weight copies only.
        for op in walk_held(loop, lambda o: o.name.startswith("cce.copy_")):
            if view_root(op.operands[1]) in slots and op not in copies:
                return None, "a weight buffer is also written by another copy"
        return Candidate(loop, [(defining_op(a), c) for a, c in slots.items()]), ""

    def _bytes(self, alloc: ir.Operation) -> int:
        value = alloc.results[0]
        n = element_bytes(memref_element(value))
        for d in memref_shape(value):
            n *= d
        granule = self.target.granule(memory_space(value))
        return -(-n // granule) * granule

    @staticmethod
    def _gm_ranges(ops: list[ir.Operation], operand: int) -> set[tuple[ir.Value, int, float]]:
        """GM tensors `ops`' copies read (`operand` 0) or write (1): views
        followed back to an argument, a `memref.view` of the workspace as
        its byte range there (each temporary its own)."""
        def tensor(value: ir.Value) -> tuple[ir.Value, int, float]:
            while True:
                op = defining_op(value)
                if op is not None and op.name == "memref.view":
                    shift = constant_index(op.operands[1])
                    if shift is not None:
                        size = element_bytes(memref_element(op.results[0]))
                        for d in memref_shape(op.results[0]):
                            size *= d
                        return view_root(op.operands[0]), shift, shift + size
                if op is None or op.name not in VIEW_OPS:
                    return value, 0, math.inf
                value = op.operands[0]

        return {tensor(op.operands[operand]) for top in ops
                for op in walk_held(top, lambda o: o.name in OP_SPACES)
                if OP_SPACES[op.name][operand] == "gm"}

    def _reads_written(self, readers: list[ir.Operation], writers: list[ir.Operation]) -> bool:
        """Whether `readers` load GM bytes that `writers` store."""
        written = self._gm_ranges(writers, 1)
        return any(r == w and lo < w_hi and w_lo < hi
                   for r, lo, hi in self._gm_ranges(readers, 0) for w, w_lo, w_hi in written)

    def _after_load(self, ops: list[ir.Operation]) -> float:
        """Cycles of `ops`' work on the pipes that follow a load (summed: a
        chunk is moved to L0, multiplied, drained and stored in turn)."""
        work = pipe_work(ops, self.target)
        return sum(work.get(p, 0.0) for p in _AFTER_LOAD_PIPES)

    def _gaps(self, tops: list[ir.Operation], first: int, last: int, end: int
              ) -> list[tuple[int, float]]:
        """(k, cycles), latest first, for each op `tops[k]` in [first, end) with
        GM loads: how long MTE2 is estimated to idle after its last load (the
        last iteration of a loop, then the ops up to the next op with loads).
        `tops[last]` ends the previous op; the ops after it prepare this op.
        A next op that reads nothing written since `first` does not wait: its
        loads run at once (see below where the idle time then counts)."""
        gaps: list[tuple[int, float]] = []
        idle = 0.0
        following = end
        for k in range(end - 1, first - 1, -1):
            op = tops[k]
            work = pipe_work([op], self.target)
            if not work.get("MTE2"):
                idle += self._after_load([op])
                continue
            if op.name == "scf.for":
                idle += self._after_load([o.operation for o in op.regions[0].blocks[0].operations])
            if following != end and \
                    not self._reads_written([tops[following]], tops[first:following]):
                # MTE2 goes on to the next op's loads at once. In the
                # previous op what remains of this idle time comes after
                # them (its loads are its own work: not to be delayed); this
                # op's preparation (a bias, gamma, beta) may wait for a
                # chunk: its loads only precede the loop's first wait.
                loads = pipe_work([tops[following]], self.target)["MTE2"]
                if following > last:
                    idle += max(0.0, gaps.pop()[1] - loads)
                    gaps.append((following, 0.0))
                else:
                    gaps[-1] = (following, gaps[-1][1] + max(0.0, idle - loads))
                    idle = 0.0
            gaps.append((k, idle))
            idle = 0.0
            following = k
        return gaps

    # ------------------------------------------------------------ transformation

    def _prefetch(self, func: ir.Operation, c: Candidate, collector) -> None:
        tops = [o.operation for o in func.regions[0].blocks[0].operations]
        at = tops.index(c.loop)
        where = str(c.loop.location)

        def works(k: int) -> bool:
            return any(pipe_work([tops[k]], self.target).values())

        # The previous op: the last op before the loop doing any work under
        # another location (this op's own preparation, e.g. the cast of A,
        # shares the loop's); its first op, going back over its location.
        prev = next((k for k in range(at - 1, -1, -1) if str(tops[k].location) != where
                     and works(k)), None)
        if prev is None:
            # The first op: only its own preparation (the cast and
            # fractalize of A) can leave MTE2 idle before the loop.
            prev = start = -1
            name = "this op's preparation"
            if not self._reads_written([c.loop], tops[:at]):
                self._say(c.loop, "npu-prefetch: not prefetched: no earlier op or preparation "
                                  "whose idle MTE2 time the weight loads could use")
                return
        else:
            name = f"'{_label(tops[prev])}'"
            before = str(tops[prev].location)
            start = prev
            for k in range(prev - 1, -1, -1):
                if works(k):
                    if str(tops[k].location) != before:
                        break
                    start = k
            if not self._reads_written(tops[prev + 1:at + 1], tops[start:prev + 1]):
                self._say(c.loop, f"npu-prefetch: not prefetched: this op reads nothing {name} "
                                  f"writes, so its loads follow that op's without waiting")
                return
        bandwidth = self.target.path("gm_to_l1").bytes_per_cycle
        capacity = self.target.capacity("l1")
        gaps = self._gaps(tops, max(start, 0), prev, at)
        # L1 each op from a gap to the loop needs at most, plus the slots
        # placed so far that stay live over it.
        need = {j: collector.space_bounds_at(func, "l1", j)[1] for j in range(max(start, 0), at)}
        left = dict(gaps)
        parts: list[Part] = []
        placed = 0
        for alloc, copies in c.slots:
            if self.chunks and placed == self.chunks:
                break
            size = self._bytes(alloc)
            trial, rest = self._fill(copies, gaps, left, bandwidth)
            if trial is None:
                break
            earliest = min(part.gap for part in trial)
            if any(need[j] + size > capacity for j in range(earliest + 1, at)):
                break
            for j in range(earliest + 1, at):
                need[j] += size
            left = rest
            parts.extend(trial)
            placed += 1
        chunk = self._bytes(c.slots[0][0])
        figures = (f"estimated MTE2 idle gaps from {name} on: "
                   f"{', '.join(str(int(g)) for _, g in reversed(gaps)) or 'none'} cycles; "
                   f"a chunk of {chunk} bytes takes {int(chunk / bandwidth)}")
        if not placed:
            fits = self._fill(c.slots[0][1], gaps, dict(gaps), bandwidth)[0] is not None
            reason = ("no chunk fits in L1 there" if fits
                      else "its idle gaps are too short for a chunk's load")
            self._say(c.loop, f"npu-prefetch: not prefetched: {reason} ({figures})")
            return
        slots = c.slots[:placed]
        home = {alloc: min(p.gap for p in parts if p.copy in copies) for alloc, copies in slots}
        # From the latest insertion point back: earlier indices stay valid.
        for gap in sorted({p.gap for p in parts}, reverse=True):
            issue = tops[gap + 1]
            made = self._emit(c, [a for a, k in home.items() if k == gap],
                              [p for p in parts if p.gap == gap], issue)
            collector.changed(gap + 1, made + [issue])
        self._guard(c, slots)
        block_ops = [o.operation for o in func.regions[0].blocks[0].operations]
        collector.changed(block_ops.index(c.loop))

        def nth(k: int, first: int) -> int:  # k's number among the working ops from `first`
            return sum(1 for j in range(first, k + 1) if works(j))

        points = ", ".join(f"after {name} step #{nth(k, start)} (of {nth(prev, start)})"
                           if k <= prev else f"after this op's preparation step #{nth(k, prev + 1)}"
                           for k in sorted({p.gap for p in parts}))
        self._say(c.loop, f"npu-prefetch: {placed} of {len(c.slots)} weight slot(s) "
                          f"({sum(self._bytes(a) for a, _ in slots)} bytes, {len(parts)} "
                          f"copies) loaded {points}, ahead of this op's first wait ({figures})")

    def _fill(self, copies: list[ir.Operation], gaps: list[tuple[int, float]],
              left: dict[int, float], bandwidth: int) -> tuple[list[Part] | None, dict]:
        """Split `copies` at bursts over the gaps, latest first: a gap takes
        bursts while at least half of the next one's load fits its idle time
        left (with `chunks` given, the latest gap takes everything). None
        when they do not all fit."""
        left = dict(left)
        parts: list[Part] = []
        order = iter(k for k, _ in gaps)
        gap = next(order, None)
        for copy in copies:
            n = int_attr(copy, "n_burst")
            bursts = n if self._splittable(copy) else 1
            cycles = instruction_cycles(copy, self.target) / bursts
            b = 0
            while b < bursts:
                if gap is None:
                    return None, left
                if not self.chunks and left[gap] < cycles / 2:
                    gap = next(order, None)
                    continue
                take = bursts - b if self.chunks else \
                    min(bursts - b, max(1, int((left[gap] + cycles / 2) // cycles)))
                left[gap] -= take * cycles
                parts.append(Part(gap, copy, b * n // bursts, (b + take) * n // bursts))
                b += take
        return parts, left

    @staticmethod
    def _splittable(copy: ir.Operation) -> bool:
        """A copy whose views' first dimension is its bursts (a B chunk's
        column blocks) can be cut into runs of bursts."""
        n = int_attr(copy, "n_burst")
        return n > 1 and all(memref_shape(v)[0] == n for v in copy.operands)

    def _emit(self, c: Candidate, allocs: list[ir.Operation], parts: list[Part],
              issue: ir.Operation) -> list[ir.Operation]:
        """Move `allocs` before `issue` and clone there the loop's first
        iteration of each part's copy (with its index arithmetic and views,
        the induction variable replaced by the lower bound), cut to the
        part's bursts. Returns the ops now before `issue`."""
        loop = c.loop
        body = loop.regions[0].blocks[0]
        iv = body.arguments[0]
        body_ops = [o.operation for o in body.operations]
        made: list[ir.Operation] = []
        with loop.context, loop.location:
            with ir.InsertionPoint(issue):
                first = arith.ConstantOp(ir.IndexType.get(), constant_index(loop.operands[0]))
            made.append(first.operation)
            for alloc in allocs:
                alloc.move_before(issue)
                made.append(alloc)
            slot_allocs = {a for a, _ in c.slots}
            for part in parts:
                copy = part.copy
                needed: set[ir.Operation] = set()
                pending = list(copy.operands)
                while pending:
                    op = defining_op(pending.pop())
                    if op is not None and op in body_ops and op not in needed \
                            and op not in slot_allocs:
                        needed.add(op)
                        pending.extend(op.operands)
                chain = [o for o in body_ops if o in needed] + [copy]
                with ir.InsertionPoint(issue):
                    clones = clone_into(chain, {iv: first.result}, set())
                    whole = clones[-1]
                    n = int_attr(copy, "n_burst")
                    if (part.first, part.end) != (0, n):
                        views = []
                        for v in whole.operands:
                            shape = memref_shape(v)
                            views.append(subview(v, [part.first] + [0] * (len(shape) - 1),
                                                 [part.end - part.first] + shape[1:]))
                            clones.append(defining_op(views[-1]))
                        cut = create_op(copy.name, views, **{
                            "n_burst": part.end - part.first,
                            "burst_len": int_attr(copy, "burst_len"),
                            "src_gap": int_attr(copy, "src_gap"),
                            "dst_gap": int_attr(copy, "dst_gap")})
                        clones.remove(whole)
                        whole.erase()
                        clones.append(cut)
                made.extend(clones)
        return made

    @staticmethod
    def _guard(c: Candidate, slots) -> None:
        """The loop's own copies of `slots` run from its second iteration on."""
        loop = c.loop
        iv = loop.regions[0].blocks[0].arguments[0]
        with loop.context, loop.location:
            for _, copies in slots:
                for copy in copies:
                    with ir.InsertionPoint(copy):
                        later = arith.CmpIOp(arith.CmpIPredicate.ne, iv, loop.operands[0]).result
                        guard = scf.IfOp(later, [], has_else=False)
                    with ir.InsertionPoint(guard.then_block):
                        scf.YieldOp([])
                    copy.move_before(guard.then_block.operations[0].operation)

    def _say(self, op: ir.Operation, message: str) -> None:
        if self.remarks:
            self.remark(op, message)
