"""The report's per-instruction sums, over the distinct instructions of a
core as numpy tables (`trace_codes.TraceCodes.table`): an unrolled program
has as many distinct instructions as dynamic ones (17k per core of a
32-core BERT), so one Python pass over them cost the report 65 ms a core.
Every sum is the one a Python loop over `counts` makes: integers exactly,
and each float sum in the same order (`functools.reduce`, sequential)."""

from __future__ import annotations

from collections import Counter
from functools import reduce
from operator import add

import numpy as np

from npu.simulator.hazards import PIPE_NAMES, V, M
from npu.simulator.instruction import OP, WAIT
from npu.simulator.trace_codes import TraceCodes
from npu.target import Target


class Facts:
    """One core's distinct instructions, their dispatch counts and facts."""

    def __init__(self, codes: TraceCodes, counts: Counter, target: Target):
        self.codes = codes
        self.instrs = codes.instrs  # the order of `counts`
        self.n = np.fromiter(counts.values(), np.int64, len(counts))
        self.kind = codes.table("kind")
        self.pipe = codes.table("pipe")
        self.paths = list(target.paths)
        ids = {None: -1, **{p: k for k, p in enumerate(self.paths)}}
        self.path = np.fromiter(map(ids.__getitem__, codes.texts("path")), np.int64,
                                len(self.instrs))
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
        ops = np.flatnonzero(self.is_op).tolist()
        wheres, names = self.codes.texts("where"), self.codes.texts("name")
        keys = [(wheres[k], names[k]) for k in ops]
        first = dict(zip(reversed(keys), range(len(keys) - 1, -1, -1)))
        order = sorted(first.values())
        index = {keys[k]: s for s, k in enumerate(order)}
        pipes = self.pipe[ops].tolist()
        spots = [(*keys[k], pipes[k]) for k in order]
        code = np.full(len(self.instrs), -1, np.int64)
        code[ops] = np.fromiter(map(index.__getitem__, keys), np.int64, len(keys))
        waits = self.kind == WAIT
        code[waits] = -2 - self.pipe[waits]
        on_pipelined = np.isin(self.pipe, list(pipelined))
        occupancy = self.codes.table("occupancy")
        unit = np.where(self.is_op, np.where(on_pipelined, occupancy, -1), 0)
        return spots, code, unit
