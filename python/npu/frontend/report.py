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
    out: dict[str, float] = defaultdict(float)
    for entries, timeline in cores:
        events = []
        for i, (instr, _, _) in enumerate(entries):
            if instr.kind == OP and timeline.end[i] > timeline.start[i]:
                events.append((timeline.start[i], 1, instr.where))
                events.append((timeline.end[i], 0, instr.where))
        events.sort(key=lambda e: (e[0], e[1]))  # at one time, ends before starts
        active: dict[str, int] = {}
        now, waiting, last = 0, 0, None
        for time, starts, where in events:
            if time > now:
                if active:
                    share = (time - now) / len(active)
                    for w in active:
                        out[w] += share
                else:
                    waiting += time - now
                now = time
            if starts:
                out[where] += waiting
                waiting = 0
                active[where] = active.get(where, 0) + 1
            else:
                active[where] -= 1
                if not active[where]:
                    del active[where]
                last = where
        if last is not None:
            out[last] += waiting + max(0, result.cycles - now)
    return {w: v / len(cores) for w, v in out.items()}


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
