"""Per-source-op breakdown of a simulation: which linalg op / ONNX node the
simulated instructions came from, their cycles, and each op's own lower
bound (its bytes over the path bandwidths, its vector and cube issue).
On a multi-core launch every core's instructions count: an op's span is
the chip's, and its bound is that of the core with the most of its work."""

from __future__ import annotations

import math

from npu.simulator.instruction import OP


def per_op_breakdown(result, target, names: dict[str, str]) -> list[dict]:
    from npu.simulator.hazards import PIPE_NAMES

    groups: dict[str, dict] = {}
    for core, instr, start, end in _chip_entries(result):
        g = groups.get(instr.where)
        if g is None:
            g = groups[instr.where] = {"first": start, "last": end, "instructions": 0, "cores": {}}
        g["first"] = min(g["first"], start)
        g["last"] = max(g["last"], end)
        g["instructions"] += 1
        busy, moved = g["cores"].setdefault(core, ({}, {}))
        pipe = PIPE_NAMES[instr.pipe]
        busy[pipe] = busy.get(pipe, 0) + (instr.occupancy if pipe in ("V", "M") else end - start)
        if instr.path is not None:
            moved[instr.path] = moved.get(instr.path, 0) + instr.nbytes
    rows = []
    for where, g in groups.items():
        bound, unit = max(_core_bound(busy, moved, target) for busy, moved in g["cores"].values())
        rows.append({"op": names.get(where, where), "location": where,
                     "instructions": g["instructions"], "span_cycles": int(g["last"] - g["first"]),
                     "first_cycle": int(g["first"]), "last_cycle": int(g["last"]),
                     "bound_cycles": int(math.ceil(bound)), "bound_unit": unit,
                     "bytes": sum(sum(moved.values()) for _, moved in g["cores"].values())})
    rows.sort(key=lambda r: -r["span_cycles"])
    return rows


def _core_bound(busy: dict, moved: dict, target) -> tuple[float, str]:
    """One core's share of an op: its bytes over each path's bandwidth, its
    vector and cube issue; the largest, and what it is."""
    bounds = {f"path:{p}": n / target.path(p).bytes_per_cycle for p, n in moved.items()}
    bounds["V"] = busy.get("V", 0)
    bounds["M"] = busy.get("M", 0)
    unit = max(bounds, key=bounds.get)
    return bounds[unit], unit


def _chip_entries(result):
    """(core, instruction, start, end) of every operation of the launch."""
    cores = result.core_traces or [(result.trace_entries, result.timeline)]
    for core, (entries, timeline) in enumerate(cores):
        starts, ends = timeline.start, timeline.end
        for i, (instr, _, _) in enumerate(entries):
            if instr.kind == OP:
                yield core, instr, starts[i], ends[i]
