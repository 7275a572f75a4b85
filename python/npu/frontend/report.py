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
from collections import defaultdict

import numpy as np

from npu.simulator.instruction import OP


def per_op_breakdown(result, target, names: dict[str, str],
                     members: dict[str, list[str]] | None = None) -> list[dict]:
    from npu.simulator.hazards import PIPE_NAMES

    groups: dict[str, dict] = {}
    for core, instr, count, duration, start, end in _static_entries(result):
        g = groups.get(instr.where)
        if g is None:
            g = groups[instr.where] = {"first": start, "last": end, "instructions": 0, "cores": {},
                                       "flops": 0, "cube_flops": 0, "gm_bytes": 0}
        g["first"] = min(g["first"], start)
        g["last"] = max(g["last"], end)
        g["instructions"] += count
        busy, moved = g["cores"].setdefault(core, ({}, {}))
        pipe = PIPE_NAMES[instr.pipe]
        busy[pipe] = busy.get(pipe, 0) + (instr.occupancy * count if pipe in ("V", "M")
                                          else duration)
        flops = _flops(instr, target) * count
        g["flops"] += flops
        if pipe == "M":
            g["cube_flops"] += flops
        if instr.path is not None:
            moved[instr.path] = moved.get(instr.path, 0) + instr.nbytes * count
            if "gm" in instr.path.split("_to_"):
                g["gm_bytes"] += instr.nbytes * count
    exclusive = exclusive_cycles(result)
    rows = []
    for where, g in groups.items():
        bound, unit = max(_core_bound(busy, moved, target) for busy, moved in g["cores"].values())
        span = int(g["last"] - g["first"])
        seconds = span / (target.clock_ghz * 1e9) if span else 0.0
        rows.append({"op": names.get(where, where), "location": where,
                     "instructions": g["instructions"], "span_cycles": span,
                     "exclusive_cycles": round(exclusive.get(where, 0.0), 1),
                     "first_cycle": int(g["first"]), "last_cycle": int(g["last"]),
                     "bound_cycles": int(math.ceil(bound)), "bound_unit": unit,
                     "bytes": sum(sum(moved.values()) for _, moved in g["cores"].values()),
                     "gm_bytes": g["gm_bytes"], "flops": g["flops"], "cube_flops": g["cube_flops"],
                     "tflops": round(g["flops"] / seconds / 1e12, 3) if seconds else 0.0,
                     "gbps": round(g["gm_bytes"] / seconds / 1e9, 1) if seconds else 0.0,
                     "members": [names.get(m, m) for m in (members or {}).get(where, [])
                                 if m != where]})
    rows.sort(key=lambda r: _source_order(r["location"]))
    return rows


def exclusive_cycles(result) -> dict[str, float]:
    """{op location: cycles}, summing to the run's cycles (module docstring)."""
    cores = result.core_traces or [(result.trace_entries, result.timeline)]
    wheres: dict[str, int] = {}
    total = np.zeros(0)
    for entries, timeline in cores:
        codes = timeline.codes
        if not entries or codes is None:
            continue
        op_of = np.array([instr.kind == OP for instr in codes.instrs], bool)[codes.codes]
        where_of = np.array([wheres.setdefault(instr.where, len(wheres)) for instr in codes.instrs],
                            np.int64)[codes.codes]
        start, end = np.asarray(timeline.start, np.float64), np.asarray(timeline.end, np.float64)
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
    by_owner = np.argsort(owner, kind="stable")
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


def _core_bound(busy: dict, moved: dict, target) -> tuple[float, str]:
    """One core's share of an op: its bytes over each path's bandwidth, its
    vector and cube issue; the largest, and what it is."""
    bounds = {f"path:{p}": n / target.path(p).bytes_per_cycle for p, n in moved.items()}
    bounds["V"] = busy.get("V", 0)
    bounds["M"] = busy.get("M", 0)
    unit = max(bounds, key=bounds.get)
    return bounds[unit], unit


def _static_entries(result):
    """(core, static operation, dispatches, cycles from start to end summed,
    first start, last end) of every operation of the launch: one numpy pass
    per core over its trace, then one Python step per static instruction."""
    cores = result.core_traces or [(result.trace_entries, result.timeline)]
    for core, (entries, timeline) in enumerate(cores):
        codes = timeline.codes
        if not entries or codes is None:
            continue
        k, n = codes.codes, len(codes.instrs)
        start, end = np.asarray(timeline.start), np.asarray(timeline.end)
        count = np.bincount(k, minlength=n)
        duration = np.bincount(k, weights=end - start, minlength=n)
        first = np.full(n, np.inf)
        np.minimum.at(first, k, start)
        last = np.full(n, -np.inf)
        np.maximum.at(last, k, end)
        for i, instr in enumerate(codes.instrs):
            if instr.kind == OP and count[i]:
                yield (core, instr, int(count[i]), duration[i].item(), first[i].item(),
                       last[i].item())


def _source_order(location: str) -> tuple:
    """Model order: an ONNX node's line is its number; then the column."""
    m = re.search(r":(\d+):(\d+)$", location)
    return (0, int(m.group(1)), int(m.group(2))) if m else (1, 0, 0)
