"""Lifetimes of a function's on-chip buffers (what `npu-plan-memory` places
and `npu-double-buffer` sizes its second copies against).

Program positions number every op in pre-order; an alloc lives from the
first to the last position of the ops (at its own nesting level) that use
it, and an alloc in a loop body lives for the whole body.

`BufferCollector` computes the positions and the accesses of each top-level
op of the function body once and keeps them until told that the op changed
(`forget`): `npu-double-buffer` re-plans after every loop it unrolls, and
re-walking the whole function each time made its compile time quadratic.
The buffers it returns are exactly those of a fresh walk (positions are a
running count over the top-level ops, so cached pieces only move by an
offset).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir

from npu.access_analysis import AccessAnalysis, AccessError, is_access_op
from npu.diagnostics import _location_parts
from npu.ir import defining_op, element_bytes, memory_space
from npu.passes.base import PassError
from npu.target import ON_CHIP_BUFFERS, Target


@dataclass
class Buffer:
    """One on-chip alloc and what the planner knows about it."""

    op: ir.Operation
    space: str
    size: int               # bytes, rounded up to the granule
    start: int              # lifetime [start, end] in program positions
    end: int
    first_pipe: str | None  # pipe of the first / last access in program order
    last_pipe: str | None
    offset: int = -1

    @property
    def name(self) -> str:
        filename, line, col = _location_parts(self.op.location)
        where = f"line {line}" if line else "unknown location"
        return f"{self.space} alloc of {self.size} B at {where}"

    def overlaps(self, other: "Buffer") -> bool:
        return self.start <= other.end and other.start <= self.end


@dataclass
class _Alloc:
    """An on-chip alloc found in a piece; `size` is None for a dynamic shape."""

    op: ir.Operation
    space: str
    size: int | None
    position: int           # pre-order position of the alloc, relative to its piece
    parent: ir.Operation | None


@dataclass
class _Piece:
    """Positions relative to the piece's first op, and what the op's accesses use.

    `allocs` are in pre-order; `uses` are (alloc, use, the use's chain of
    enclosing ops below the function, pipe) in pre-order of the uses.
    """

    length: int
    spans: dict[ir.Operation, tuple[int, int]]
    allocs: list[_Alloc]
    uses: list[tuple[ir.Operation, ir.Operation, list[ir.Operation], str]]


class BufferCollector:
    def __init__(self, target: Target):
        self.target = target
        self._pieces: dict[ir.Operation, _Piece] = {}

    def forget(self, op: ir.Operation) -> None:
        """The top-level op holding `op` is about to change (or to be erased)."""
        top = op.operation
        while top.parent is not None and top.parent.operation.name != "func.func":
            top = top.parent.operation
        self._pieces.pop(top, None)

    def collect(self, func_op: ir.Operation) -> list[Buffer]:
        """On-chip allocs of a function with their lifetimes and first/last pipes."""
        func_op = func_op.operation
        spans: dict[ir.Operation, tuple[int, int]] = {}
        allocs: list[_Alloc] = []
        uses: dict[ir.Operation, list[tuple[ir.Operation, list[ir.Operation], str]]] = {}
        offset = 1  # the function itself is position 0
        pieces = []
        for region in func_op.regions:
            for block in region.blocks:
                for child in block.operations:
                    op = child.operation
                    piece = self._pieces.get(op)
                    if piece is None:
                        piece = self._pieces[op] = self._piece(op)
                    pieces.append((offset, piece))
                    offset += piece.length
        spans[func_op] = (0, offset - 1)
        # Accesses are analysed piece by piece above; shapes are checked after
        # all of them, as a single walk over the function would.
        for base, piece in pieces:
            for op, (s, e) in piece.spans.items():
                spans[op] = (s + base, e + base)
            allocs += [(base, a) for a in piece.allocs]
            for alloc, use, chain, pipe in piece.uses:
                uses.setdefault(alloc, []).append((use, [func_op] + chain, pipe))
        for base, a in allocs:
            if a.size is None:
                raise PassError("npu-plan-memory needs static shapes for on-chip buffers", a.op)
        buffers = []
        for base, a in allocs:
            parent = a.parent if a.parent is not None else func_op
            alloc_uses = uses.get(a.op, [])
            if not alloc_uses:
                start = end = a.position + base
            else:
                start, end = None, None
                for use, chain, _pipe in alloc_uses:
                    full = chain + [use]
                    idx = next((i for i, o in enumerate(full) if o == parent), None)
                    top = full[idx + 1] if idx is not None and idx + 1 < len(full) else use
                    s, e = spans[top]
                    start = s if start is None else min(start, s)
                    end = e if end is None else max(end, e)
            if parent.name == "scf.for":
                body_start, body_end = spans[parent]
                start, end = body_start + 1, body_end
            ordered = sorted(alloc_uses, key=lambda u: spans[u[0]][0])
            buffers.append(Buffer(a.op, a.space, a.size, start, end,
                                  ordered[0][2] if ordered else None,
                                  ordered[-1][2] if ordered else None))
        return buffers

    def _piece(self, top: ir.Operation) -> _Piece:
        spans: dict[ir.Operation, tuple[int, int]] = {}
        chains: list[tuple[ir.Operation, list[ir.Operation]]] = []
        allocs: list[_Alloc] = []
        counter = [0]

        def number(op: ir.Operation, chain: list[ir.Operation]) -> None:
            start = counter[0]
            counter[0] += 1
            if is_access_op(op):
                chains.append((op, chain))
            elif op.name == "memref.alloc":
                allocs.append(self._alloc(op, start, chain[-1] if chain else None))
            for region in op.regions:
                for block in region.blocks:
                    for child in block.operations:
                        number(child.operation, chain + [op])
            spans[op] = (start, counter[0] - 1)  # closed: the last position inside

        number(top, [])
        analysis = AccessAnalysis(self.target)
        uses = []
        for op, chain in chains:
            try:
                acc = analysis.access(op)
            except AccessError as e:
                raise PassError(e.message, e.op) from None
            for operand in op.operands:
                if not isinstance(operand.type, ir.MemRefType):
                    continue
                root, _ = analysis.root_of(operand)
                alloc = defining_op(root)
                if alloc is not None and alloc.name == "memref.alloc":
                    uses.append((alloc, op, chain, acc.pipe))
        return _Piece(counter[0], spans, [a for a in allocs if a is not None], uses)

    def _alloc(self, op: ir.Operation, position: int, parent: ir.Operation | None) -> _Alloc | None:
        mtype = ir.MemRefType(op.results[0].type)
        space = memory_space(mtype)
        if space not in ON_CHIP_BUFFERS:
            return None
        size = None
        if all(d >= 0 for d in mtype.shape):
            size = element_bytes(str(mtype.element_type))
            for d in mtype.shape:
                size *= d
            g = self.target.granule(space)
            size = max(g, -(-size // g) * g)
        return _Alloc(op, space, size, position, parent)


def collect_buffers(func_op: ir.Operation, target: Target) -> list[Buffer]:
    """On-chip allocs of a function with their lifetimes and first/last pipes."""
    return BufferCollector(target).collect(func_op)
