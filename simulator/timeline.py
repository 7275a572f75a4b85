"""One core's run as the pipes timed it (`pipes.start`): per entry its
start, end and dispatch cycles, and the run's totals."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from npu.simulator.trace_codes import TraceCodes


@dataclass(eq=False)
class Timeline:
    """One core's run. `start`, `end`, `dispatch` (when S handed each entry
    to its pipe) are lists of cycles per entry; the compiled loop hands them
    as int64 arrays, which the reports read as they are (`array`), and a list
    is made only when asked for (3 x 19k ints a core of a 32-core BERT: the
    lists and their conversion back to numpy cost 0.4 of 7.5 CPU s)."""

    _start: list[int] | np.ndarray
    _end: list[int] | np.ndarray
    total_cycles: int
    busy: list[int]
    counts: list[int]
    sync_counts: list[int]
    flows: list[tuple[int, int]] = field(default_factory=list)  # (set entry, wait entry)
    unconsumed_sets: list[int] = field(default_factory=list)
    _dispatch: list[int] | np.ndarray = field(default_factory=list)
    codes: "TraceCodes | None" = None  # each entry's static instruction, as an array
    _cache: dict = field(default_factory=dict, repr=False)

    def _list(self, name: str) -> list[int]:
        seq = getattr(self, "_" + name)
        if isinstance(seq, list):
            return seq
        if name not in self._cache:
            self._cache[name] = seq.tolist()
        return self._cache[name]

    @property
    def start(self) -> list[int]:
        return self._list("start")

    @property
    def end(self) -> list[int]:
        return self._list("end")

    @property
    def dispatch(self) -> list[int]:
        return self._list("dispatch")

    def array(self, name: str) -> np.ndarray:
        """`start`, `end` or `dispatch` as an int64 array (read-only)."""
        seq = getattr(self, "_" + name)
        if isinstance(seq, np.ndarray):
            return seq
        key = name + " array"
        if key not in self._cache:
            self._cache[key] = np.array(seq, np.int64)
        return self._cache[key]

    @property
    def static_counts(self) -> Counter:
        """Dispatches per static instruction, in order of first dispatch."""
        return self.codes.counts if self.codes is not None else Counter()
