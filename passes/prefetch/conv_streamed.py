"""A streamed conv's first weight tile for `npu-prefetch`'s conv form
(`conv.py`): its copies load during the previous op's idle MTE2 tail.

Why: a conv whose weights do not fit L1 whole streams them per super tile
of Cout blocks through two L1 buffers in turn (`lower_conv/weights.py`),
the first tile right after the first band's map copies. On MTE2 both queue
behind the map's wait for the previous op's result, while that op's last
super tile leaves MTE2 idle: its cube work on the last tile and its drain
and store. ResNet-50's layer4 on one core: a 3x3 512->512 7's map waited
3.3k cycles for the 1x1 2048->512's last store with nothing on MTE2.

How: the first tile's buffer carries `npu.streamed_weights`; the first
tile's copies are the copies into it at rising offsets (a later tile reuses
the buffer from its start, after the cube has read it), past the cube's
reads of its earlier pieces: a tile in pieces (1, 1, 2, 4 ... chunks, the
cube starting on the first) loads whole in the gap, where only its first
piece did (ResNet-50's layer3.0 3x3 256->256 stride 2: 8 KB of its 295 KB
first tile; one core 1,760,753 -> 1,747,758 cycles). They become the
candidate's pieces, and `ConvDriver._prefetch_conv` places them as it does
resident pieces: after the previous op's last load while the gaps hold
them and the whole buffer fits L1 beside the bytes live there, the buffer
moved before the first clone (the conv's first map may then go over the
previous conv's last tile: npu-insert-sync coalesces the many flag pairs
that gives where ids run out). Only on one core with the buffer and the
copies at function level (straight code; a conv of many bands loops).
"""

from __future__ import annotations

from mlir import ir

from npu.ir import VIEW_OPS, memref_layout, view_closure, view_root

from .parts import ConvCandidate

COPY = "cce.copy_gm_to_l1"


def _users(value: ir.Value) -> set[ir.Operation]:
    """The ops other than views that use `value` or a view of it."""
    return {use.owner.operation for view in view_closure(value)
            for result in view.results for use in result.uses
            if use.owner.operation.name not in VIEW_OPS}


def first_tile(alloc: ir.Operation, tops: list[ir.Operation], own: int,
               constants: set) -> tuple[list[ir.Operation], str]:
    """The copies of the first tile into streamed buffer `alloc` (at
    top-level index `own`) in program order, or none and why."""
    users = _users(alloc.results[0])
    func = alloc.parent
    if any(u.parent != func for u in users):
        return [], "its weight tiles load in a loop"
    copies: list[ir.Operation] = []
    last = -1  # the last copy's first element in the buffer
    for op in tops[own + 1:]:
        if op not in users:
            continue
        if op.name != COPY:
            continue  # a read of the first tile's earlier pieces (its L1 -> L0B loads)
        if view_root(op.operands[1]) != alloc.results[0]:
            break
        start = memref_layout(op.operands[1])[1]
        if start is None or start <= last:
            break  # a later tile, over the first tile's bytes
        if view_root(op.operands[0]) not in constants:
            return [], "the streamed weights are not copies of a host constant"
        copies.append(op)
        last = start
        users.discard(op)
        if not users:
            break
    if not copies:
        return [], "nothing copies into the first weight tile before it is read"
    return copies, ""


class StreamedConv:
    """Mixin of `ConvDriver`: the candidate of a streamed conv's first tile."""

    def _streamed_candidate(self, alloc: ir.Operation, tops: list[ir.Operation], own: int,
                            constants: set) -> tuple[ConvCandidate | None, str]:
        copies, why = first_tile(alloc, tops, own, constants)
        if not copies:
            return None, why
        return ConvCandidate(alloc, [[c] for c in copies], []), ""
