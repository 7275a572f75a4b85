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

On more cores than the chip's GM bus serves at their movers' rate, all
those slots in one tail can outrun the bus: a later share whose bytes would
take it past the tail's idle time loads its first slot's bursts before the
chip barrier ahead of the previous op instead (`_early_first`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from mlir import ir

from npu.ir import block_dim, int_attr

from .facts import outruns_bus
from .guarded import Share
from .parts import L1_ROOMS, Candidate, Part

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
    # the estimated MTE2 idle cycles of the latest gap that holds its parts
    # (the previous op's tail), and those its parts leave in the gap before
    # the chip barrier that precedes that op (`IdleGaps._earlier_tail`)
    tail: float = 0.0
    room: float = 0.0
    points: list[tuple[ir.Operation, list[Part]]] = field(default_factory=list)
    # bytes every share's copies in that tail move over the chip's bus so far
    bus: float = 0.0


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
        points = [(issue, _mapped(parts, mapping)) for issue, parts in lead.points]
        early = self._early_first(lead, share, collector, tops)
        if early is not None:  # the first slot's bursts in the tail go before its barrier
            first = set(slots[0][1])
            tail = max(p.gap for _, parts in lead.points for p in parts)
            ahead = [p for _, parts in points for p in parts if p.gap == tail and p.copy in first]
            points = [(early, ahead)] + [
                (i, rest) for i, parts in points if (rest := [p for p in parts if p not in ahead])]
        for issue, parts in points:
            made = self._emit_share(c, [], parts, issue, share)
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
                          f"{max(lead.share.cores)} (no core runs both), where it loads them"
                          + (", the first slot's bursts in its tail before the chip barrier "
                             "before that" if early is not None else ""))
        return True

    def _early_first(self, lead: Lead, share: Share, collector,
                     tops: list[ir.Operation]) -> ir.Operation | None:
        """Where this twin's first slot loads the bursts the lead loads in
        its tail (the latest gap, the previous op's): before the chip
        barrier that precedes that op, in the phase before; or None (with
        the lead's). Every share's slots load in that tail at once, and
        the lead's gap model prices one core's mover there; on more cores
        than the chip's GM bus serves at their movers' rate, the bus carries
        every share's bytes. A share's first slot goes a phase earlier when
        the bus's time for the shares' tail bytes so far and this share's
        passes the tail's idle cycles by more than the slot's bytes then
        spill past the idle cycles the lead leaves before that barrier (the
        core's next phase starts that much later), and L1 has room for the
        slot's buffer from there on. BERT seq 512 on 32 cores: ffn_out's
        four runs' strips (295 KB a core, 9.4 MB in all) in ffn_in's tail
        (4,924 idle cycles estimated, 7.9k of the bus's) reached cores
        24-31 ~2k cycles into ffn_out's phase; cores 16-31's first parts
        (147 KB a core) now load in ln1's tail: 85,904 -> 84,304 cycles."""
        t = self.target
        rate = t.path("gm_to_l1").bytes_per_cycle
        func = share.guard.parent.operation
        tail = max((p.gap for _, parts in lead.points for p in parts), default=None)
        if tail is None:
            return None
        at_tail = [p for _, parts in lead.points for p in parts if p.gap == tail]
        first = set(lead.candidate.slots[0][1])
        per_core = sum(_bytes(p, t) for p in at_tail)
        ahead = sum(_bytes(p, t) for p in at_tail if p.copy in first)
        chip = t.gm_chip_bytes_per_cycle
        if not lead.bus:
            lead.bus = len(lead.share.cores) * per_core
        mine = len(share.cores) * per_core
        over = (lead.bus + mine) / chip - lead.tail
        gain = min(over, len(share.cores) * ahead / chip)
        spill = max(0.0, ahead / rate - lead.room)
        lead.bus += mine
        if not outruns_bus(block_dim(func), t) or lead.placed < 2 or not ahead or gain <= spill:
            return None
        issue = next((k for k in range(tops.index(lead.points[0][0]) - 1, -1, -1)
                      if tops[k].name == "cce.sync_all"), None)
        alloc = lead.candidate.slots[0][0]
        size = collector.space_size(alloc)[1]
        if issue is None or alloc not in tops or size is None or any(
                need + size > t.capacity("l1") for need in collector.space_bounds_over(
                    func, "l1", issue, tops.index(lead.points[0][0]), L1_ROOMS.index(self.l1_room))):
            return None
        at = tops.index(alloc)
        if at > issue:  # a slot's alloc at the lead's point: live from the barrier on
            collector.changed(at, [])
            del tops[at]
            alloc.move_before(tops[issue])
            collector.inserted(issue, [alloc])
            tops[issue:issue] = [alloc]
            issue += 1
        lead.bus -= len(share.cores) * ahead
        if spill > 0:  # the barrier's next phase opens with these bursts on the bus
            self._spilled.add(tops[issue])
        return tops[issue]


def _bytes(part: Part, target) -> int:
    """The bytes of a part's bursts."""
    return (part.end - part.first) * int_attr(part.copy, "burst_len") * target.vector_block_bytes
