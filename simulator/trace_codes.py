"""Per-static-instruction facts of a trace, as numpy tables.

A trace entry is `(instr, views, scalar cycles)`. The pipes, the flag check
and the reports need facts of each entry's instruction (its pipe, kind,
bytes). Loops repeat instructions, but an unrolled program does not: a
32-core BERT's hivm program dispatches each of its ~17k instructions once
per core, so a Python pass over the distinct instructions costs as much as
one over the trace. Each fact is therefore read with `map(attrgetter)` into
`np.fromiter` (C loops, no bytecode per instruction), and per-entry columns
are one gather.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter, itemgetter

import numpy as np

from npu.simulator.errors import FLAG, SimulationError
from npu.simulator.hazards import PIPE_NAMES
from npu.simulator.instruction import NUMBERS, OP, SET, TEXTS, WAIT, facts_of

NPIPES = len(PIPE_NAMES)


@dataclass
class TraceCodes:
    """Each trace entry's static instruction as an index into `instrs`, so
    that per-entry facts (pipe, kind, cost class) are one numpy gather from a
    per-instruction table instead of a Python pass over the trace. The
    tables come from one pass over the instructions' `facts` tuples: with
    17k distinct instructions a core, each pass that reads an attribute of
    every instruction cost 4 ms (cold objects), and a run made ~20 of them."""

    instrs: list
    codes: np.ndarray
    _numbers: np.ndarray | None = field(default=None, repr=False)
    _texts: dict | None = field(default=None, repr=False)

    @classmethod
    def of(cls, trace: list, counts: Counter) -> "TraceCodes":
        instrs = list(counts)
        index = dict(zip(instrs, range(len(instrs))))
        codes = np.fromiter(map(index.__getitem__, map(itemgetter(0), trace)), np.int64,
                            len(trace))
        return cls(instrs, codes)

    def _load(self) -> None:
        rows = list(map(attrgetter("facts"), self.instrs))
        if None in rows:  # an instruction built without `Instr.finish`
            rows = [facts_of(i) if r is None else r for r, i in zip(rows, self.instrs)]
        n, k = len(rows), len(NUMBERS)
        self._numbers = np.fromiter(chain.from_iterable(map(itemgetter(*range(k)), rows)),
                                    np.int64, n * k).reshape(n, k)
        self._texts = {name: list(map(itemgetter(k + j), rows)) for j, name in enumerate(TEXTS)}

    def table(self, fact) -> np.ndarray:
        """Per distinct instruction, in `instrs` order: the NUMBERS fact
        named `fact`, or `fact(instr)` (an int)."""
        if isinstance(fact, str):
            if self._numbers is None:
                self._load()
            return self._numbers[:, NUMBERS.index(fact)]
        return np.fromiter(map(fact, self.instrs), np.int64, len(self.instrs))

    def texts(self, name: str) -> list:
        """Per distinct instruction, the TEXTS fact `name`."""
        if self._texts is None:
            self._load()
        return self._texts[name]

    def column(self, fact) -> np.ndarray:
        """`fact` (as in `table`) of every entry's instruction."""
        table = self.table(fact)
        return table[self.codes] if table.size else np.zeros(0, np.int64)


def static_counts(trace: list) -> Counter:
    """How often each static instruction was dispatched: one C-speed pass over
    the trace that the flag check, the per-pipe counts and the report share."""
    return Counter(map(itemgetter(0), trace))


def check_flag_pairs(trace: list, counts: Counter | None = None,
                     codes: TraceCodes | None = None) -> None:
    """Every wait_flag needs a set_flag to consume: the k-th wait of a flag
    matches the k-th set of that flag anywhere in the program. The totals per
    flag decide whether some wait goes unmatched; only then is the trace
    walked to name the first one."""
    if counts is None:
        counts = static_counts(trace)
    codes = codes or TraceCodes.of(trace, counts)
    instrs = codes.instrs
    kinds = codes.table("kind")
    n = np.fromiter(counts.values(), np.int64, len(instrs))
    balance: dict[tuple, int] = {}
    for k in np.flatnonzero((kinds == SET) | (kinds == WAIT)).tolist():
        instr = instrs[k]
        change = int(n[k]) if kinds[k] == SET else -int(n[k])
        balance[instr.key] = balance.get(instr.key, 0) + change
    if all(b >= 0 for b in balance.values()):
        return
    sets: dict[tuple, int] = {}
    for instr, _, _ in trace:
        if instr.kind == SET:
            sets[instr.key] = sets.get(instr.key, 0) + 1
    waits: dict[tuple, int] = {}
    for instr, _, _ in trace:
        if instr.kind == WAIT:
            k = waits[instr.key] = waits.get(instr.key, 0) + 1
            if k > sets.get(instr.key, 0):
                have = sets.get(instr.key, 0)
                raise SimulationError(
                    FLAG, f"'cce.wait_flag' ({instr.flag_text}) has no matching set_flag: this is "
                    f"wait #{k} on that flag but the program sets it {have} time"
                    f"{'' if have == 1 else 's'}", instr.where)


def pipe_counts(codes: TraceCodes, counts: Counter,
                n_entries: int) -> tuple[list[int], list[int]]:
    """Per pipe: instructions that compute or move data, and sync ops."""
    n = np.fromiter(counts.values(), np.int64, len(counts))
    pipes = codes.table("pipe")
    is_op = codes.table("kind") == OP
    ops, sync = np.zeros(NPIPES, np.int64), np.zeros(NPIPES, np.int64)
    np.add.at(ops, pipes[is_op], n[is_op])
    np.add.at(sync, pipes[~is_op], n[~is_op])
    ops, sync = ops.tolist(), sync.tolist()
    ops[0] = n_entries  # the scalar unit (S) dispatches every instruction
    return ops, sync
