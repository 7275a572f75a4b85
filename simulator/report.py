"""The run's report: cycles, per-pipe busy time, bytes per path, peak buffer
use, hazards, and the kernel's lower bound with the unit that sets it.

Lower bound = max over
  * each pipe's throughput work: V and M the sum of their instructions'
    issue cycles (repeats x rate, cube blocks / blocks per cycle), S the
    scalar cycles, each mover pipe the bytes of its paths over their
    bandwidths;
  * each path's bytes over its bandwidth.
Latencies are left out: a perfect schedule hides them. On a tie the path is
named, being the more specific answer.
"""

from __future__ import annotations

import math

from npu.simulator.hazards import PIPE_NAMES, S, V, M
from npu.simulator.instruction import OP, WAIT
from npu.target import PATH_PIPES, Target

HOTSPOTS = 10  # source locations listed, by instruction cycles (start to result)
REPORT_KEYS = ("cycles", "bound_cycles", "bound_unit", "bound_ratio", "pipes", "bytes",
               "peak_bytes", "instructions", "hazards")


def build(trace: list, timeline, program, target: Target, hazards: list[dict],
          serialize: bool) -> dict:
    cycles = timeline.total_cycles
    path_bytes = {p: 0 for p in target.paths}
    issue = [0] * len(PIPE_NAMES)
    waited = [0] * len(PIPE_NAMES)
    spots: dict[tuple[str, str], list[int]] = {}
    starts, ends = timeline.start, timeline.end
    for i, (instr, _, _) in enumerate(trace):
        if instr.kind != OP:
            if instr.kind == WAIT:
                waited[instr.pipe] += ends[i] - starts[i]
            continue
        if instr.path is not None:
            path_bytes[instr.path] += instr.nbytes
        if instr.pipe in (V, M):
            issue[instr.pipe] += instr.occupancy
        spot = spots.get((instr.where, instr.name))
        if spot is None:
            spot = spots[(instr.where, instr.name)] = [0, 0, instr.pipe]
        spot[0] += 1
        spot[1] += ends[i] - starts[i]
    bounds: dict[str, float] = {}
    for path, nbytes in path_bytes.items():
        bounds[f"path:{path}"] = nbytes / target.path(path).bytes_per_cycle
    bounds["S"] = float(timeline.busy[S])
    bounds["V"] = float(issue[V])
    bounds["M"] = float(issue[M])
    for pipe in ("MTE1", "MTE2", "MTE3"):
        bounds[pipe] = sum(bounds[f"path:{p}"] for p, pp in PATH_PIPES.items() if pp == pipe)
    bound_unit = max(bounds, key=lambda k: (bounds[k], k.startswith("path:")))
    bound_cycles = math.ceil(bounds[bound_unit])
    pipes = {}
    for p, name in enumerate(PIPE_NAMES):
        busy = timeline.busy[p]
        pipes[name] = {"busy_cycles": int(busy),
                       "utilization": round(busy / cycles, 4) if cycles else 0.0,
                       "instructions": int(timeline.counts[p]),
                       "sync_instructions": int(timeline.sync_counts[p]),
                       "wait_cycles": int(waited[p])}
    warnings = []
    for entry in timeline.unconsumed_sets:
        instr = trace[entry][0]
        warnings.append({"kind": "flag", "message": f"'cce.set_flag' ({instr.flag_text}) is never "
                         "waited for", "location": instr.where})
    return {
        "target": target.name,
        "entry": program.func_name,
        "serialize": serialize,
        "cycles": int(cycles),
        "bound_cycles": int(bound_cycles),
        "bound_unit": bound_unit,
        "bound_ratio": round(cycles / bound_cycles, 4) if bound_cycles else None,
        "bounds": {k: round(v, 2) for k, v in bounds.items()},
        "pipes": pipes,
        "bytes": {k: int(v) for k, v in path_bytes.items()},
        "peak_bytes": {space: int(program.placement.peak.get(space, 0))
                       for space in target.buffer_bytes},
        "gm": {"workspace_bytes": sum(int(program.args[i][1].size) for i in program.workspace_args),
               "alloc_bytes": int(program.gm_alloc_bytes)},
        "instructions": len(trace),
        "hazards": list(hazards),
        "warnings": warnings,
        "hotspots": [{"location": where, "op": name, "pipe": PIPE_NAMES[pipe], "count": count,
                      "cycles": int(total)}
                     for (where, name), (count, total, pipe)
                     in sorted(spots.items(), key=lambda kv: -kv[1][1])[:HOTSPOTS]],
    }


def combine(per_core: list[dict], memory: dict) -> dict:
    """The chip's report of a launch: the slowest core's report with the
    chip's cycles, bound and totals, plus one summary line per core and the
    memory system's figures. The chip's lower bound is the largest of any
    core's own bound and the chip GM bus bound (its bytes over its bandwidth)."""
    slowest = max(per_core, key=lambda r: r["cycles"])
    rep = dict(slowest)
    rep["cycles"] = max(r["cycles"] for r in per_core)
    rep["instructions"] = sum(r["instructions"] for r in per_core)
    rep["bytes"] = {k: sum(r["bytes"][k] for r in per_core) for k in slowest["bytes"]}
    rep["hazards"] = [h for r in per_core for h in r["hazards"]]
    core_bound = max(per_core, key=lambda r: r["bound_cycles"])
    bus = memory["chip_bus_bound_cycles"]
    if bus > core_bound["bound_cycles"]:
        rep["bound_unit"], rep["bound_cycles"] = "chip:gm", math.ceil(bus)
    else:
        rep["bound_unit"], rep["bound_cycles"] = core_bound["bound_unit"], core_bound["bound_cycles"]
    rep["bound_ratio"] = (round(rep["cycles"] / rep["bound_cycles"], 4)
                          if rep["bound_cycles"] else None)
    rep["block_dim"] = len(per_core)
    rep["cores"] = [{"core": c, "cycles": r["cycles"], "bound_unit": r["bound_unit"],
                     "bound_cycles": r["bound_cycles"], "instructions": r["instructions"]}
                    for c, r in enumerate(per_core)]
    rep["memory_system"] = memory
    return rep


def format_text(rep: dict) -> str:
    lines = [f"target {rep['target']}, entry @{rep['entry']}"
             + (" (serialized)" if rep.get("serialize") else ""),
             f"cycles            {rep['cycles']}",
             f"lower bound       {rep['bound_cycles']}  (limited by {rep['bound_unit']}; "
             f"cycles / bound = {rep['bound_ratio']})",
             f"instructions      {rep['instructions']}",
             "",
             f"{'pipe':<6} {'instructions':>12} {'busy cycles':>12} {'utilization':>12} "
             f"{'sync ops':>9} {'wait cycles':>12}"]
    for name, p in rep["pipes"].items():
        lines.append(f"{name:<6} {p['instructions']:>12} {p['busy_cycles']:>12} "
                     f"{100 * p['utilization']:>11.1f}% {p['sync_instructions']:>9} "
                     f"{p['wait_cycles']:>12}")
    lines.append("(S: instructions dispatched; others: instructions executed, "
                 "set/wait/barrier not counted)")
    lines += ["", f"{'path':<12} {'bytes':>12}"]
    for path, n in rep["bytes"].items():
        if n:
            lines.append(f"{path:<12} {n:>12}")
    lines += ["", f"{'buffer':<12} {'peak bytes':>12}"]
    for buf, n in rep["peak_bytes"].items():
        lines.append(f"{buf:<12} {n:>12}")
    gm = rep.get("gm")
    if gm and (gm["workspace_bytes"] or gm["alloc_bytes"]):
        lines.append(f"{'gm workspace':<12} {gm['workspace_bytes']:>12}"
                     + (f"  (+ {gm['alloc_bytes']} bytes of unplanned gm allocs)"
                        if gm["alloc_bytes"] else ""))
    if rep.get("cores"):
        lines += ["", f"{'core':<6} {'cycles':>12} {'bound':>12}  limited by"]
        for c in rep["cores"]:
            lines.append(f"{c['core']:<6} {c['cycles']:>12} {c['bound_cycles']:>12}  {c['bound_unit']}")
    if rep.get("memory_system"):
        m = rep["memory_system"]
        lines += ["", f"chip GM bus: {m['chip_bus_bytes']} bytes ({100 * m['chip_bus_utilisation']:.1f}% "
                  f"of its bandwidth), L2 hits {m['l2_hit_bytes']} of {m['gm_read_bytes']} bytes read"]
    if rep.get("hotspots"):
        lines += ["", f"{'hotspot (cycles from start to result)':<44} {'count':>8} {'cycles':>10}"]
        for h in rep["hotspots"]:
            label = f"{h['location']} {h['op'].removeprefix('cce.')} ({h['pipe']})"
            lines.append(f"{label:<44} {h['count']:>8} {h['cycles']:>10}")
    lines.append("")
    if rep["hazards"]:
        lines.append(f"hazards ({len(rep['hazards'])}):")
        lines += [f"  {h['location']}: {h['kind']}: {h['message']}" for h in rep["hazards"]]
    else:
        lines.append("hazards: none")
    for w in rep.get("warnings", []):
        lines.append(f"  {w['location']}: warning: {w['message']}")
    if rep.get("check"):
        c = rep["check"]
        lines.append(f"check: {'passed' if c['passed'] else 'FAILED'} (max abs err {c['max_abs_err']:.3g}, "
                     f"max rel err {c['max_rel_err']:.3g})")
    return "\n".join(lines)
