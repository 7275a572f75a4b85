"""`npu-double-buffer`: ping-pong the buffers a loop streams through.

Why: with one buffer per tile, the MTE2 load of step i+1 must wait until the
compute of step i has read the buffer, and the compute waits for the store of
step i-1; the pipes take turns instead of overlapping. With two copies, step
i+1 loads into the other slot while step i computes.

How: every `scf.for` (constant bounds, at least two iterations, no
iter_args) whose body allocates on-chip buffers is unrolled by two: the new
body runs iteration i with the original allocs (slot 0) and iteration i+1
with a second copy of them (slot 1); an odd trip count leaves one remainder
iteration after the loop (a one-trip loop of its own). Memory planning then sees two buffers alive for the
whole body (so it never lets them share bytes) and sync insertion derives
the flags of each slot separately (so each gets its own event ids).

A buffer is only duplicated if the doubled body still fits its memory (the
lower bound of the current plan where the loop runs, i.e. in its top-level
op, plus the copy must stay within capacity: one op needing most of UB
does not keep every other loop of the function single-buffered; when the
bounds leave it open, that op's own buffers are planned);
otherwise both slots share it, which is correct but serialises on it.
Buffers only the vector pipe touches are not counted: they live over their
uses only (`npu-plan-memory`), so each half gets its own copy and the two
share bytes; a second copy of them would buy nothing, V being in order.
Allocs get `npu.slot = 0 | 1` so the tests and reports can see the slots.

A loop marked `npu.double_buffer = true | false` (by a lowering, for an op
with the per-op option `double-buffer`, see `Pass.lower_each`) follows its
mark; unmarked loops follow the `unmarked` option.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlir import ir
from mlir.dialects import arith, scf

from npu.analysis.access import AccessAnalysis
from npu.analysis.unrolled import derive_copies
from npu.ir import (bool_attr, clone_into, defining_op, functions, has_regions, i64_attr,
                    index_const, memory_space, walk_held)
from npu.passes.applies import LOOPS
from npu.passes.base import DOUBLE_BUFFER_ATTR, Option, Pass
from npu.target import ON_CHIP_BUFFERS

if TYPE_CHECKING:
    from npu.passes.buffer_lifetimes import BufferCollector

SLOT_ATTR = "npu.slot"


class DoubleBufferPass(Pass):
    name = "npu-double-buffer"
    summary = "Unroll loops that stream on-chip buffers by two, with a second copy of the buffers"
    acts_on = LOOPS  # every option: the program has one (it runs on lowered programs)
    options = (
        Option("min-trip-count", int, 2, "only loops with at least this many iterations",
               low=1, needs=(("unmarked", True),)),  # or loops marked for it (`met_by_program`)
        Option("unmarked", bool, True, "ping-pong loops without an npu.double_buffer mark "
               "(marked loops follow their mark)"),
    )

    def met_by_program(self, name: str, want, module: ir.Operation | None) -> bool:
        """A loop marked for ping-pong (an op's own `double-buffer` option)
        is one `min-trip-count` applies to without `unmarked`."""
        if name != "unmarked" or not want:
            return False
        return module is None or bool(walk_held(
            module, lambda o: o.name == "scf.for" and DOUBLE_BUFFER_ATTR in o.attributes
            and bool_attr(o, DOUBLE_BUFFER_ATTR)))

    def run(self, module: ir.Operation) -> None:
        from npu.passes.buffer_lifetimes import BufferCollector

        # func -> its collector, up to date with the IR this pass leaves: the
        # memory planner run right after takes the lifetimes from it
        # (`PlanMemoryPass.collectors`) instead of analysing every op again.
        self.collectors: dict[ir.Operation, BufferCollector] = {}
        for func in functions(module):
            if not func.regions[0].blocks:
                continue
            # Re-planned after every unroll; only the unrolled part is re-walked.
            collector = self.collectors[func] = BufferCollector(self.target)
            tops = collector.track(func)
            # (index of the top-level op holding it, loop, the loop is that op)
            # (a top-level op without regions holds no loop: most of them,
            # and walking each was 11k binding walks on BERT-12 at 32 cores)
            loops = [(k, loop, loop == top) for k, top in enumerate(tops) if has_regions(top)
                     for loop in walk_held(top, lambda o: o.name == "scf.for")]
            # innermost loops first: an outer unroll then copies the inner
            # ping-pong; from the last op back, so the indices of the
            # top-level ops still to come stay valid when one is replaced
            loops.reverse()
            for top_index, loop, is_top in loops:
                marked = DOUBLE_BUFFER_ATTR in loop.attributes
                if not (bool_attr(loop, DOUBLE_BUFFER_ATTR) if marked else self.unmarked):
                    continue
                body = loop.regions[0].blocks[0]
                allocs = [o.operation for o in body.operations
                          if o.operation.name == "memref.alloc"
                          and memory_space(o.operation.results[0]) in ON_CHIP_BUFFERS]
                if not allocs or len(loop.results):
                    continue
                analysis = AccessAnalysis(self.target)
                iv = analysis.iv_key(body.arguments[0])
                if iv is None:
                    continue
                r = analysis.iv_ranges[iv]
                if r.trip_count < max(2, self.min_trip_count):
                    continue
                vector_only = collector.vector_only_at(func, top_index).intersection(allocs)
                duplicated = self._fitting(func, [a for a in allocs if a not in vector_only],
                                           collector, top_index)
                # Unrolling a loop none of whose own buffers fit twice would
                # only copy its nested loops' buffers: measured on the BERT
                # matmuls it bought < 1% (the L0 tiles stay single), so no.
                if duplicated:
                    # Each half gets its own vector-only buffers: they live
                    # only over their uses, so the two copies share bytes
                    # (no capacity), while one buffer used by both halves
                    # would live over both and share with nothing.
                    duplicated |= vector_only
                    source = collector.analysis_at(func, top_index)
                    # Inside a top-level op: one analysis of the whole op,
                    # its other ops' accesses kept (analysing the op afresh
                    # after each inner unroll was 0.2 CPU s of BERT-12's).
                    into = None if is_top else _kept_outside(tops[top_index], loop, source)
                    replacement, seeds = self._unroll(loop, r, allocs, duplicated, source, into)
                    if is_top:
                        collector.changed(top_index, replacement, seeds)
                    else:
                        collector.changed(top_index, [tops[top_index]], [into])

    def _fitting(self, func: ir.Operation, allocs: list[ir.Operation],
                 collector: "BufferCollector", top_index: int) -> set[ir.Operation]:
        """The allocs whose second copy keeps their memory within capacity.

        The base is what the planner needs today with plain lifetime reuse
        (at least the lower bound) where the loop is (its top-level op, with
        the function-level allocs live over it: elsewhere the copy is not
        live); a copy lives with the whole body, so it adds its full size.
        The loop's top-level op is planned only when those bounds leave the
        answer open (planning the whole function per loop was quadratic, and
        charged the loop with another op's peak).
        """
        chosen = set()
        sizes = {op: collector.space_size(op) for op in allocs}
        for space in ON_CHIP_BUFFERS:
            mine = [(op, size) for op, (where, size) in sizes.items() if where == space]
            if not mine:
                continue
            capacity = self.target.capacity(space)
            low, high = collector.space_bounds_at(func, space, top_index)
            if high + sum(size for _, size in mine) <= capacity:
                chosen.update(op for op, _ in mine)
                continue
            if low + min(size for _, size in mine) > capacity:
                continue
            base = low if low == high else max(low, collector.planned_at(func, space, top_index))
            if base + sum(size for _, size in mine) <= capacity:
                chosen.update(op for op, _ in mine)
                continue
            # Not all fit: the smallest first, as many as fit.
            for op, size in sorted(mine, key=lambda m: m[1]):
                if base + size <= capacity:
                    base += size
                    chosen.add(op)
        return chosen

    def _unroll(self, loop: ir.Operation, r, allocs, duplicated: set[ir.Operation],
                source: AccessAnalysis | None = None, into: AccessAnalysis | None = None
                ) -> tuple[list[ir.Operation], list[AccessAnalysis | None]]:
        """Replace `loop` by its unrolled form; returns the ops now in its
        place and, given `source` (an analysis of `loop`), per op one with
        the accesses of its copies of the body (None for the others), or
        all of them in `into` when given."""
        body = loop.regions[0].blocks[0]
        ops = [o.operation for o in body.operations][:-1]  # without scf.yield
        old_iv = body.arguments[0]
        pairs = r.trip_count // 2
        with loop.context, loop.location, ir.InsertionPoint(loop):
            new = scf.ForOp(index_const(r.lb), index_const(r.lb + 2 * pairs * r.step),
                            index_const(2 * r.step), [])
            with ir.InsertionPoint(new.body):
                iv0 = new.induction_variable
                iv1 = arith.AddIOp(iv0, index_const(r.step)).result
                ping = clone_into(ops, {old_iv: iv0}, set())
                ping_map = {}
                for old, new_op in zip([o for o in ops], ping):
                    if old.name == "memref.alloc":
                        ping_map[old.results[0]] = new_op.results[0]
                        if old in duplicated:
                            new_op.attributes[SLOT_ATTR] = i64_attr(0)
                shared = {a for a in allocs if a not in duplicated}
                pong_map = {old_iv: iv1, **{a.results[0]: ping_map[a.results[0]] for a in shared}}
                pong = clone_into(ops, pong_map, shared)
                for old, clone in zip([o for o in ops if o not in shared], pong):
                    if old in duplicated:
                        clone.attributes[SLOT_ATTR] = i64_attr(1)
                scf.YieldOp([])
            # Per new loop, its copies of the body: (originals, clones, what
            # stands for the old induction variable); the allocs both halves
            # share are ping's in pong.
            shared_in_ping = [(o, c) for o, c in zip(ops, ping) if o in shared]
            copies = [[(ops, ping, {old_iv: (iv0, 0)}),
                       ([o for o in ops if o not in shared] + [o for o, _ in shared_in_ping],
                        pong + [c for _, c in shared_in_ping], {old_iv: (iv0, r.step)})]]
            if r.trip_count % 2:
                # The odd last iteration stays a (one-trip) loop, so that its
                # buffers keep loop-body lifetimes instead of living for the
                # whole enclosing block.
                rest = scf.ForOp(index_const(r.last), index_const(r.last + r.step),
                                 index_const(r.step), [])
                with ir.InsertionPoint(rest.body):
                    last = clone_into(ops, {old_iv: rest.induction_variable}, set())
                    scf.YieldOp([])
                copies.append([(ops, last, {old_iv: (rest.induction_variable, 0)})])
        # The new loops and the constants of their bounds, made just before them.
        made = [new.operation] + ([rest.operation] if r.trip_count % 2 else [])
        replacement, seeds = [], []
        for loop_op, parts in zip(made, copies):
            bounds = [defining_op(v) for v in loop_op.operands]
            replacement += bounds + [loop_op]
            seeds += [None] * len(bounds)
            seed = None
            if source is not None:  # (before the original body is erased)
                seed = into or AccessAnalysis(self.target, source)
                for originals, clones, ivs in parts:
                    derive_copies(seed, source, _pairs(originals, clones), ivs)
            seeds.append(seed if into is None else None)
        loop.erase()
        return replacement, seeds


def _kept_outside(top: ir.Operation, loop: ir.Operation, source: AccessAnalysis) -> AccessAnalysis:
    """A fresh analysis (of `source`'s types) holding `source`'s reusable
    accesses (and the allocs used) of the ops of `top` outside `loop`, which unrolling `loop`
    leaves as they are (the loop's own ops are erased)."""
    analysis = AccessAnalysis(source.target, source)
    inside = set(walk_held(loop))
    for op in walk_held(top):
        if op in inside:
            continue
        if op.name == "scf.for":  # the ranges of the accesses kept
            analysis.iv_key(op.regions[0].blocks[0].arguments[0])
        acc = source.reusable_access(op)
        if acc is not None:
            analysis.take_access(op, acc)
        used = source.known_allocs_used(op)
        if used is not None:
            analysis.take_allocs_used(op, used)
    return analysis


def _pairs(originals: list[ir.Operation], clones: list[ir.Operation]
           ) -> list[tuple[ir.Operation, ir.Operation]]:
    """(original, clone) of every op of `clone_into`'s copies, nested ones
    included (a clone has its original's structure)."""
    pairs = []
    for original, clone in zip(originals, clones):
        if has_regions(original):
            pairs += zip(walk_held(original), walk_held(clone))
        else:
            pairs.append((original, clone))
    return pairs
