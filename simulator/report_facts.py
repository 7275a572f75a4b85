"""The report's per-instruction sums, over the distinct instructions of a
core as numpy tables (`trace_codes.TraceCodes.table`): an unrolled program
has as many distinct instructions as dynamic ones (19k per core of a
32-core BERT), so one Python pass over them cost the report 65 ms a core.
What depends only on the instruction (its path's number, its hotspot's
source location and op) is computed once per launch (`InstrTable.derived`):
the cores share their instructions. Every sum is the one a Python loop over
the instructions makes: integers exactly, and each float sum in the same
order (`functools.reduce`, sequential)."""

from __future__ import annotations

from collections import Counter
from functools import reduce
from operator import add, attrgetter

import numpy as np

from npu.simulator.hazards import PIPE_NAMES, V, M
from npu.simulator.instruction import OP, WAIT
from npu.simulator.trace_codes import TraceCodes
from npu.target import Target


class Facts:
    """One core's distinct instructions, their dispatch counts and facts."""

    def __init__(self, codes: TraceCodes, target: Target):
        self.codes = codes
        self.n = codes.n
        self.kind = codes.table("kind")
        self.pipe = codes.table("pipe")
        self.paths = list(target.paths)
        ids = {None: -1, **{p: k for k, p in enumerate(self.paths)}}
        self.path = codes.derived(("path", tuple(self.paths)), lambda new: list(
            map(ids.__getitem__, map(attrgetter("path"), new))))
        self.is_op = self.kind == OP
        self.on_path = self.is_op & (self.path >= 0)

    def path_bytes(self) -> dict[str, int]:
        """Bytes per path: every operation's bytes times its dispatches."""
        moved = self.codes.table("nbytes") * self.n
        out = np.zeros(len(self.paths), np.int64)
        np.add.at(out, self.path[self.on_path], moved[self.on_path])
        return dict(zip(self.paths, out.tolist()))

    def own_rate(self) -> tuple[dict[str, int], Counter]:
        """The bytes of each path moved by instructions with a rate of their
        own, and per pipe name their cycles at that rate."""
        rate = self.codes.table("rate")
        rated = np.flatnonzero(self.on_path & (rate != 0))
        nbytes = self.codes.table("nbytes")[rated] * self.n[rated]
        out_bytes = np.zeros(len(self.paths), np.int64)
        np.add.at(out_bytes, self.path[rated], nbytes)
        cycles: Counter = Counter()
        pipe = self.pipe[rated]
        seconds = nbytes / rate[rated]  # each the double that int / int gives
        for p in dict.fromkeys(pipe.tolist()):  # pipes in order of first appearance
            cycles[PIPE_NAMES[p]] = reduce(add, seconds[pipe == p].tolist(), cycles[PIPE_NAMES[p]])
        return dict(zip(self.paths, out_bytes.tolist())), cycles

    def issue(self) -> list[int]:
        """V's and M's issue cycles: occupancy times dispatches."""
        busy = self.codes.table("occupancy") * self.n
        out = np.zeros(len(PIPE_NAMES), np.int64)
        mine = self.is_op & ((self.pipe == V) | (self.pipe == M))
        np.add.at(out, self.pipe[mine], busy[mine])
        return out.tolist()

    def spots(self, pipelined: frozenset[int]) -> tuple[list, np.ndarray, np.ndarray]:
        """((location, op name, pipe) of each hotspot, in order of first
        appearance; each instruction's code:
        its spot's index if an operation, -2 - pipe if a wait_flag, else -1;
        each instruction's cycles on its unit: occupancy on a pipelined
        unit, -1 (end - start) on another, 0 for sync)."""
        ops = np.flatnonzero(self.is_op)
        spot_keys = self.codes.shared.numbering("spot")
        keys = self.codes.derived("spot", lambda new: [
            spot_keys.setdefault((i.where, i.name), len(spot_keys)) for i in new])[ops]
        # Spots in order of their first instruction (instructions: first dispatch order).
        uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty(order.size, np.int64)
        rank[order] = np.arange(order.size)
        by_number = list(spot_keys)
        pipes = self.pipe[ops[first[order]]].tolist()
        spots = [(*by_number[k], p) for k, p in zip(uniq[order].tolist(), pipes)]
        code = np.full(len(self.n), -1, np.int64)
        code[ops] = rank[inverse.reshape(-1)]
        waits = self.kind == WAIT
        code[waits] = -2 - self.pipe[waits]
        on_pipelined = np.isin(self.pipe, list(pipelined))
        occupancy = self.codes.table("occupancy")
        unit = np.where(self.is_op, np.where(on_pipelined, occupancy, -1), 0)
        return spots, code, unit
