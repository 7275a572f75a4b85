"""`npu-plan-memory`: a static byte offset (`npu.offset`) for every on-chip
`memref.alloc` (l1, l0a, l0b, l0c, ub).

Why: the buffers are small and have no allocator at run time; reusing bytes
between buffers whose lifetimes do not overlap is what lets big tiles fit.

* Lifetimes are intervals over program order. An alloc inside a loop body
  lives for the whole body (the next iteration's instance of the same buffer
  and every other buffer of the body share the loop), unless only vector
  instructions touch it: then it lives over its uses (reusing its bytes
  orders V after V, across iterations too, which V's in-order pipeline
  gives for free); a use inside a nested loop extends the lifetime over
  that whole loop.
* Two buffers may share bytes only if their lifetimes are disjoint. The
  planner first also refuses reuse that would add a dependency between two
  pipes (the earlier buffer's last access and the later one's first access on
  different pipes), so that pipes stay free to overlap; if that does not fit
  a buffer, it refuses such reuse only between lifetimes that are close in
  program order (shrinking windows), and at last falls back to plain
  lifetime reuse; the windows shrink buffer by buffer, only for the buffers
  where the bytes run out (`place_relaxed`), not for the whole function.
  Where the bytes allow at those windows, a hand-over to a later kernel
  spans from the end of the earlier buffer's kernel to the start of the
  later one's (`npu.passes.buffer_kernels`): a kernel's late readers run
  behind its loads, which run on into the next kernel. A
  buffer inside a core guard (`scf.if`) hands its bytes to a buffer after
  the guard at the guard's end: npu-insert-sync sets the flags for that
  after the whole guard (`Buffer.release`).
* The placement (greedy by size and MegEngine's pushdown, the lower peak
  wins) is the shared planner of `npu.memory_planning`, also used by
  `npu-plan-gm` for the GM workspace. The buffers, their conflicts and
  their placement are `npu.passes.buffer_placement`'s, their lifetimes
  `npu.passes.buffer_lifetimes`'.
* Offsets and sizes are whole granules of their buffer (target.granule).

Per buffer the pass records bytes allocated, the lower bound (most bytes live
at once), the sum of sizes (no reuse) and the capacity in the function's
`npu.memory_plan` attribute (and as a remark with `remarks=true`); the same
figures come from `plan_function` as dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from npu.analysis.access import OFFSET_ATTR
from npu.ir import functions, i64_attr
from npu.memory_planning import ALGORITHMS, Plan, lower_bound
from npu.passes.base import Option, Pass, PassError
from npu.passes.buffer_kernels import mark_kernel_ends
from npu.passes.buffer_lifetimes import BufferCollector, collect_buffers, collector_for
from npu.passes.buffer_placement import Buffer, place, place_relaxed  # noqa: F401
from npu.target import ON_CHIP_BUFFERS, Target

__all__ = ["Buffer", "collect_buffers", "plan_function", "PlanMemoryPass"]

PLAN_ATTR = "npu.memory_plan"


@dataclass(frozen=True)
class SpacePlan:
    """The plan of one on-chip buffer (memory space)."""

    space: str
    allocated: int     # bytes from 0 to the highest allocated byte
    lower_bound: int   # most bytes live at once
    total: int         # sum of all sizes (no reuse)
    capacity: int
    algorithm: str
    buffers: int
    pipe_aware: bool   # True when no reuse adds a cross-pipe dependency
    window: int | None = None  # see WINDOWS


# ----------------------------------------------------------------------------
# The API and the pass
# ----------------------------------------------------------------------------


def plan_function(func_op: ir.Operation, target: Target, algorithm: str = "auto",
                  apply: bool = True, collector: BufferCollector | None = None
                  ) -> dict[str, SpacePlan]:
    """Plan every on-chip buffer of `func_op`; with `apply`, write `npu.offset`s.
    `collector`: one that follows `func_op` as it is now (see `PlanMemoryPass.collectors`)."""
    collector = collector or BufferCollector(target)
    buffers = collector.collect(func_op)
    mark_kernel_ends(buffers, func_op, collector.top_spans(func_op))
    result: dict[str, SpacePlan] = {}
    for space in ON_CHIP_BUFFERS:
        group = [b for b in buffers if b.space == space]
        if not group:
            continue
        capacity = target.capacity(space)
        bound, when = lower_bound(group)
        relaxed = place_relaxed(group, capacity, algorithm)
        plan, window = relaxed.plan, relaxed.window
        pipe_aware = window is None
        if plan.peak > capacity:
            _overflow(group, plan, bound, when, capacity, space)
        for b, off in zip(group, plan.offsets):
            b.offset = off
        result[space] = SpacePlan(space, plan.peak, bound, sum(b.size for b in group), capacity,
                                  plan.algorithm, len(group), pipe_aware, window)
    if apply:
        with func_op.context:
            for b in buffers:
                b.op.attributes[OFFSET_ATTR] = i64_attr(b.offset)
            func_op.attributes[PLAN_ATTR] = ir.DictAttr.get({
                p.space: ir.DictAttr.get({
                    "allocated": i64_attr(p.allocated), "lower_bound": i64_attr(p.lower_bound),
                    "sum": i64_attr(p.total), "capacity": i64_attr(p.capacity),
                    "algorithm": ir.StringAttr.get(p.algorithm),
                    "pipe_aware": ir.BoolAttr.get(p.pipe_aware)})
                for p in result.values()})
    return result


class Overflow(PassError):
    """A space's plan past its capacity, with its figures: `peak` placed,
    at least `bound` live at once (npu-lower says which its L1 retry met)."""

    def __init__(self, message: str, op: ir.Operation, peak: int, bound: int, capacity: int):
        super().__init__(message, op)
        self.peak, self.bound, self.capacity = peak, bound, capacity


def _overflow(group: list[Buffer], plan: Plan, bound: int, when: int, capacity: int,
              space: str) -> None:
    worst = max(range(len(group)), key=lambda i: plan.offsets[i] + group[i].size)
    live = sorted((b for b in group if b.start <= when <= b.end), key=lambda b: -b.size)
    listing = ", ".join(b.name for b in live[:3])
    raise Overflow(
        f"{space} overflows: {plan.peak} bytes needed but only {capacity} available "
        f"(at least {bound} bytes are live at once; {len(group)} buffers, "
        f"{sum(b.size for b in group)} bytes without reuse); "
        f"largest allocations live at the peak: {listing}", group[worst].op,
        plan.peak, bound, capacity)


class PlanMemoryPass(Pass):
    name = "npu-plan-memory"
    summary = "Assign npu.offset to every on-chip memref.alloc (lifetime-based reuse)"
    options = (
        Option("algorithm", str, "auto", "placement heuristic; auto keeps the better of both",
               choices=ALGORITHMS),
        Option("remarks", bool, False, "report the plan of each buffer as a remark on the function"),
    )

    # func -> a `BufferCollector` that follows it up to this pass (left by
    # `npu-double-buffer` when `npu-lower` runs the two back to back): its
    # lifetimes are those of a fresh analysis, which is then not repeated.
    collectors: dict[ir.Operation, BufferCollector] = {}

    def run(self, module: ir.Operation) -> None:
        for func in functions(module):
            if not func.regions[0].blocks:
                continue
            plans = plan_function(func, self.target, self.algorithm,
                                  collector=collector_for(self.collectors, func))
            if self.remarks:
                for p in plans.values():
                    self.remark(func, f"{p.space}: allocated {p.allocated} B, lower bound "
                                f"{p.lower_bound} B, sum of sizes {p.total} B, capacity "
                                f"{p.capacity} B ({p.buffers} buffers, {p.algorithm}"
                                f"{'' if p.pipe_aware else ', reuse across pipes'})")
