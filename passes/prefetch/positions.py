"""Where a top-level op is in `npu-prefetch`'s list of the function body,
found near where it is known to be instead of from the list's start.

`list.index` compares each op on the way through the bindings: from the
start of BERT-12's body on 32 cores (40k ops), a look-up of an op near a
late matmul costs milliseconds, and the row moves asked several per matmul
(more than 0.3 CPU s of the pass). A top-level op is in the list once, so
an index found in any window is the one a search from the start finds;
when the window misses, the search goes on over the whole list (same
answer, same `ValueError`).
"""

from __future__ import annotations

from mlir import ir

# How far on each side of the hint the first search looks.
WINDOW = 1024


def index_near(tops: list[ir.Operation], op: ir.Operation, hint: int) -> int:
    """`tops.index(op)`, looked for around `hint` first."""
    try:
        return tops.index(op, max(0, hint - WINDOW), hint + WINDOW)
    except ValueError:
        return tops.index(op)


def index_from(tops: list[ir.Operation], op: ir.Operation, start: int) -> int:
    """`tops.index(op, start)`, looked for just after `start` first."""
    try:
        return tops.index(op, start, start + WINDOW)
    except ValueError:
        return tops.index(op, start)
