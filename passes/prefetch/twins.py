"""One op's loops on several shares of the cores: the later shares' first
weight slots load into the first share's prefetched buffers (mixed into
`PrefetchPass`).

Why: npu-split-cores may run one ONNX node as several matmul loops, each
under an `scf.if` on its own share of the cores: BERT seq 512's ffn_out,
its reduction cut into four runs (`split_k_rows`) on cores 0-7, 8-15, 16-23
and 24-31. npu-prefetch loaded the first share's two weight slots (295 KB a
core) in ffn_in's idle MTE2 tail, and none of the others': L1 holds no four
sets of slots beside ffn_in (the memory plan is the program's, so buffers
under different guards get different bytes), so the other 24 cores loaded
their strips after the barrier, their cube idle ~3.6k cycles, and ended the
phase 4.4k cycles after cores 0-7.

No core runs two of those loops, so the later shares (twins: the same slot
buffers and copies, cores disjoint from the first's) take the first share's
buffers: their slot allocs are replaced by its function-level ones, their
first iteration's copies are cloned under a guard of their own cores right
after the first share's at each point it loads (the same gaps: each core
runs one of them), and their loops' copies run from the second iteration
on. Each core loads its own slice into the same bytes, so the values each
loop reads are the ones it read before: outputs bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from mlir import ir

from npu.ir import int_attr

from .guarded import Share
from .parts import Candidate, Part

_COPY_ATTRS = ("n_burst", "burst_len", "src_gap", "dst_gap")


def _mapped(parts: list[Part], mapping: dict) -> list[Part]:
    """The lead's `parts` as the twin's: the same bursts of its copies."""
    return [replace(p, copy=mapping[p.copy]) for p in parts]


@dataclass
class Lead:
    """A share's loop whose slots npu-prefetch moved to function level:
    where its copies went (the op each point's clones precede, with their
    parts) and which slots and rests."""

    candidate: Candidate
    share: Share
    placed: int
    rests: list[Part]
    points: list[tuple[ir.Operation, list[Part]]] = field(default_factory=list)


class TwinShares:
    """`_twin`: a later share's loop of the same op into the lead's buffers
    (`self._emit_share`, `self._guard`, `self.facts`, `self._say`: the
    pass's)."""

    def _twin_map(self, lead: Lead, c: Candidate, share: Share) -> dict | None:
        """Lead copy -> twin copy, when `c` is a twin of `lead`: a loop of
        the same kind (slots in the body, or a resident strip's parts) on
        other cores with as many slots, each of the same type, with copies
        of the same bursts in the same order."""
        if (c.resident != lead.candidate.resident or share.cores & lead.share.cores
                or len(c.slots) != len(lead.candidate.slots)):
            return None
        mapping = {}
        for (la, lcopies), (ta, tcopies) in zip(lead.candidate.slots, c.slots):
            if la.results[0].type != ta.results[0].type or len(lcopies) != len(tcopies):
                return None
            for lc, tc in zip(lcopies, tcopies):
                if any(int_attr(lc, k) != int_attr(tc, k) for k in _COPY_ATTRS):
                    return None
                mapping[lc] = tc
        return mapping

    def _twin(self, lead: Lead, c: Candidate, share: Share, collector,
              tops: list[ir.Operation]) -> bool:
        """Prefetch `c` (the loop of `share`) into `lead`'s buffers at its
        points (the module docstring); False (nothing changed) if it is no
        twin."""
        mapping = self._twin_map(lead, c, share)
        if mapping is None:
            return False
        slots = c.slots[:lead.placed]
        for (la, _), (ta, _) in zip(lead.candidate.slots, slots):
            ta.results[0].replace_all_uses_with(la.results[0])
            if ta in tops:  # a resident strip's part at function level
                at = tops.index(ta)
                collector.changed(at, [])
                del tops[at]
            ta.erase()
        # (the body listed by `_candidate` held the erased allocs)
        c.body = c.body_set = None
        slots = [(la, copies) for (la, _), (_, copies) in zip(lead.candidate.slots, slots)]
        c.slots = slots + c.slots[lead.placed:]
        for issue, parts in lead.points:
            made = self._emit_share(c, [], _mapped(parts, mapping), issue, share)
            at = tops.index(issue)
            collector.inserted(at, made)
            tops[at:at] = made
        rests = _mapped(lead.rests, mapping)
        if c.resident:
            self._guard_resident(c, slots, rests)
        else:
            self._guard(c, slots, rests)
        self.facts.forget(c.loop)
        collector.changed(tops.index(share.guard))
        self._say(c.loop, f"npu-prefetch: {lead.placed} weight slot(s) loaded into those of "
                          f"the same op's loop on cores {min(lead.share.cores)}-"
                          f"{max(lead.share.cores)} (no core runs both), where it loads them")
        return True
