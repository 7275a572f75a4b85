"""One top-level op of a function body, analysed on its own: the piece that
`BufferCollector` (`npu.passes.buffer_lifetimes`) caches per op and joins
into the function's buffer lifetimes.

Program positions number every op in pre-order; an alloc lives from the
first to the last position of the ops (at its own nesting level) that use
it, and an alloc in a loop body lives for the whole body (unless only V
touches it: `vector_only`). Positions here are relative to the op's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir

from npu.analysis.access import SYNC_OPS, AccessAnalysis, AccessError
from npu.ir import LEAF_OP_NAMES, element_bytes, element_type_name, memory_space
from npu.passes.base import PassError
from npu.passes.buffer_placement import Buffer
from npu.target import ON_CHIP_BUFFERS, Target


@dataclass(eq=False)  # compared by identity: `None in pieces` stays a C-level scan
class Piece:
    """One top-level op of the function body, analysed on its own.

    `buffers` are the on-chip allocs inside it (pre-order), their positions
    relative to the op's own. A use of an alloc of the function body (which
    lives from the first to the last top-level op using it) is summarised in
    `outer_uses`: alloc -> (first use, its pipe, last use, its pipe), the
    positions relative too.
    """

    length: int
    buffers: list[Buffer]
    outer_uses: dict[ir.Operation, tuple[int, str, int, str]]
    alloc: Buffer | None = None  # the op itself when it is an on-chip alloc
    dynamic: ir.Operation | None = None  # first on-chip alloc with a dynamic shape
    # space -> (lower bound, upper bound, total bytes) of `buffers` in it
    bounds: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    analysis: AccessAnalysis | None = None  # of the op's accesses


def analyse_piece(top: ir.Operation, target: Target, analysis: AccessAnalysis | None = None,
                  types: AccessAnalysis | None = None) -> Piece:
    """The `Piece` of top-level op `top`: its ops numbered in pre-order, its
    accesses analysed (into `analysis`, when given one already holding some,
    else a new one sharing the type facts of `types`), and the lifetimes of
    its on-chip allocs relative to its own position."""
    spans: dict[ir.Operation, tuple[int, int]] = {}
    chains: list[tuple[ir.Operation, list[ir.Operation]]] = []
    # (alloc, parent, its outermost scf.if: a core guard)
    allocs: list[tuple[ir.Operation, ir.Operation | None, ir.Operation | None]] = []
    counter = [0]
    # Asking each op for its regions was a third of the numbering's cost.
    leaves = LEAF_OP_NAMES if not top.context.allow_unregistered_dialects else set()

    def number(op: ir.Operation, chain: list[ir.Operation]) -> None:
        start = counter[0]
        counter[0] += 1
        name = op.name
        if name.startswith("cce.") and name not in SYNC_OPS:  # is_access_op
            chains.append((op, chain))
        elif name == "memref.alloc":
            allocs.append((op, chain[-1] if chain else None,
                           next((o for o in chain if o.name == "scf.if"), None)))
        elif name in leaves:
            return  # no span asked of it: only uses, allocs and ancestors'
        if name in leaves:
            spans[op] = (start, start)
            return
        regions = op.regions
        if not len(regions):
            leaves.add(name)
        else:
            inner = chain + [op]  # shared by the children (not changed after)
            for region in regions:
                for block in region.blocks:
                    for child in block.operations:
                        number(child.operation, inner)
        spans[op] = (start, counter[0] - 1)  # closed: the last position inside

    number(top, [])
    # `number` refers to itself through its cell: a cycle that kept this
    # piece's numbering (its spans and chains) alive until the cycle
    # collector ran. Cleared, it goes by reference counting: on BERT-12 at
    # 32 cores the 3,830 pieces were most of the 132k objects the collector
    # found dead after npu-lower, and 0.3 CPU s of collections in it.
    number = None  # noqa: F841
    analysis = analysis or AccessAnalysis(target, types)
    uses: dict[ir.Operation, list[tuple[ir.Operation, list[ir.Operation], str]]] = {}
    alloc_of: dict[ir.Value, ir.Operation | None] = {}  # root -> its memref.alloc
    for op, chain in chains:
        try:
            acc = analysis.access(op)
        except AccessError as e:
            raise PassError(e.message, e.op) from None
        for alloc in analysis.allocs_used(op, alloc_of):
            uses.setdefault(alloc, []).append((op, chain, acc.pipe))
    piece = Piece(counter[0], [], {}, analysis=analysis)
    for alloc, parent, guard in allocs:
        space, size = space_size(alloc, target)
        if space is None:
            continue
        if size is None:
            piece.dynamic = piece.dynamic or alloc
            continue
        alloc_uses = uses.pop(alloc, [])
        if parent is None:  # the piece is this alloc of the function body
            piece.alloc = Buffer(alloc, space, size, 0, 0, None, None)
            continue
        if not alloc_uses:
            start = end = spans[alloc][0]
        else:
            start, end = None, None
            depth = None  # where `parent` is in a chain holding it (the same in all)
            for use, chain, _pipe in alloc_uses:
                # the use's ancestor (or itself) right below `parent`
                # (by identity: `number` made one object per op, shared by
                # the chains of everything inside it)
                if depth is not None and depth < len(chain) and chain[depth] is parent:
                    idx = depth
                else:
                    idx = depth = next((i for i, o in enumerate(chain) if o is parent), None)
                top_use = chain[idx + 1] if idx is not None and idx + 1 < len(chain) else use
                s, e = spans[top_use]
                start = s if start is None else min(start, s)
                end = e if end is None else max(end, e)
        only_v = parent.name == "scf.for" and vector_only(alloc_uses)
        if parent.name == "scf.for" and not only_v:
            body_start, body_end = spans[parent]
            start, end = body_start + 1, body_end
        ordered = sorted(alloc_uses, key=lambda u: spans[u[0]][0])
        piece.buffers.append(Buffer(alloc, space, size, start, end,
                                    ordered[0][2] if ordered else None,
                                    ordered[-1][2] if ordered else None, vector_only=only_v,
                                    release=spans[guard][1] if guard is not None else -1))
    # What is left are uses of allocs outside this op (the function body's).
    for alloc, alloc_uses in uses.items():
        ordered = sorted(alloc_uses, key=lambda u: spans[u[0]][0])
        piece.outer_uses[alloc] = (spans[ordered[0][0]][0], ordered[0][2],
                                   spans[ordered[-1][0]][0], ordered[-1][2])
    return piece


def space_size(op: ir.Operation, target: Target) -> tuple[str | None, int | None]:
    """(on-chip space or None, bytes rounded to its granule or None if dynamic)."""
    mtype = ir.MemRefType(op.results[0].type)
    space = memory_space(mtype)
    if space not in ON_CHIP_BUFFERS:
        return None, None
    if any(d < 0 for d in mtype.shape):
        return space, None
    size = element_bytes(element_type_name(mtype.element_type))
    for d in mtype.shape:
        size *= d
    g = target.granule(space)
    return space, max(g, -(-size // g) * g)


def vector_only(uses: list[tuple[ir.Operation, list[ir.Operation], str]]) -> bool:
    """A loop-body buffer only the vector pipe touches lives from its first to
    its last use instead of for the whole body: sharing bytes with another
    such buffer orders V after V, across iterations too, which V's in-order
    pipeline gives for free. Every other buffer of the body still lives for
    the whole body, so it never shares bytes with these."""
    return bool(uses) and all(pipe == "V" for _, _, pipe in uses)


__all__ = ["Piece", "analyse_piece", "space_size", "vector_only"]
