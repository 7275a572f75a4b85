"""Per-source-op breakdown of a simulation: which linalg op / ONNX node the
simulated instructions came from, their cycles, and each op's own lower
bound (its bytes over the path bandwidths, its vector and cube issue)."""

from __future__ import annotations

import math

from npu.simulator.instruction import OP


def per_op_breakdown(result, target, names: dict[str, str]) -> list[dict]:
    from npu.simulator.hazards import PIPE_NAMES

    starts, ends = result.timeline.start, result.timeline.end
    groups: dict[str, dict] = {}
    for i, (instr, _, _) in enumerate(result.trace_entries):
        if instr.kind != OP:
            continue
        g = groups.get(instr.where)
        if g is None:
            g = groups[instr.where] = {"first": starts[i], "last": ends[i], "instructions": 0,
                                       "busy": {}, "bytes": {}}
        g["first"] = min(g["first"], starts[i])
        g["last"] = max(g["last"], ends[i])
        g["instructions"] += 1
        pipe = PIPE_NAMES[instr.pipe]
        g["busy"][pipe] = g["busy"].get(pipe, 0) + (instr.occupancy if pipe in ("V", "M")
                                                     else ends[i] - starts[i])
        if instr.path is not None:
            g["bytes"][instr.path] = g["bytes"].get(instr.path, 0) + instr.nbytes
    rows = []
    for where, g in groups.items():
        bounds = {f"path:{p}": n / target.path(p).bytes_per_cycle for p, n in g["bytes"].items()}
        bounds["V"] = g["busy"].get("V", 0)
        bounds["M"] = g["busy"].get("M", 0)
        unit = max(bounds, key=bounds.get)
        rows.append({"op": names.get(where, where), "location": where,
                     "instructions": g["instructions"], "span_cycles": int(g["last"] - g["first"]),
                     "first_cycle": int(g["first"]), "last_cycle": int(g["last"]),
                     "bound_cycles": int(math.ceil(bounds[unit])), "bound_unit": unit,
                     "bytes": sum(g["bytes"].values())})
    rows.sort(key=lambda r: -r["span_cycles"])
    return rows
