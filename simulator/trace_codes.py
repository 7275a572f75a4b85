"""Per-static-instruction facts of a trace, as numpy tables.

A trace entry is `(instr, views, scalar cycles)`. The pipes, the flag check
and the reports need facts of each entry's instruction (its pipe, kind,
bytes). Loops repeat instructions, but an unrolled program does not: a
32-core BERT's hivm program dispatches each of its ~19k instructions once
per core, so a Python pass over a core's distinct instructions costs as much
as one over its trace. The cores of a launch run one decoded program,
though, and share their instructions (BERT-base x12 on 32 cores: 24,670
distinct of 600k entries). So the facts live in one `InstrTable` per
launch, read once per instruction (`map(attrgetter)` into `np.fromiter`, C
loops), and a core's facts are numpy gathers by its entries' numbers.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import chain, islice
from operator import attrgetter, itemgetter
from typing import Callable

import numpy as np

from npu.simulator import compiled
from npu.simulator.errors import FLAG, SimulationError
from npu.simulator.hazards import PIPE_NAMES
from npu.simulator.instruction import NUMBERS, OP, SET, TEXTS, WAIT, facts_of

NPIPES = len(PIPE_NAMES)
# What the compiled loop reads of an instruction (`csrc/entries.c`, `Info`), per row.
ENGINE_INFO = ("kind", "occupancy", "latency", "gm", "key", "barrier_all", "chip")
COLUMNS = NUMBERS + ("latency", "gm", "key", "barrier_all", "chip")


class _Numbering(dict):
    """Instr -> number: a missing instruction gets the next number (the
    dict's length, which the compiled `number_entries` gives it too)."""

    def __missing__(self, instr) -> int:
        n = self[instr] = len(self)
        return n


class InstrTable:
    """Every distinct instruction of a launch, numbered in order of first
    dispatch (core by core, each in trace order), with its facts: `COLUMNS`
    as an int64 table, `TEXTS` as lists, flag keys numbered (`key`, -1 for
    what is not a set or wait). `derived` keeps further per-instruction
    columns that the reports compute once for every core."""

    def __init__(self) -> None:
        self.ids: _Numbering = _Numbering()  # Instr -> number
        self.instrs: list = []
        self.numbers = np.zeros((0, len(COLUMNS)), np.int64)
        self.texts: dict[str, list] = {name: [] for name in TEXTS}
        self.keys: dict[tuple, int] = {}
        # False once an occupancy or latency is not an int64: the compiled
        # loop then reads the instructions itself (and refuses them).
        self.exact = True
        self._derived: dict = {}
        self._numberings: dict[str, dict] = {}

    def numbers_of(self, trace: list) -> np.ndarray:
        """Each entry's instruction number (new instructions join the table)."""
        before = len(self.ids)
        cengine = compiled.engine()
        if cengine is not None and hasattr(cengine, "number_entries"):
            nums = np.empty(len(trace), np.int64)
            cengine.number_entries(trace, self.ids, nums)  # the loop below, in C
        else:
            # `_Numbering.__getitem__` numbers a new instruction as it is met.
            nums = np.fromiter(map(self.ids.__getitem__, map(itemgetter(0), trace)), np.int64,
                               len(trace))
        if len(self.ids) > before:
            self._add(list(islice(self.ids, before, None)))
        return nums

    def _add(self, new: list) -> None:
        rows = list(map(attrgetter("facts"), new))
        if None in rows:  # an instruction built without `Instr.finish`
            rows = [facts_of(i) if r is None else r for r, i in zip(rows, new)]
        n, k = len(rows), len(NUMBERS)
        numbers = np.fromiter(chain.from_iterable(map(itemgetter(*range(k)), rows)),
                              np.int64, n * k).reshape(n, k)
        kinds = numbers[:, NUMBERS.index("kind")].tolist()
        keys = self.keys
        flag = [keys.setdefault(i.key, len(keys)) if kd in (SET, WAIT) else -1
                for i, kd in zip(new, kinds)]
        exact = [np.array([r[NUMBERS.index("occupancy")] for r in rows] or [0]),
                 np.array([getattr(i, "latency", 0) for i in new] or [0])]
        if any(a.dtype != np.int64 for a in exact):
            self.exact = False
        extra = np.array([[getattr(i, "latency", 0) if self.exact else 0 for i in new],
                          [i.gm_operand is not None for i in new], flag,
                          [bool(getattr(i, "barrier_all", False)) for i in new],
                          [bool(getattr(i, "chip", False)) for i in new]], np.int64).T
        self.numbers = np.concatenate([self.numbers, np.hstack([numbers, extra])])
        for j, name in enumerate(TEXTS):
            self.texts[name].extend(map(itemgetter(k + j), rows))
        self.instrs.extend(new)

    def column(self, name: str) -> np.ndarray:
        """The COLUMNS fact `name` of every instruction, by number."""
        return self.numbers[:, COLUMNS.index(name)]

    def numbering(self, name: str) -> dict:
        """A numbering (value -> number, in the order met) that the launch's
        cores share, for `derived` columns."""
        return self._numberings.setdefault(name, {})

    def derived(self, key, make: Callable[[list], list]) -> np.ndarray:
        """A column (or row) of ints per instruction, `make(new
        instructions)` for the ones not yet computed (in number order); `key`
        names it (with whatever it depends on)."""
        have = self._derived.get(key)
        done = 0 if have is None else len(have)
        if done < len(self.instrs):
            new = np.asarray(make(self.instrs[done:]), np.int64)
            have = new if have is None else np.concatenate([have, new])
            self._derived[key] = have
        return have if have is not None else np.zeros(0, np.int64)


@dataclass
class TraceCodes:
    """One core's trace against the launch's `InstrTable`: its distinct
    instructions in order of first dispatch (`glob`: their numbers in the
    table), each entry's index into them (`codes`) and each one's
    dispatches (`n`). Per-entry facts are one gather from the table."""

    shared: InstrTable
    glob: np.ndarray
    codes: np.ndarray
    n: np.ndarray
    entry_glob: np.ndarray  # each entry's instruction number in the table
    _instrs: list | None = field(default=None, repr=False)

    @classmethod
    def of(cls, trace: list, table: InstrTable | None = None) -> "TraceCodes":
        table = table if table is not None else InstrTable()
        fresh = not table.instrs
        nums = table.numbers_of(trace)
        n = np.bincount(nums) if nums.size else np.zeros(0, np.int64)
        if not nums.size or n.max() == 1:
            # Each instruction dispatched once (an unrolled program): entry
            # order is first dispatch order.
            return cls(table, nums, np.arange(nums.size), np.ones(nums.size, np.int64), nums)
        if fresh:
            # A new table numbers instructions as the trace first meets them,
            # so the numbers are already the first-dispatch ranks: no sort
            # (np.unique's was 40% of this on a 125k-entry loop).
            return cls(table, np.arange(n.size), nums, n, nums)
        uniq, first, inverse, n = np.unique(nums, return_index=True, return_inverse=True,
                                            return_counts=True)
        order = np.argsort(first, kind="stable")  # first dispatch order
        rank = np.empty(order.size, np.int64)
        rank[order] = np.arange(order.size)
        return cls(table, uniq[order], rank[inverse.reshape(-1)], n[order], nums)

    @property
    def instrs(self) -> list:
        """The distinct instructions, in order of first dispatch."""
        if self._instrs is None:
            self._instrs = list(map(self.shared.instrs.__getitem__, self.glob.tolist()))
        return self._instrs

    @property
    def counts(self) -> Counter:
        """Dispatches per static instruction, in order of first dispatch."""
        return Counter(dict(zip(self.instrs, self.n.tolist())))

    def table(self, fact) -> np.ndarray:
        """Per distinct instruction, in `instrs` order: the COLUMNS fact
        named `fact`, or `fact(instr)` (an int)."""
        if isinstance(fact, str):
            return self.shared.column(fact)[self.glob]
        return np.fromiter(map(fact, self.instrs), np.int64, len(self.glob))

    def texts(self, name: str) -> list:
        """Per distinct instruction, the TEXTS fact `name`."""
        return list(map(self.shared.texts[name].__getitem__, self.glob.tolist()))

    def derived(self, key, make: Callable[[list], list]) -> np.ndarray:
        """`InstrTable.derived`, per distinct instruction in `instrs` order."""
        return self.shared.derived(key, make)[self.glob]

    def column(self, fact) -> np.ndarray:
        """`fact` (as in `table`) of every entry's instruction."""
        if isinstance(fact, str):
            return self.shared.column(fact)[self.entry_glob]
        table = self.table(fact)
        return table[self.codes] if table.size else np.zeros(0, np.int64)

    def engine_info(self) -> tuple[bytes, bytes, int] | None:
        """What the compiled loop reads of the instructions: each entry's
        index (int32), per distinct instruction `ENGINE_INFO` (int64), and
        the number of flag keys; None when some number is not an int64."""
        if not self.shared.exact:
            return None
        cols = [COLUMNS.index(name) for name in ENGINE_INFO]
        info = np.ascontiguousarray(self.shared.numbers[self.glob][:, cols])
        return (self.codes.astype(np.int32).tobytes(), info.tobytes(), len(self.shared.keys))


def static_counts(trace: list) -> Counter:
    """How often each static instruction was dispatched."""
    return Counter(map(itemgetter(0), trace))


def check_flag_pairs(trace: list, codes: TraceCodes | None = None) -> None:
    """Every wait_flag needs a set_flag to consume: the k-th wait of a flag
    matches the k-th set of that flag anywhere in the program. The totals per
    flag decide whether some wait goes unmatched; only then is the trace
    walked to name the first one."""
    codes = codes if codes is not None else TraceCodes.of(trace)
    kinds = codes.table("kind")
    sync = np.flatnonzero((kinds == SET) | (kinds == WAIT))
    balance = np.zeros(len(codes.shared.keys), np.int64)
    np.add.at(balance, codes.table("key")[sync],
              np.where(kinds[sync] == SET, codes.n[sync], -codes.n[sync]))
    if not (balance < 0).any():
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


def pipe_counts(codes: TraceCodes, n_entries: int) -> tuple[list[int], list[int]]:
    """Per pipe: instructions that compute or move data, and sync ops."""
    n = codes.n
    pipes = codes.table("pipe")
    is_op = codes.table("kind") == OP
    ops, sync = np.zeros(NPIPES, np.int64), np.zeros(NPIPES, np.int64)
    np.add.at(ops, pipes[is_op], n[is_op])
    np.add.at(sync, pipes[~is_op], n[~is_op])
    ops, sync = ops.tolist(), sync.tolist()
    ops[0] = n_entries  # the scalar unit (S) dispatches every instruction
    return ops, sync
