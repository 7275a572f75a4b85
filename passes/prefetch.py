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

import re
from dataclasses import dataclass

from mlir import ir

from mlir.dialects import arith, scf

from npu.ir import (VIEW_OPS, arg_attrs, clone_into, defining_op, element_bytes, memory_space,
                    memref_element, memref_shape, view_root, walk_held)
from npu.passes.buffer_lifetimes import collector_for
from npu.passes.base import Option, Pass
from npu.pipe_work import constant_index, pipe_work, trip_count

CONSTANT_ATTR = "npu.constant"
# Pipes whose work follows an op's last GM load (everything but MTE2 and
# the scalar unit, which only issues).
_AFTER_LOAD_PIPES = ("MTE1", "M", "V", "MTE3")


@dataclass
class Candidate:
    """A matmul loop whose body stages host-constant weights into L1."""

    loop: ir.Operation
    # Per weight buffer (a ping-pong slot) in body order: its alloc and copies.
    slots: list[tuple[ir.Operation, list[ir.Operation]]]


def _label(op: ir.Operation) -> str:
    """The source op's name of a (name-)location, else the location itself."""
    text = str(op.location)
    names = re.findall(r'"([A-Za-z_][A-Za-z_0-9.]*)"\(', text)
    return names[0] if names else text.removeprefix("loc(").removesuffix(")")


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
            self._prefetch(func, candidate)

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

    def _idle_tail(self, tops: list[ir.Operation], last: int) -> float:
        """Estimated cycles MTE2 idles at the end of the ops up to `tops[last]`:
        the work that follows their last GM load (summed over the pipes: in
        the last iteration the chunk is moved to L0, multiplied, drained and
        stored in turn)."""
        tail = 0.0
        for op in reversed(tops[:last + 1]):
            work = pipe_work([op], self.target)
            if not work.get("MTE2"):
                tail += sum(work.get(p, 0.0) for p in _AFTER_LOAD_PIPES)
                continue
            if op.name == "scf.for":
                body = [o.operation for o in op.regions[0].blocks[0].operations]
                once = pipe_work(body, self.target)
                tail += sum(once.get(p, 0.0) for p in _AFTER_LOAD_PIPES)
            break
        return tail

    def _live_l1_across(self, tops: list[ir.Operation], first: int, last: int) -> int:
        """L1 bytes of function-level allocs used both before `tops[first]`
        and from it through `tops[last]` (they stay live next to the chunks)."""
        index = {op: k for k, op in enumerate(tops)}
        total = 0
        for k, op in enumerate(tops[:first]):
            if op.name != "memref.alloc" or memory_space(op.results[0]) != "l1":
                continue
            users = []
            pending = [op.results[0]]
            while pending:
                for use in pending.pop().uses:
                    user = use.owner.operation
                    while user.parent is not None and user.parent.name != "func.func":
                        user = user.parent
                    if user.name in VIEW_OPS:
                        pending.extend(user.results)
                    users.append(index.get(user, -1))
            if any(u >= first for u in users) and any(k < u < first for u in users):
                total += self._bytes(op)
        return total

    # ------------------------------------------------------------ transformation

    def _prefetch(self, func: ir.Operation, c: Candidate) -> None:
        tops = [o.operation for o in func.regions[0].blocks[0].operations]
        at = tops.index(c.loop)
        where = str(c.loop.location)
        # The previous op: the last op before the loop doing any work under
        # another location (this op's own preparation, e.g. the cast of A,
        # shares the loop's).
        prev = next((k for k in range(at - 1, -1, -1) if str(tops[k].location) != where
                     and any(pipe_work([tops[k]], self.target).values())), None)
        if prev is None:
            self._say(c.loop, "npu-prefetch: not prefetched: no earlier op whose idle MTE2 "
                              "time the weight loads could use")
            return
        bandwidth = self.target.path("gm_to_l1").bytes_per_cycle
        tail = self._idle_tail(tops, prev)
        live = self._live_l1_across(tops, prev + 1, at)
        between = sum(self._bytes(o) for k in range(prev + 1, at)
                      for o in walk_held(tops[k], lambda x: x.name == "memref.alloc")
                      if memory_space(o.results[0]) == "l1")
        free = self.target.capacity("l1") - live - between
        # Slots in body order while their loads fit the idle tail (the last
        # one if at least half of it does) and their buffers fit in L1.
        chosen, used, spent = 0, 0, 0.0
        for alloc, _ in c.slots:
            size = self._bytes(alloc)
            cycles = size / bandwidth
            if used + size > free:
                break
            if self.chunks:
                if chosen == self.chunks:
                    break
            elif spent + cycles / 2 > tail:
                break
            chosen, used, spent = chosen + 1, used + size, spent + cycles
        chunk = self._bytes(c.slots[0][0])
        figures = (f"'{_label(tops[prev])}' leaves MTE2 idle an estimated {int(tail)} cycles "
                   f"after its last load; a chunk of {chunk} bytes takes "
                   f"{int(chunk / bandwidth)}; {max(free, 0)} bytes of L1 free")
        if not chosen:
            reason = ("no chunk fits in L1" if chunk > free else
                      "the idle tail is shorter than half a chunk's load")
            self._say(c.loop, f"npu-prefetch: not prefetched: {reason} ({figures})")
            return
        new_ops = self._hoist_first_iteration(c, chosen, tops[prev + 1])
        collector = collector_for(self.collectors, func)
        if collector is not None:  # keep npu-double-buffer's lifetimes current
            collector.changed(prev + 1, new_ops + [tops[prev + 1]])
            collector.changed(at + len(new_ops))
        self._say(c.loop, f"npu-prefetch: {chosen} of {len(c.slots)} weight slot(s) "
                          f"({used} bytes) loaded after '{_label(tops[prev])}', ahead of this "
                          f"op's first wait ({figures})")

    def _hoist_first_iteration(self, c: Candidate, count: int, issue: ir.Operation
                               ) -> list[ir.Operation]:
        """Move the first `count` slots' buffers before `issue`, clone their copies
        of the loop's first iteration there, and make the loop's own copies
        skip that iteration. Returns the ops now before `issue`."""
        loop = c.loop
        body = loop.regions[0].blocks[0]
        iv = body.arguments[0]
        body_ops = [o.operation for o in body.operations]
        made: list[ir.Operation] = []
        with loop.context, loop.location:
            with ir.InsertionPoint(issue):
                first = arith.ConstantOp(ir.IndexType.get(), constant_index(loop.operands[0]))
            made.append(first.operation)
            for alloc, copies in c.slots[:count]:
                alloc.move_before(issue)
                made.append(alloc)
                for copy in copies:
                    # The copy's index arithmetic and views inside the body.
                    needed: set[ir.Operation] = set()
                    pending = list(copy.operands)
                    while pending:
                        op = defining_op(pending.pop())
                        if op is not None and op in body_ops and op not in needed \
                                and op != alloc:
                            needed.add(op)
                            pending.extend(op.operands)
                    chain = [o for o in body_ops if o in needed] + [copy]
                    with ir.InsertionPoint(issue):
                        made.extend(clone_into(chain, {iv: first.result}, set()))
                    with ir.InsertionPoint(copy):
                        later = arith.CmpIOp(arith.CmpIPredicate.ne, iv, loop.operands[0]).result
                        guard = scf.IfOp(later, [], has_else=False)
                    with ir.InsertionPoint(guard.then_block):
                        scf.YieldOp([])
                    copy.move_before(guard.then_block.operations[0].operation)
        return made

    def _say(self, op: ir.Operation, message: str) -> None:
        if self.remarks:
            self.remark(op, message)
