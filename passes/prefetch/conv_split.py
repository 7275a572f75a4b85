"""A conv's resident weights cut in two L1 buffers, for `npu-prefetch`'s conv
form (`conv.py`): the first pieces in one buffer that loads during the
previous op, the rest in the conv's own.

Why: the pieces move to function level with their buffer, so the whole
buffer had to fit in L1 beside the previous op. A GM-bound 1x1 conv after a
cube-bound 3x3 one got none: ResNet-50's 1x1 256->1024 at 14x14 (512 KB of
weights, 8.2k cycles of MTE2 against 12.5k of cube, and the residual's
reads) after the 3x3 256->256, whose tail leaves MTE2 idle for an estimated
12.7k cycles with 494 KB of L1 free: 18 KB short of the whole buffer.

How: on one core (the alloc at function level, no share guard) and when
every user of the buffer is a static 1-D subview (through subviews alone) (a copy's destination, an L1 -> L0B load's source), each
subview lying on one side of the cut: the old alloc keeps the bytes past the
cut (its type shrinks, its subviews' offsets move down) and a new alloc
before it holds the bytes before, which the caller moves up.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import memref

from npu.ir import VIEW_OPS, memref_shape, memref_type, top_level
from npu.passes.lower_conv.weights import RESIDENT_ATTR

from .parts import ConvCandidate, Part


def _range(view: ir.Operation) -> tuple[int, int] | None:
    """(first, end) elements of a static 1-D subview, else None."""
    if view.name != "memref.subview" or len(view.operands) != 1:
        return None
    offsets = list(ir.DenseI64ArrayAttr(view.attributes["static_offsets"]))
    strides = list(ir.DenseI64ArrayAttr(view.attributes["static_strides"]))
    shape = memref_shape(view.results[0])
    if len(offsets) != 1 or strides != [1] or offsets[0] < 0:
        return None
    return offsets[0], offsets[0] + shape[0]


def piece_end(pieces: list[list[ir.Operation]]) -> int | None:
    """The element past `pieces`' bytes in their buffer."""
    ends = []
    for piece in pieces:
        for copy in piece:
            owner = copy.operands[1].owner
            r = _range(owner.operation if hasattr(owner, "operation") else owner)
            if r is None:
                return None
            ends.append(r[1])
    return max(ends) if ends else None


def splittable(alloc: ir.Operation, cut: int) -> list[ir.Operation] | None:
    """The buffer's subviews when each lies on one side of element `cut`
    and feeds no further view; else None."""
    if len(memref_shape(alloc.results[0])) != 1 or alloc.operands:
        return None
    views = []
    for use in alloc.results[0].uses:
        view = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        r = _range(view)
        if r is None or (r[0] < cut < r[1]):
            return None
        if not _subviews_only(view):
            return None
        views.append(view)
    return views


def _direct_users(op: ir.Operation) -> list[ir.Operation]:
    """The ops using `op`'s result itself (views of it not followed)."""
    return [u.owner.operation if hasattr(u.owner, "operation") else u.owner
            for u in op.results[0].uses]


def _subviews_only(view: ir.Operation) -> bool:
    """Whether every view fed by `view` (transitively) is a subview."""
    for user in _direct_users(view):
        if user.name in VIEW_OPS and (user.name != "memref.subview" or not _subviews_only(user)):
            return False
    return True


def _shift(view: ir.Operation, base: int, touched: list[ir.Operation]) -> None:
    """Move the layout offset of `view`'s nested subviews down by `base`
    elements (their static offsets are relative to their source); collect
    the ops reading them."""
    for user in _direct_users(view):
        touched.append(user)
        if user.name != "memref.subview":
            continue
        t = memref_type(user.results[0])
        strides, offset = t.get_strides_and_offset()
        layout = ir.StridedLayoutAttr.get(offset - base, strides)
        with user.context, user.location:
            user.results[0].set_type(ir.MemRefType.get(memref_shape(t), t.element_type, layout,
                                                       t.memory_space))
        _shift(user, base, touched)


def split(old: ir.Operation, cut: int, views: list[ir.Operation]
          ) -> tuple[ir.Operation, list[ir.Operation]]:
    """Cut buffer `old` at element `cut` (`splittable` gave `views`): a new
    alloc before it holds [0, cut), it the rest. Returns the new alloc (the
    pieces' copies now write it) and the ops whose operands changed (the
    views and their users)."""
    t = memref_type(old.results[0])
    size = memref_shape(t)[0]
    with old.context, old.location, ir.InsertionPoint(old):
        head = memref.AllocOp(ir.MemRefType.get([cut], t.element_type, None, t.memory_space),
                              [], []).operation
        head.attributes[RESIDENT_ATTR] = ir.UnitAttr.get()
        old.results[0].set_type(ir.MemRefType.get([size - cut], t.element_type, None,
                                                  t.memory_space))
    touched = []
    for view in views:
        first, end = _range(view)
        base, source = (0, head.results[0]) if end <= cut else (cut, old.results[0])
        view.operands[0] = source
        with view.context, view.location:
            view.attributes["static_offsets"] = ir.DenseI64ArrayAttr.get([first - base])
            vt = memref_type(view.results[0])
            layout = ir.StridedLayoutAttr.get(first - base, [1])
            view.results[0].set_type(ir.MemRefType.get([end - first], vt.element_type, layout,
                                                       vt.memory_space))
            touched.append(view)
            _shift(view, base, touched)
    return head, touched


class ConvSplit:
    """Mixin of `ConvDriver` (its `_place_conv`): pieces in a buffer cut to fit."""

    def _split_conv(self, func: ir.Operation, c: ConvCandidate, tops: list[ir.Operation],
                    collector, gaps, earlier, need: dict[int, int], end: int
                    ) -> tuple[list[Part], ConvCandidate, int]:
        """When the whole buffer does not fit L1 beside the previous op: the
        most pieces whose own bytes fit and the gaps hold, in a buffer cut
        from the conv's (module docstring). Returns (parts, the candidate on
        that buffer, its bytes), or no parts and `c` as it was."""
        size = collector.space_size(c.alloc)[1]
        total = memref_shape(c.alloc.results[0])[0]
        for n in range(len(c.pieces) - 1, 0, -1):
            cut = piece_end(c.pieces[:n])
            views = splittable(c.alloc, cut) if cut is not None and cut < total else None
            if views is None:
                continue
            bytes_n = size * cut // total
            head = ConvCandidate(c.alloc, c.pieces[:n], c.guards)
            parts = self._place_conv(head, gaps, need, bytes_n, end)
            if len(parts) < n and earlier is not None:
                parts = self._place_conv(head, gaps[1:], need, bytes_n, end)
            if len({p.copy for p in parts}) < n:
                continue
            old = c.alloc
            alloc, touched = split(old, cut, views)
            index = {op: k for k, op in enumerate(tops)}
            for k in sorted({index[top_level(op)] for op in touched + [old]}):
                collector.changed(k)
            return parts, ConvCandidate(alloc, c.pieces, c.guards), bytes_n
        return [], c, size
