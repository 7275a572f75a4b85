"""The accesses of a loop body's copies (`npu-double-buffer` unrolls a loop
body two or three times), derived from the original's accesses instead of
from the copies' IR again: the index arithmetic the access analysis keeps
exact is affine, so a copy's expressions are the original's with each
induction variable substituted."""

from __future__ import annotations

from typing import Sequence

from mlir import ir

from npu.analysis.access import AccessAnalysis
from npu.analysis.affine import Affine, IvKey, ident, normal_terms
from npu.analysis.byte_ranges import OpAccess, Range

LOOP_OPS = ("scf.for",)


def derive_copies(analysis: AccessAnalysis, source: AccessAnalysis,
                  pairs: Sequence[tuple[ir.Operation, ir.Operation]],
                  ivs: dict[ir.Value, tuple[ir.Value, int]]) -> None:
    """Give `analysis` the accesses of copies of ops `source` analysed, as
    `AccessAnalysis.access` would derive them from the copies.

    `pairs`: (original, copy) for every op copied, nested ones included;
    `ivs`: original induction variable -> (the copy's value standing for
    it, constant added), the copied loops' own found here. A root the copy
    made (an alloc in the copied body) becomes the copy's, else it stays."""
    shift: dict[IvKey, tuple[IvKey, int]] = {}
    for old, new in ivs.items():
        key = analysis.iv_key(new[0])
        if key is not None:
            shift[IvKey(ident(old))] = (key, new[1])
    copies: dict[ir.Operation, ir.Operation] = {}
    for old, new in pairs:
        copies[old] = new
        if old.name in LOOP_OPS:
            key = analysis.iv_key(new.regions[0].blocks[0].arguments[0])
            if key is not None:
                shift[IvKey(ident(old.regions[0].blocks[0].arguments[0]))] = (key, 0)

    def move(r: Range) -> Range:
        start = r.start
        if start.terms:
            const, terms = start.const, {}
            for iv, c in start.terms:
                to, delta = shift.get(iv, (iv, 0))
                const += c * delta
                terms[to] = terms.get(to, 0) + c
            start = Affine(const, normal_terms(terms))
        root, alloc = r.root, r.alloc
        if alloc is not None and alloc in copies:
            alloc = copies[alloc]
            root = ("alloc", ident(alloc))
        return Range(root, r.space, start, r.length, alloc, r.period, r.run)

    for old, new in pairs:
        # The allocs a copy uses are the original's, those the copy made
        # replaced by theirs (npu-double-buffer's re-analysis of the copies
        # read every operand's root again: 0.2 CPU s of BERT-12's on 32 cores).
        used = source.known_allocs_used(old)
        if used is not None:
            analysis.take_allocs_used(new, tuple(copies.get(a, a) for a in used))
        # A range bounded by an interval holds for the original's loop
        # bounds, not the copy's: those are derived again when asked.
        acc = source.reusable_access(old)
        if acc is not None:
            analysis.take_access(new, OpAccess(new, acc.pipe, [move(r) for r in acc.reads],
                                               [move(r) for r in acc.writes]))
