"""Lifetimes of a function's on-chip buffers (what `npu-plan-memory` places
and `npu-double-buffer` sizes its second copies against).

Program positions number every op in pre-order; an alloc lives from the
first to the last position of the ops (at its own nesting level) that use
it, and an alloc in a loop body lives for the whole body. Each top-level op
is analysed on its own (`npu.passes.buffer_pieces`); the `Buffer`s and how
they may share bytes are `npu.passes.buffer_placement`'s.

`BufferCollector` computes the positions and the accesses of each top-level
op of the function body once and keeps them until told that the op changed
(`track`, `changed`): `npu-double-buffer` asks again after every loop it
unrolls, and re-walking the whole function each time made its compile time
quadratic.
The buffers it returns are exactly those of a fresh walk (positions are a
running count over the top-level ops, so cached pieces only move by an
offset).
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu import memory_planning as planner
from npu.analysis.access import AccessAnalysis
from npu.passes.base import PassError
from npu.passes.buffer_pieces import Piece, analyse_piece, space_size
from npu.passes.buffer_placement import Buffer, place
from npu.target import ON_CHIP_BUFFERS, Target


_NO_BUFFERS = {space: (0, 0, 0) for space in ON_CHIP_BUFFERS}


class _Table:
    """What `space_bounds` reads of each top-level op's piece, as arrays
    (row k: the k-th op), so that a query after one op changed costs no
    Python work per op or per use: the function-level allocs are numbered
    (`ids`, by their result value, whose hash is its address: an op's hash
    covers its attributes) and each row keeps the numbers of the allocs it
    uses. Reading `first`/`last` use off `Piece.outer_uses` in a dict at
    every query was 1.3M dict updates on BERT-12 at 32 cores (about 1 CPU s
    of npu-double-buffer and npu-prefetch)."""

    def __init__(self, n: int):
        self.inner = np.zeros((n, len(ON_CHIP_BUFFERS), 3), np.int64)  # (low, high, total) per space
        self.alloc_space = np.full(n, -1, np.int64)  # the op is an on-chip alloc of this space
        self.alloc_id = np.full(n, -1, np.int64)     # ... and this is its number in `ids`
        self.alloc_size = np.zeros(n, np.int64)      # ... of these bytes
        # the allocs of the function body it uses (numbers in `ids`), or None
        self.outer_ids: list[np.ndarray | None] = [None] * n
        self.ids: dict[ir.Value, int] = {}
        # (first, last) user row of each numbered alloc, which every space's
        # `function_level` reads: gathered once per change of the table, not
        # per space (npu-double-buffer asks all four after each unroll).
        self._spans: tuple[np.ndarray, np.ndarray] | None = None
        # Every use as (row, alloc number), kept across changes: correct for
        # the rows not in `_dirty` (those are read again from `outer_ids`).
        # Gathering all rows' `outer_ids` after each change was 1 ms a time,
        # 0.2 CPU s of BERT-12's at 32 cores.
        self._use_rows = np.zeros(0, np.int64)
        self._use_ids = np.zeros(0, np.int64)
        self._dirty: set[int] = set(range(n))
        self._moved: np.ndarray | None = None  # per row, the row it was before `splice`s

    def settle(self) -> None:
        """Move the rows of the arrays as the `splice`s since the last time said."""
        if self._moved is not None:
            for name in ("inner", "alloc_space", "alloc_id", "alloc_size"):
                setattr(self, name, getattr(self, name)[self._moved])
            self._moved = None

    def splice(self, index: int, count: int) -> None:
        """Row `index` becomes `count` rows (to be filled)."""
        # The arrays follow at `settle` (before the next fill or read):
        # copying them at each splice (2 MB of `inner`) was 0.1 CPU s of
        # BERT-12's at 32 cores, where npu-prefetch splices 3 times a query.
        rows = self._moved if self._moved is not None else np.arange(len(self.alloc_space))
        self._moved = np.concatenate([rows[:index], rows[index:index + 1].repeat(count),
                                      rows[index + 1:]])
        self.outer_ids[index:index + 1] = self.outer_ids[index:index + 1] * count
        self._spans = None
        keep = self._use_rows != index
        self._use_rows, self._use_ids = self._use_rows[keep], self._use_ids[keep]
        self._use_rows[self._use_rows > index] += count - 1
        self._dirty = {k if k < index else k + count - 1 for k in self._dirty if k != index}
        self._dirty.update(range(index, index + count))

    def _id(self, alloc: ir.Operation) -> int:
        return self.ids.setdefault(alloc.results[0], len(self.ids))

    def fill(self, k: int, piece: Piece) -> None:
        self.settle()
        self._spans = None
        if not piece.buffers:  # most top-level ops (views, scalars, single instructions)
            piece.bounds.update(_NO_BUFFERS)
            self.inner[k] = 0
        for column, space in enumerate(ON_CHIP_BUFFERS if piece.buffers else ()):
            bounds = piece.bounds.get(space)
            if bounds is None:
                mine = [b for b in piece.buffers if b.space == space]
                bounds = piece.bounds[space] = (*planner.lifetime_bounds(mine),
                                                sum(b.size for b in mine))
            self.inner[k, column] = bounds
        alloc = piece.alloc
        self.alloc_space[k] = ON_CHIP_BUFFERS.index(alloc.space) if alloc else -1
        self.alloc_id[k] = self._id(alloc.op) if alloc else -1
        self.alloc_size[k] = alloc.size if alloc else 0
        self.outer_ids[k] = (np.array([self._id(a) for a in piece.outer_uses], np.int64)
                             if piece.outer_uses else None)
        self._dirty.add(k)

    def function_level(self, column: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(first, last, bytes) per function-level alloc of space `column`,
        in row order: the top-level ops it lives over, from its first to its
        last user (its own op when unused)."""
        self.settle()
        rows = np.flatnonzero(self.alloc_space == column)
        ids = self.alloc_id[rows]
        starts, ends = rows.copy(), rows.copy()
        if len(rows):
            spans = self._user_spans()
            if spans is not None:
                first, last = spans
                mine_first, mine_last = first[ids], last[ids]
                seen = mine_last >= 0
                starts[seen] = mine_first[seen]
                ends[seen] = mine_last[seen]
        return starts, ends, self.alloc_size[rows]

    def _user_spans(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(first, last) row using each numbered alloc (len(rows), -1 when
        none does), or None when no row uses one."""
        if self._spans is None:
            self._gather_uses()
            uses, at = self._use_ids, self._use_rows
            if not len(uses):
                return None
            first = np.full(len(self.ids), len(self.outer_ids), np.int64)
            last = np.full(len(self.ids), -1, np.int64)
            np.minimum.at(first, uses, at)
            np.maximum.at(last, uses, at)
            self._spans = first, last
        return self._spans

    def _gather_uses(self) -> None:
        """`_use_rows`/`_use_ids` of every row again, reading only the rows
        changed since the last time (in any order: `_user_spans` takes the
        least and the greatest row per alloc)."""
        if not self._dirty:
            return
        dirty = sorted(self._dirty)
        self._dirty.clear()
        stale = np.zeros(len(self.outer_ids), bool)
        stale[dirty] = True
        keep = ~stale[self._use_rows]
        used = [(k, self.outer_ids[k]) for k in dirty if self.outer_ids[k] is not None]
        rows = [self._use_rows[keep]] + [np.full(len(ids), k, np.int64) for k, ids in used]
        self._use_rows = np.concatenate(rows)
        self._use_ids = np.concatenate([self._use_ids[keep]] + [ids for _, ids in used])


class BufferCollector:
    def __init__(self, target: Target):
        self.target = target
        self._pieces: dict[ir.Operation, Piece] = {}
        # With `track`: the function body's ops and their pieces (None: to
        # redo, the indices in `_stale`), and per piece a row of `_Table`.
        self._tops: list[ir.Operation] | None = None
        self._top_pieces: list[Piece | None] = []
        # per top-level op to redo: an analysis to start its piece from (see
        # `changed`), or None
        self._seeds: list[AccessAnalysis | None] = []
        self._stale: set[int] = set()
        self._table: _Table | None = None
        self._bounds: dict[str, tuple[int, int]] = {}  # space -> space_bounds, while unchanged
        self.types = AccessAnalysis(target)  # whose memref type facts every piece's analysis shares

    def track(self, func_op: ir.Operation) -> list[ir.Operation]:
        """Follow the body of `func_op` through `changed` from now on instead
        of listing it again at every query (that alone was quadratic);
        returns its ops, whose indices `changed` takes."""
        self._tops = [child.operation for child in func_op.regions[0].blocks[0].operations]
        self._top_pieces = [None] * len(self._tops)
        self._seeds = [None] * len(self._tops)
        self._stale = set(range(len(self._tops)))
        self._table = _Table(len(self._tops))
        self._bounds.clear()
        return list(self._tops)

    def analysis_at(self, func_op: ir.Operation, index: int) -> AccessAnalysis:
        """The access analysis of tracked top-level op `index`, up to date."""
        return self._top_level(func_op)[index].analysis

    def changed(self, index: int, replacement: list[ir.Operation] | None = None,
                seeds: list[AccessAnalysis | None] | None = None,
                same_accesses: bool = False) -> None:
        """Tracked top-level op `index` changed inside, or was replaced by the
        ops `replacement` (only ops after it may have moved since `track`).
        `seeds` (one per replacement op, or None): an analysis already
        holding accesses of that op's ops (`npu.analysis.unrolled.derive_copies`),
        which its piece starts from. `same_accesses`: the op changed inside
        without changing any access of the ops it had (ops were only
        wrapped, moved out or added; none erased, so no op or value the
        analysis holds can have been replaced by another at its address),
        so its piece starts from its current analysis."""
        if same_accesses and replacement is None and self._top_pieces[index] is not None:
            self._seeds[index] = self._top_pieces[index].analysis
        count = 1
        if replacement is not None:
            count = len(replacement)
            self._tops[index:index + 1] = replacement
            self._top_pieces[index:index + 1] = [None] * count
            self._seeds[index:index + 1] = seeds or [None] * count
            self._stale = {k if k < index else k + count - 1 for k in self._stale if k != index}
            self._table.splice(index, count)
        else:
            self._top_pieces[index] = None
        self._stale.update(range(index, index + count))
        self._bounds.clear()

    def erasing(self, index: int, ops: list[ir.Operation]) -> None:
        """`ops`, inside tracked top-level op `index`, are about to be erased
        (and nothing else of it): its analysis forgets them, so that
        `changed(index, same_accesses=True)` may keep it afterwards. Call
        before erasing (an erased op is no key to look up)."""
        piece = self._top_pieces[index]
        for analysis in (piece.analysis if piece is not None else None, self._seeds[index]):
            if analysis is not None:
                analysis.forget(ops)

    def inserted(self, index: int, ops: list[ir.Operation]) -> None:
        """`ops` went in before tracked top-level op `index`, which did not
        change: only they are analysed (positions are relative to each op)."""
        kept = self._top_pieces[index]
        fresh = index not in self._stale
        # A stale op keeps the analysis `changed(same_accesses=True)` gave
        # it: npu-prefetch wraps a loop, then puts its allocs before it, and
        # the op's 12k ops of BERT-12 (32 cores) were analysed afresh (0.13 CPU s).
        self.changed(index, ops + [self._tops[index]], [None] * len(ops) + [self._seeds[index]])
        if kept is not None and fresh:  # its table row was repeated with the splice
            self._top_pieces[index + len(ops)] = kept
            self._stale.discard(index + len(ops))

    def _pieces_of(self, func_op: ir.Operation) -> list[tuple[int, Piece]]:
        """(first position, piece) of every top-level op of the function."""
        pieces: list[tuple[int, Piece]] = []
        offset = 1  # the function itself is position 0
        for piece in self._top_level(func_op):
            pieces.append((offset, piece))
            offset += piece.length
        return pieces

    def _top_level(self, func_op: ir.Operation) -> list[Piece]:
        """The piece of every top-level op of the function, in order."""
        if self._tops is not None:
            tops = self._top_pieces
            fresh = sorted(self._stale)
            self._stale.clear()
            for k in fresh:
                tops[k] = analyse_piece(self._tops[k], self.target, self._seeds[k], self.types)
                self._seeds[k] = None
                self._table.fill(k, tops[k])
            if all(tops[k].dynamic is None for k in fresh):
                return tops  # the others were checked when they were made
        else:
            tops = []
            for region in func_op.operation.regions:
                for block in region.blocks:
                    for child in block.operations:
                        op = child.operation
                        piece = self._pieces.get(op)
                        if piece is None:
                            piece = self._pieces[op] = analyse_piece(op, self.target, types=self.types)
                        tops.append(piece)
        # Accesses were analysed piece by piece; shapes are checked after all
        # of them, as in one walk over the function.
        for piece in tops:
            if piece.dynamic is not None:
                raise PassError("npu-plan-memory needs static shapes for on-chip buffers",
                                piece.dynamic)
        return tops

    @staticmethod
    def _function_level(pieces: list[tuple[int, Piece]]) -> dict[ir.Operation, Buffer]:
        """The function body's own on-chip allocs: each lives from the first
        to the last top-level op using it (only where it is when unused)."""
        lifetimes: dict[ir.Operation, list] = {}
        for base, piece in pieces:
            for alloc, (first, first_pipe, last, last_pipe) in piece.outer_uses.items():
                span = lifetimes.get(alloc)
                if span is None:
                    lifetimes[alloc] = [base, base + piece.length - 1, first_pipe, last_pipe]
                else:
                    span[1] = base + piece.length - 1
                    span[3] = last_pipe
        out = {}
        for base, piece in pieces:
            if piece.alloc is not None:
                b = piece.alloc
                start, end, first_pipe, last_pipe = lifetimes.get(b.op, (base, base, None, None))
                out[b.op] = Buffer(b.op, b.space, b.size, start, end, first_pipe, last_pipe)
        return out

    def space_bounds(self, func_op: ir.Operation, space: str) -> tuple[int, int]:
        """(lower, upper) bound of the bytes a plan of the function's `space`
        buffers with plain lifetime reuse needs, as `planner.lifetime_bounds`
        of `collect` gives them, from bounds of each top-level op's own
        buffers (cached with its piece) and the function-level allocs: those
        live over whole top-level ops, so they add to what is live inside
        each one they span and join its buffers into one component. This
        keeps `npu-double-buffer` linear instead of planning per loop."""
        return self._space_profile(func_op, space)[:2]

    def space_bounds_at(self, func_op: ir.Operation, space: str, index: int) -> tuple[int, int]:
        """`space_bounds` where top-level op `index` runs: what its own
        buffers and the function-level allocs live over it need (the
        function's bounds are the largest of these). A buffer added inside
        that op raises only these: `npu-double-buffer` asks here, so that
        one op needing most of a buffer does not keep every other loop of
        the function single-buffered."""
        _, _, lows, highs, _ = self._space_profile(func_op, space)
        return int(lows[index]), int(highs[index])

    def space_bounds_over(self, func_op: ir.Operation, space: str, first: int, end: int,
                          bound: int) -> list[int]:
        """`space_bounds_at(...)[bound]` of each top-level op in [first, end),
        read off the profile at once: npu-prefetch asks for every op from a
        gap to its loop, 29k single queries on BERT-12 at 32 cores."""
        if end <= first:
            return []
        values = self._space_profile(func_op, space)[2 + bound]
        # (a negative index counts from the end, as in `space_bounds_at`)
        head = [int(values[k]) for k in range(first, min(0, end))]
        return head + values[max(first, 0):end].tolist() if end > 0 else head

    def tied_span(self, func_op: ir.Operation, space: str, index: int) -> tuple[int, int] | None:
        """The top-level ops [first, last] that function-level allocs of
        `space` live over together with op `index` (their bound at each is
        the whole group's), or None when none lives over it."""
        spans = self._space_profile(func_op, space)[4]
        return next(((a, b) for a, b, _ in spans if a <= index <= b), None)

    def planned_at(self, func_op: ir.Operation, space: str, index: int) -> int:
        """Bytes of `space` a plan with plain lifetime reuse takes where
        top-level op `index` runs: its own buffers placed, plus the
        function-level allocs live over it. For `npu-double-buffer` when
        `space_bounds_at` leaves the answer open; planning the whole function
        instead would charge this op with another op's peak."""
        piece = self._top_level(func_op)[index]
        low, _ = self.space_bounds_at(func_op, space, index)
        mine = [b for b in piece.buffers if b.space == space]
        own_low = piece.bounds[space][0] if space in piece.bounds else planner.lifetime_bounds(mine)[0]
        return low - own_low + (place(mine, 0, "auto").peak if mine else 0)

    def vector_only_at(self, func_op: ir.Operation, index: int) -> set[ir.Operation]:
        """The loop-body allocs inside top-level op `index` that only V touches."""
        return {b.op for b in self._top_level(func_op)[index].buffers if b.vector_only}

    def _space_profile(self, func_op: ir.Operation, space: str
                       ) -> tuple[int, int, np.ndarray, np.ndarray, list]:
        """(lower, upper) bounds of the function and of each top-level op,
        and the merged spans of the function-level lifetimes."""
        if self._tops is not None and space in self._bounds:
            return self._bounds[space]
        # In top-level op indices, not positions: a function-level alloc is
        # live over the top-level ops from its first to its last user (its
        # own op when unused), which is what the positions of `collect` say.
        tops = self._top_level(func_op)
        table = self._table
        if self._tops is None:
            table = _Table(len(tops))
            for k, piece in enumerate(tops):
                table.fill(k, piece)
        column = ON_CHIP_BUFFERS.index(space)
        starts, ends, sizes = table.function_level(column)
        # Merged spans of the function-level lifetimes: [first, last, bytes in that component].
        spans: list[list[int]] = []
        order = np.argsort(starts, kind="stable")
        for start, end, size in zip(starts[order].tolist(), ends[order].tolist(),
                                    sizes[order].tolist()):
            if spans and start <= spans[-1][1]:
                spans[-1][1] = max(spans[-1][1], end)
                spans[-1][2] += size
            else:
                spans.append([start, end, size])
        n = len(tops)
        inner = table.inner[:, column]  # per top-level op: its own buffers' (low, high, total)
        delta = np.zeros(n + 1, np.int64)  # live bytes of function-level allocs, as differences
        covered = np.zeros(n + 1, np.int64)  # inside a span, as differences
        np.add.at(delta, starts, sizes)
        np.add.at(delta, ends + 1, -sizes)
        for start, end, _ in spans:
            covered[start] += 1
            covered[end + 1] -= 1
        lows = inner[:, 0] + np.cumsum(delta[:n])  # per top-level op, with the allocs live over it
        low = max(0, int(lows.max(initial=0)))
        high = int(inner[np.cumsum(covered[:n]) == 0, 1].max(initial=0))
        totals = np.concatenate(([0], np.cumsum(inner[:, 2])))
        highs = inner[:, 1].copy()  # per top-level op: its own, or its component's total
        for span in spans:  # a component: its allocs and every top-level op it spans
            span[2] += int(totals[span[1] + 1] - totals[span[0]])
            highs[span[0]:span[1] + 1] = span[2]
        profile = low, max([high] + [span[2] for span in spans]), lows, highs, spans
        if self._tops is not None:
            self._bounds[space] = profile
        return profile

    def space_size(self, op: ir.Operation) -> tuple[str | None, int | None]:
        """(on-chip space or None, bytes rounded to its granule or None if dynamic)."""
        return space_size(op, self.target)

    def analyses(self, func_op: ir.Operation) -> list[AccessAnalysis]:
        """The access analyses of the function's ops (for `AccessAnalysis.adopt`)."""
        return [piece.analysis for piece in self._top_level(func_op)]

    def top_spans(self, func_op: ir.Operation) -> list[tuple[int, int]]:
        """[first, last] position of each top-level op of the function."""
        return [(base, base + piece.length - 1) for base, piece in self._pieces_of(func_op)]

    def collect(self, func_op: ir.Operation) -> list[Buffer]:
        """On-chip allocs of a function with their lifetimes and first/last pipes."""
        pieces = self._pieces_of(func_op)
        outer = self._function_level(pieces)
        buffers = []
        for base, piece in pieces:
            if piece.alloc is not None:
                buffers.append(outer[piece.alloc.op])
            buffers += [Buffer(b.op, b.space, b.size, b.start + base, b.end + base, b.first_pipe,
                               b.last_pipe, vector_only=b.vector_only,
                               release=b.release + base if b.release >= 0 else -1)
                        for b in piece.buffers]
        return buffers

def collector_for(collectors: dict[ir.Operation, BufferCollector], func_op: ir.Operation
                  ) -> BufferCollector | None:
    """The collector of `func_op` in `collectors`, found by comparing the ops:
    an op's hash covers its attributes, so `npu-plan-memory` giving the
    function its plan changes it, and a dict lookup would miss."""
    return next((c for f, c in collectors.items() if f == func_op), None)


def collect_buffers(func_op: ir.Operation, target: Target) -> list[Buffer]:
    """On-chip allocs of a function with their lifetimes and first/last pipes."""
    return BufferCollector(target).collect(func_op)
