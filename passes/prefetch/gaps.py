"""The MTE2 idle gaps of `npu-prefetch`'s cost model and the placement of
weight copies into them (mixed into `PrefetchPass`: its target and
options)."""

from __future__ import annotations

import math

from mlir import ir

from npu.dialects.cce import OP_SPACES
from npu.ir import VIEW_OPS, defining_op, element_bytes, int_attr, memref_element, memref_shape, \
    view_root, walk_held
from npu.pipe_work import constant_index, instruction_cycles, pipe_work

from .parts import Part

# Pipes whose work follows an op's last GM load (everything but MTE2 and
# the scalar unit, which only issues).
AFTER_LOAD_PIPES = ("MTE1", "M", "V", "MTE3")


class IdleGaps:
    """Where MTE2 is estimated to idle between the previous op and a matmul
    loop, and which bursts of its weight copies go there."""

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

    def _loop_tail(self, loop: ir.Operation) -> float:
        """Work left after a loop's last load: its last iteration's after the
        body's last load when MTE2 bounds the loop (the other pipes keep
        up), else the whole last iteration's (they lag behind by up to the
        ping-pong's other half)."""
        body = [o.operation for o in loop.regions[0].blocks[0].operations]
        work = pipe_work(body, self.target)
        if work["MTE2"] >= max(work.get(p, 0.0) for p in AFTER_LOAD_PIPES):
            last = max(k for k, op in enumerate(body) if pipe_work([op], self.target)["MTE2"])
            body = body[last + 1:]
        return self._after_load(body)

    def _after_load(self, ops: list[ir.Operation]) -> float:
        """Cycles of `ops`' work on the pipes that follow a load (summed: a
        chunk is moved to L0, multiplied, drained and stored in turn)."""
        work = pipe_work(ops, self.target)
        return sum(work.get(p, 0.0) for p in AFTER_LOAD_PIPES)

    def _gaps(self, tops: list[ir.Operation], first: int, last: int, end: int
              ) -> list[tuple[int, float]]:
        """(k, cycles), latest first, for each op `tops[k]` in [first, end) with
        GM loads: how long MTE2 is estimated to idle after its last load (the
        last iteration of a loop, then the ops up to the next op with loads).
        `tops[last]` ends the previous op; the ops after it prepare this op.
        A next op that reads nothing op `k` or a later one writes does not
        wait: its loads run at once (see below where the idle time then
        counts; before the loop there is none)."""
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
                idle += self._loop_tail(op)
            if following == end:
                # Writes before op k are long done: only its own and later
                # ones keep the loop's first load waiting.
                if not self._reads_written([tops[end]], tops[k:end]):
                    idle = 0.0
            elif not self._reads_written([tops[following]], tops[k:following]):
                # MTE2 goes on to the next op's loads at once. In the
                # previous op what remains of this idle time comes after
                # them (its loads are its own work: not to be delayed); this
                # op's preparation (a bias, gamma, beta) may wait for a
                # chunk: its loads only precede the loop's first wait.
                loads = pipe_work([tops[following]], self.target)["MTE2"]
                if following > last:
                    idle += max(0.0, gaps.pop()[1] - loads)
                    gaps.append((following, 0.0))
                    if not self._reads_written([tops[end]], tops[k:end]):
                        idle = 0.0  # nor does the loop wait for op k
                else:
                    gaps[-1] = (following, gaps[-1][1] + max(0.0, idle - loads))
                    idle = 0.0
            gaps.append((k, idle))
            idle = 0.0
            following = k
        # Of the previous op only its tail: loads into its earlier gaps
        # would run ahead of its own later loads, which its remaining steps
        # wait for (measured on the unfused BERT layer, whose layernorm and
        # GELU are chains of many steps: +23k cycles at seq 512).
        tail = max((k for k, _ in gaps if k <= last), default=None)
        return [(k, g if k > last or k == tail else 0.0) for k, g in gaps]

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

