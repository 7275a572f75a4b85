"""A loop keeping B's strip resident in L1 (npu-lower-matmul's column
strips) as a prefetch candidate (mixed into `PrefetchPass`): its parts
are the slots, their first copies cloned into the gaps, the loop's own
copies then asked for a later iteration (or, for the bursts of a first
part that did not fit, kept for the first one).

A loop in a share's guard (`guarded.py`: BERT seq 512's Q, K and V
projections as column strips on shares of the 32 cores) has its strip's
buffers at function level, outside the guard.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, scf

from npu.analysis.pipe_work import trip_count
from npu.ir import defining_op, view_root

from .emit import _cut
from .parts import Candidate, Part, _writers


class ResidentStrips:
    """Finding a resident strip's parts and guarding the loop's copies."""

    def _resident_candidate(self, loop: ir.Operation, ops: list[ir.Operation],
                            constants: set[ir.Value]) -> tuple[Candidate | None, str]:
        """A loop keeping a strip of host-constant weights resident in L1
        (npu-lower-matmul's column strips): each part's one copy alone under
        an `scf.if` of the body, into a function-level alloc that only such
        copies write; its slots are the parts in body order, each with its
        first copy (npu-double-buffer may have unrolled the loop: the
        later copies are other tiles', which start no column on the first
        iteration)."""
        slots = []
        seen: set = set()
        guarded: set = set()
        # A loop in a share's guard (`guarded.py`) has its strip at function
        # level, outside the guard.
        around = loop.parent.operation
        homes = [around] + ([around.parent.operation] if around.name == "scf.if" else [])
        for op in ops:
            if op.name != "scf.if" or len(op.regions[1].blocks):
                continue
            inner = [o.operation for o in op.regions[0].blocks[0].operations]
            if (len(inner) != 2 or inner[0].name != "cce.copy_gm_to_l1"
                    or view_root(inner[0].operands[0]) not in constants):
                continue
            guarded.add(inner[0])
            owner = defining_op(view_root(inner[0].operands[1]))
            if owner is None or owner.name != "memref.alloc" \
                    or owner.parent.operation not in homes:
                return None, "a resident weight part is not a function-level buffer"
            if owner not in seen:
                seen.add(owner)
                slots.append((owner, [inner[0]]))
        if any(w not in guarded for alloc, _ in slots for w in _writers(alloc.results[0])):
            return None, "a resident weight part is also written by another copy"
        if not slots:
            return None, "the loop stages no host-constant weights into L1"
        if trip_count(loop) is None:
            return None, "the loop has no constant trip count"
        return Candidate(loop, slots, resident=True, body=ops), ""

    @staticmethod
    def _guard_resident(c: Candidate, slots, rests: list[Part] = ()) -> None:
        """The loop's own copies of a resident strip's prefetched parts run
        only on later iterations: their `scf.if` also asks for one. A part
        with `rests` (its bursts not prefetched) loads them on the first
        iteration instead: `scf.if later { copy } else { the rest }`."""
        loop = c.loop
        iv = loop.regions[0].blocks[0].arguments[0]
        with loop.context, loop.location:
            for _, copies in slots:
                copy = copies[0]
                guard = copy.parent.operation
                mine = [r for r in rests if r.copy == copy]
                if not mine:
                    with ir.InsertionPoint(guard):
                        later = arith.CmpIOp(arith.CmpIPredicate.ne, iv, loop.operands[0]).result
                        both = arith.AndIOp(guard.operands[0], later).result
                    guard.operands[0] = both
                    continue
                with ir.InsertionPoint(copy):
                    later = arith.CmpIOp(arith.CmpIPredicate.ne, iv, loop.operands[0]).result
                    split = scf.IfOp(later, [], has_else=True)
                with ir.InsertionPoint(split.then_block):
                    scf.YieldOp([])
                with ir.InsertionPoint(split.else_block):
                    for rest in mine:
                        _cut(copy, rest.first, rest.end)
                    scf.YieldOp([])
                copy.move_before(split.then_block.operations[0].operation)
