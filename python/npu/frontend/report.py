"""Per-source-op profile of a simulation: which linalg op / ONNX node the
simulated instructions came from, in model order, and for each

* `span_cycles`: first start to last end of its instructions (spans overlap:
  the next op's weights load while this one computes);
* `exclusive_cycles`: time attributed once, so the column sums to the run's
  cycles. On each core, every cycle goes to the ops with an instruction
  executing then (shared equally when several are), a cycle when nothing
  executes to the op whose instruction starts next (the one waited for),
  and the cycles after a core's last instruction to that instruction's op;
  on many cores, the average over the cores;
* `flops`: executed operations, 2 per cube MAC (fractal padding included;
  `cube_flops` alone) plus one per vector lane per repeat of an arithmetic
  instruction (not of pure data movement); `gm_bytes` moved to or from GM; the
  achieved `tflops` and `gbps` over its span at the target's clock;
* its own bound (its bytes over the path bandwidths, its vector and cube
  issue; on many cores that of the core with the most of its work) and the
  limiting unit;
* `members`: for a fused kernel, the other source ops it computes.
"""

from __future__ import annotations

import math
import re
from operator import attrgetter

import numpy as np

from npu.simulator.instruction import OP


def per_op_breakdown(result, target, names: dict[str, str],
                     members: dict[str, list[str]] | None = None) -> list[dict]:
    ops = _OpTotals(target)
    for entries, timeline in result.core_traces or [(result.trace_entries, result.timeline)]:
        if entries and timeline.codes is not None:
            ops.add_core(timeline)
    exclusive = exclusive_cycles(result)
    rows = []
    for k, where in enumerate(ops.wheres):
        bound, unit = ops.bound(k)
        first, last = ops.first[k], ops.last[k]
        span = int(last - first)
        seconds = span / (target.clock_ghz * 1e9) if span else 0.0
        flops, gm_bytes = int(ops.flops[k]), int(ops.gm_bytes[k])
        rows.append({"op": names.get(where, where), "location": where,
                     "instructions": int(ops.instructions[k]), "span_cycles": span,
                     "exclusive_cycles": round(exclusive.get(where, 0.0), 1),
                     "first_cycle": int(first), "last_cycle": int(last),
                     "bound_cycles": int(math.ceil(bound)), "bound_unit": unit,
                     "bytes": int(ops.bytes[k]), "gm_bytes": gm_bytes, "flops": flops,
                     "cube_flops": int(ops.cube_flops[k]),
                     "tflops": round(flops / seconds / 1e12, 3) if seconds else 0.0,
                     "gbps": round(gm_bytes / seconds / 1e9, 1) if seconds else 0.0,
                     "members": [names.get(m, m) for m in (members or {}).get(where, [])
                                 if m != where]})
    rows.sort(key=lambda r: _source_order(r["location"]))
    return rows


def exclusive_cycles(result) -> dict[str, float]:
    """{op location: cycles}, summing to the run's cycles (module docstring)."""
    cores = result.core_traces or [(result.trace_entries, result.timeline)]
    wheres: dict[str, int] = {}  # location -> its owner number in `sweep`
    total = np.zeros(0)
    for entries, timeline in cores:
        codes = timeline.codes
        if not entries or codes is None:
            continue
        # Per distinct instruction, computed once for the launch's cores
        # (`InstrTable.derived`), then gathered per entry.
        op_of = (codes.table("kind") == OP)[codes.codes]
        numbers = codes.shared.numbering("where")
        wheres = numbers
        where_of = codes.derived("where", lambda new: [
            numbers.setdefault(w, len(numbers)) for w in map(attrgetter("where"), new)])[codes.codes]
        start = timeline.array("start").astype(np.float64)
        end = timeline.array("end").astype(np.float64)
        keep = op_of & (end > start)
        share = sweep(start[keep], end[keep], where_of[keep], len(wheres), result.cycles)
        total = np.concatenate([total, np.zeros(len(wheres) - total.size)]) + share
    return {w: total[k].item() / len(cores) for w, k in wheres.items() if k < total.size}


def sweep(start: np.ndarray, end: np.ndarray, who: np.ndarray, n: int, cycles: float) -> np.ndarray:
    """One core's cycles per owner `who` (0..n-1) of intervals [start, end):
    every instant shared equally by the owners with an interval open then;
    a gap with none open goes to the owner whose interval starts next; the
    cycles from the last end to `cycles` to the owner of the last interval
    to end. The events are swept in time order, ends before starts at one
    instant, in numpy (a model has hundreds of thousands)."""
    out = np.zeros(n)
    if not start.size:
        return out
    m = start.size
    t = np.concatenate([start, end])
    is_start = np.concatenate([np.ones(m, bool), np.zeros(m, bool)])
    owner = np.concatenate([who, who])
    order = np.lexsort((is_start, t))  # stable: at one instant, in entry order
    t, is_start, owner = t[order], is_start[order], owner[order]
    # Each owner's count of open intervals: becoming open (0 -> 1) or closed (1 -> 0).
    delta = np.where(is_start, 1, -1)
    # stable either way; 16-bit keys sort by radix (3x faster than int64's merges)
    by_owner = np.argsort(owner.astype(np.uint16) if n <= 1 << 16 else owner, kind="stable")
    counts = np.empty(2 * m, np.int64)
    grouped = np.cumsum(delta[by_owner])
    firsts = np.flatnonzero(np.r_[True, owner[by_owner][1:] != owner[by_owner][:-1]])
    base = np.repeat(grouped[firsts] - delta[by_owner][firsts], np.diff(np.r_[firsts, 2 * m]))
    counts[by_owner] = grouped - base  # open count after each event, per owner
    opens = is_start & (counts == 1)
    closes = ~is_start & (counts == 0)
    active = np.cumsum(opens.astype(np.int64) - closes)  # owners open after each event
    dt = np.diff(t)  # the interval after each event but the last
    busy = active[:-1] > 0
    share = np.where(busy, dt / np.maximum(active[:-1], 1), 0.0)
    before = np.r_[0.0, np.cumsum(share)]  # shares of the intervals before each event
    np.add.at(out, owner[closes], before[closes])
    np.subtract.at(out, owner[opens], before[opens])
    # Idle gaps (and the time before the first event) go to the next start.
    idle = np.r_[t[0], np.where(busy, 0.0, dt)]  # the gap before event k
    gaps = np.flatnonzero(idle > 0)
    if gaps.size:
        starts_at = np.flatnonzero(is_start)
        next_start = starts_at[np.searchsorted(starts_at, gaps)]
        np.add.at(out, owner[next_start], idle[gaps])
    out[owner[-1]] += max(0.0, cycles - t[-1])
    return out


def _flops(instr, target) -> int:
    if instr.pipe_name == "M" and hasattr(instr, "blocks"):
        return 2 * instr.blocks * target.fractal * target.fractal * instr.n_edge
    if (instr.pipe_name == "V" and not instr.moves and hasattr(instr, "repeat")
            and hasattr(instr, "lanes")):
        return instr.repeat * instr.lanes
    return 0


class _OpTotals:
    """Each op's (source location's) totals over the cores, summed per core
    in numpy: a launch has hundreds of thousands of (core, static
    instruction) pairs, so the Python work is one table row per distinct
    static instruction. Ops are numbered in order of first appearance (core
    by core, in each core's static order), and each core's units of an op
    in the order they appear (a tie between two units' bounds goes to the
    first, as `max` over them in that order would)."""

    def __init__(self, target) -> None:
        self.target = target
        self.wheres: list[str] = []  # the ops, numbered as they first run
        self._seen: list[str] = []  # every location met in a table row
        self._seen_ids: dict[str, int] = {}
        self._out: dict[int, int] = {}  # index in _seen -> index in wheres
        self._paths: list[str] = []
        self._path_ids: dict[str, int] = {}
        self.first = self.last = np.zeros(0)
        self.instructions = self.flops = self.cube_flops = np.zeros(0)
        self.gm_bytes = self.bytes = np.zeros(0)
        self._best: list[tuple[float, str] | None] = []  # per op: the largest core bound

    def _rows(self, new: list) -> list[tuple]:
        """Per instruction: (op, unit: 0 other / 1 V / 2 M, occupancy, flops
        per dispatch, path or -1, bytes per dispatch, whether the path
        touches GM, the bytes that take as long on the path as the
        instruction's own rate takes (img2col: slower than its path); op -1
        for what is not an operation. Computed once per instruction of a
        launch (`InstrTable.derived`): the cores share them."""
        rows = []
        seen, paths, target = self._seen_ids, self._path_ids, self.target
        for instr in new:
            if instr.kind != OP:
                rows.append((-1, 0, 0, 0, -1, 0, 0, 0))
                continue
            where = seen.setdefault(instr.where, len(seen))
            path = -1 if instr.path is None else paths.setdefault(instr.path, len(paths))
            unit = {"V": 1, "M": 2}.get(instr.pipe_name, 0)
            nbytes = instr.nbytes if path >= 0 else 0
            timed = (nbytes * target.path(instr.path).bytes_per_cycle // instr.rate
                     if path >= 0 and instr.rate else nbytes)
            rows.append((where, unit, instr.occupancy, _flops(instr, target), path, nbytes,
                         int(path >= 0 and "gm" in instr.path.split("_to_")), timed))
        return rows

    def add_core(self, timeline) -> None:
        codes = timeline.codes
        k, n = codes.codes, len(codes.glob)
        start, end = timeline.array("start"), timeline.array("end")
        count = np.bincount(k, minlength=n)
        duration = np.bincount(k, weights=end - start, minlength=n)
        if codes.n.max(initial=0) == 1:  # each instruction once: `k` orders the entries
            first, last = np.empty(n), np.empty(n)
            first[k], last[k] = start, end
        else:
            first = _reduce_by(np.minimum, k, start, n, np.inf)
            last = _reduce_by(np.maximum, k, end, n, -np.inf)
        shared = codes.shared
        # The rows' numberings live with them, in the launch's table.
        shared.numbering("per_op targets").setdefault(id(self.target), self.target)
        self._seen_ids = shared.numbering(("per_op where", id(self.target)))
        self._path_ids = shared.numbering(("per_op path", id(self.target)))
        table = codes.derived(("per_op", id(self.target)), self._rows).reshape(n, 8)
        self._seen = list(self._seen_ids)
        seen, unit, occupancy, flops, path, nbytes, gm, timed = table.T
        keep = np.flatnonzero((seen >= 0) & (count > 0))
        for r in dict.fromkeys(seen[keep].tolist()):  # ops new to the launch, in order
            if r not in self._out:
                self._out[r] = len(self.wheres)
                self.wheres.append(self._seen[r])
        self._paths = list(self._path_ids)
        self._grow()
        lookup = np.full(len(self._seen), -1, np.int64)
        lookup[list(self._out)] = list(self._out.values())
        w, c = lookup[seen[keep]], count[keep]
        self.first = np.minimum(self.first, self._min_by(w, first[keep]))
        self.last = np.maximum(self.last, -self._min_by(w, -last[keep]))
        nw = len(self.wheres)
        self.instructions += np.bincount(w, weights=c, minlength=nw)
        per_op = flops[keep] * c
        self.flops += np.bincount(w, weights=per_op, minlength=nw)
        self.cube_flops += np.bincount(w, weights=per_op * (unit[keep] == 2), minlength=nw)
        moved = nbytes[keep] * c
        self.gm_bytes += np.bincount(w, weights=moved * gm[keep], minlength=nw)
        self.bytes += np.bincount(w, weights=moved, minlength=nw)
        busy = np.where(unit[keep] > 0, (occupancy[keep] * c).astype(np.float64), duration[keep])
        self._core_bounds(w, unit[keep], busy, path[keep], timed[keep] * c)

    def _grow(self) -> None:
        extra = len(self.wheres) - self.first.size
        if extra:
            self.first = np.r_[self.first, np.full(extra, np.inf)]
            self.last = np.r_[self.last, np.full(extra, -np.inf)]
            for name in ("instructions", "flops", "cube_flops", "gm_bytes", "bytes"):
                setattr(self, name, np.r_[getattr(self, name), np.zeros(extra)])
            self._best.extend([None] * extra)

    def _min_by(self, who: np.ndarray, values: np.ndarray) -> np.ndarray:
        return _reduce_by(np.minimum, who, values, len(self.wheres), np.inf)

    def _core_bounds(self, w, unit, busy, path, moved) -> None:
        """This core's bound of each of its ops (the largest of its bytes over
        each path's bandwidth, `moved` counting an img2col's at its own rate,
        and its V and M busy cycles) against the largest so far: (bound, unit)
        tuples compared as `max` compares them."""
        nw, stride = len(self.wheres), max(len(self._paths), 1)
        v = np.bincount(w, weights=busy * (unit == 1), minlength=nw)
        m = np.bincount(w, weights=busy * (unit == 2), minlength=nw)
        on_path = path >= 0
        cell = w[on_path] * stride + path[on_path]
        nbytes = np.bincount(cell, weights=moved[on_path], minlength=nw * stride)
        never = np.iinfo(np.int64).max
        appears = np.full(nw * stride, never)  # where each (op, path) first appears here
        np.minimum.at(appears, cell, np.flatnonzero(on_path))
        rates = [self.target.path(p).bytes_per_cycle for p in self._paths]
        for op in dict.fromkeys(w.tolist()):
            row = appears[op * stride:op * stride + len(self._paths)]
            bounds = {f"path:{self._paths[p]}": nbytes[op * stride + p] / rates[p]
                      for p in sorted(np.flatnonzero(row != never), key=row.__getitem__)}
            bounds["V"] = v[op]
            bounds["M"] = m[op]
            name = max(bounds, key=bounds.get)
            here = (float(bounds[name]), name)
            if self._best[op] is None or here > self._best[op]:
                self._best[op] = here

    def bound(self, op: int) -> tuple[float, str]:
        return self._best[op]


def _reduce_by(ufunc: np.ufunc, who: np.ndarray, values: np.ndarray, n: int,
               empty: float) -> np.ndarray:
    """`ufunc.at(out, who, values)` on `out = [empty] * n` for a minimum or a
    maximum (exact in any order), as one sort and a `reduceat`: `ufunc.at`
    took 0.13 CPU s a call of `per_op_breakdown` on a 32-core BERT."""
    out = np.full(n, empty)
    if who.size:
        order = np.argsort(who, kind="stable")
        grouped = who[order]
        heads = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
        out[grouped[heads]] = ufunc(out[grouped[heads]], ufunc.reduceat(values[order], heads))
    return out


def _source_order(location: str) -> tuple:
    """Model order: an ONNX node's line is its number; then the column."""
    m = re.search(r":(\d+):(\d+)$", location)
    return (0, int(m.group(1)), int(m.group(2))) if m else (1, 0, 0)
