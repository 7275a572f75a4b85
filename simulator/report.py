"""The run's report: cycles, per-pipe busy time, bytes per path, peak buffer
use, hazards, and the kernel's lower bound with the unit that sets it.

Lower bound = max over
  * each pipe's throughput work: V and M the sum of their instructions'
    issue cycles (repeats x rate, cube blocks / blocks per cycle), S the
    scalar cycles, each mover pipe the bytes of its paths over their
    bandwidths (an instruction with a rate of its own, img2col, at that
    rate);
  * each path's bytes over its bandwidth.
Latencies are left out: a perfect schedule hides them. On a tie the path is
named, being the more specific answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from npu.simulator.hazards import PIPE_NAMES, S, V, M
from npu.simulator.pipes import pipelined_pipes
from npu.simulator.report_facts import Facts
from npu.simulator.trace_codes import TraceCodes
from npu.target import PATH_PIPES, Target

HOTSPOTS = 10  # source locations listed, by cycles on their unit
REPORT_VERSION = 2  # bumped when a key changes meaning or goes away
REPORT_KEYS = ("version", "cycles", "bound_cycles", "bound_unit", "bound_ratio", "pipes", "bytes",
               "peak_bytes", "instructions", "hazards")


def build(trace: list, timeline, program, target: Target, hazards: list[dict],
          serialize: bool) -> dict:
    cycles = timeline.total_cycles
    codes = timeline.codes or TraceCodes.of(trace)
    facts = Facts(codes, target)
    path_bytes = facts.path_bytes()
    # Movers with a rate of their own (img2col, slower than its path): their
    # bytes and their cycles at that rate, for their pipe's bound.
    own_rate_bytes, own_rate_cycles = facts.own_rate()
    issue = facts.issue()
    # The hotspots need every dynamic instruction in order (waiting intervals):
    # each static instruction's spot and unit cost are looked up once, then
    # the spots' sums are taken over the entries grouped by spot (`spot_sums`).
    spot_keys, code_table, unit_table = facts.spots(pipelined_pipes(target))
    spots = [Hotspot(*key) for key in spot_keys]
    code, unit = code_table[codes.codes], unit_table[codes.codes]
    starts, ends = timeline.array("start"), timeline.array("end")
    dispatched = timeline.array("dispatch") if len(timeline.array("dispatch")) else starts
    waits = code <= -2
    waited = np.zeros(len(PIPE_NAMES), np.int64)
    np.add.at(waited, -2 - code[waits], (ends - starts)[waits])
    waited = waited.tolist()
    spot_sums(spots, code, unit, starts, ends, dispatched)
    bounds: dict[str, float] = {}
    for path, nbytes in path_bytes.items():
        bounds[f"path:{path}"] = nbytes / target.path(path).bytes_per_cycle
    bounds["S"] = float(timeline.busy[S])
    bounds["V"] = float(issue[V])
    bounds["M"] = float(issue[M])
    for pipe in ("MTE1", "MTE2", "MTE3"):
        bounds[pipe] = own_rate_cycles[pipe] + sum(
            (path_bytes[p] - own_rate_bytes[p]) / target.path(p).bytes_per_cycle
            for p, pp in PATH_PIPES.items() if pp == pipe)
    bound_unit = max(bounds, key=lambda k: (bounds[k], k.startswith("path:")))
    bound_cycles = math.ceil(bounds[bound_unit])
    if not bound_cycles:  # no work (an empty function): no unit limits it
        bound_unit = None
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
        "version": REPORT_VERSION,
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
        "hotspots": [spot.as_dict() for spot in
                     sorted(spots, key=lambda h: (-h.unit, -h.waiting))[:HOTSPOTS]],
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
    cycles = rep["cycles"]
    rep["cores"] = []
    for c, r in enumerate(per_core):
        busy = max(r["pipes"][p]["busy_cycles"] for p in WORK_PIPES)
        rep["cores"].append({
            "core": c, "cycles": r["cycles"], "bound_unit": r["bound_unit"],
            "bound_cycles": r["bound_cycles"], "instructions": r["instructions"],
            "busy_cycles": busy, "utilization": round(busy / cycles, 4) if cycles else 0.0,
            "barrier_wait_cycles": r.get("barrier_wait_cycles", 0)})
    rep["pipes"] = {name: {**slowest["pipes"][name],
                           "busy_cycles": sum(r["pipes"][name]["busy_cycles"] for r in per_core),
                           "instructions": sum(r["pipes"][name]["instructions"] for r in per_core)}
                    for name in slowest["pipes"]}
    for p in rep["pipes"].values():  # the chip's: busy over all cores' time
        p["utilization"] = round(p["busy_cycles"] / (cycles * len(per_core)), 4) if cycles else 0.0
    rep["memory_system"] = memory
    return rep


# The units whose busy time is a core's (the scalar unit only dispatches).
WORK_PIPES = ("V", "M", "MTE1", "MTE2", "MTE3")


def chip_bound(rep: dict, per_core: list[dict], target, min_gm_bytes: int) -> None:
    """The chip's ideal for this program: the larger of all its cube work
    spread over every core of the target and its compulsory GM traffic
    (every argument once) over the chip's GM bandwidth; `rep["chip"]`."""
    rep["chip"] = chip_ideal(rep, sum(r["bounds"]["M"] for r in per_core), target, min_gm_bytes,
                             "program")


def chip_ideal(rep: dict, cube: float, target, min_gm_bytes: int, source: str) -> dict:
    """The chip part of report `rep` from the cube work and the GM bytes
    `source` counts: the program's arguments, or the model's data
    (`npu.compile` of an ONNX model: a figure that does not move with the
    layouts chosen)."""
    cube_bound = cube / target.cores
    gm_bound = min_gm_bytes / target.gm_chip_bytes_per_cycle
    unit, bound = ("cube", cube_bound) if cube_bound >= gm_bound else ("gm", gm_bound)
    return {"cores": target.cores, "launched": rep.get("block_dim", 1),
            "bound_cycles": math.ceil(bound), "bound_unit": unit,
            "cube_cycles": round(cube, 2), "min_gm_bytes": int(min_gm_bytes),
            "gm_bytes_of": source,
            "ratio": round(rep["cycles"] / bound, 4) if bound else None}


def spot_sums(spots: list["Hotspot"], code: np.ndarray, unit: np.ndarray, starts: np.ndarray,
              ends: np.ndarray, dispatched: np.ndarray) -> None:
    """Each spot's `Hotspot.add` over its entries (`code`: each entry's spot,
    negative for none), in trace order, for all spots at once: a core of a
    32-core BERT has ~700 spots, and one numpy pass each cost 0.9 of 36
    profiled seconds. The running maximum of starts within each spot is one
    `maximum.accumulate` over the entries sorted by spot, each spot's starts
    lifted above every earlier spot's."""
    order = np.flatnonzero(code >= 0)
    if not order.size:
        return
    spot = code[order]
    # numpy sorts 16-bit keys stably by radix: 3x faster than int64's merges
    by_spot = np.argsort(spot.astype(np.uint16) if spot.max() < 1 << 16 else spot, kind="stable")
    order, spot = order[by_spot], spot[by_spot]
    held = unit[order]
    held = np.where(held >= 0, held, ends[order] - starts[order])
    started, lo = starts[order], dispatched[order]
    lift = int(started.max()) + 1
    if lift * (len(spots) + 1) >= 2 ** 62 or started.min() < 0:  # spot by spot
        for k in np.unique(spot).tolist():
            mine = spot == k
            spots[k].add_all(held[mine], lo[mine], started[mine])
        return
    lifted = started + spot * lift
    before = np.maximum.accumulate(lifted) - spot * lift  # the running maximum, this spot's
    heads = np.r_[True, spot[1:] != spot[:-1]]
    # Before a spot's first entry its running maximum is 0 (`Hotspot._wait_until`).
    until = np.where(heads, 0, np.r_[0, before[:-1]])
    waiting = np.maximum(started - np.maximum(lo, until), 0)
    bounds = np.r_[np.flatnonzero(heads), spot.size]
    firsts = spot[bounds[:-1]].tolist()
    counts = np.diff(bounds).tolist()
    held_sums = np.add.reduceat(held, bounds[:-1]).tolist()
    wait_sums = np.add.reduceat(waiting, bounds[:-1]).tolist()
    last = np.maximum.reduceat(started, bounds[:-1]).tolist()
    for k, c, h, w, t in zip(firsts, counts, held_sums, wait_sums, last):
        s = spots[k]
        s.count += c
        s.unit += h
        s.waiting += w
        s._wait_until = max(s._wait_until, t)


def unit_cycles(instr, start: int, end: int, pipelined: frozenset[int]) -> int:
    """Cycles an instruction holds its unit: a pipelined unit takes the next
    one after `occupancy`; any other is held until the result (end)."""
    return instr.occupancy if instr.pipe in pipelined else end - start


@dataclass
class Hotspot:
    """One source location's instructions of one kind.

    `unit`: cycles they held their unit. One unit runs one instruction at a
    time, so these never overlap and never exceed the run. `waiting`: cycles
    in which at least one of them was dispatched but not started (its unit
    busy, or a flag or barrier not yet passed), counted once however many
    waited together.
    """

    location: str
    op: str
    pipe: int
    count: int = 0
    unit: int = 0
    waiting: int = 0
    _wait_until: int = 0  # end of the waiting interval counted so far

    def add(self, unit: int, dispatched: int, started: int) -> None:
        self.count += 1
        self.unit += unit
        lo = max(dispatched, self._wait_until)  # dispatch times only grow
        if started > lo:
            self.waiting += started - lo
        self._wait_until = max(self._wait_until, started)

    def add_all(self, unit: np.ndarray, dispatched: np.ndarray, started: np.ndarray) -> None:
        """`add` for many instructions at once, given in dispatch order."""
        if not started.size:
            return
        waited_until = np.maximum.accumulate(np.concatenate(([self._wait_until], started[:-1])))
        lo = np.maximum(dispatched, waited_until)
        self.count += int(started.size)
        self.unit += int(unit.sum())
        self.waiting += int(np.maximum(started - lo, 0).sum())
        self._wait_until = max(self._wait_until, int(started.max()))

    def as_dict(self) -> dict:
        return {"location": self.location, "op": self.op, "pipe": PIPE_NAMES[self.pipe],
                "count": self.count, "unit_cycles": int(self.unit),
                "wait_cycles": int(self.waiting)}


def _bound_line(rep: dict) -> str:
    """A program with no work has bound 0: no limiting unit, no ratio."""
    if not rep["bound_cycles"]:
        return "lower bound       0  (no work to bound: no unit moves or computes anything)"
    return (f"lower bound       {rep['bound_cycles']}  (limited by {rep['bound_unit']}; "
            f"cycles / bound = {rep['bound_ratio']})")


def format_text(rep: dict) -> str:
    lines = [f"target {rep['target']}, entry @{rep['entry']}"
             + (" (serialized)" if rep.get("serialize") else ""),
             f"cycles            {rep['cycles']}",
             _bound_line(rep),
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
        lines += ["", f"{'core':<6} {'cycles':>12} {'busy':>12} {'util':>7} {'barrier wait':>13} "
                  f"{'bound':>12}  limited by"]
        for c in rep["cores"]:
            lines.append(f"{c['core']:<6} {c['cycles']:>12} {c['busy_cycles']:>12} "
                         f"{100 * c['utilization']:>6.1f}% {c['barrier_wait_cycles']:>13} "
                         f"{c['bound_cycles']:>12}  {c['bound_unit'] or '-'}")
        lines.append("(busy: cycles its busiest unit worked; pipe table above: all cores' sums, "
                     "utilization over cores x cycles)")
    if rep.get("chip"):
        ch = rep["chip"]
        lines.append(f"chip ideal   {ch['bound_cycles']}  (limited by {ch['bound_unit']}: "
                     f"{ch['cube_cycles']:.0f} cube cycles over {ch['cores']} cores, "
                     f"the {ch.get('gm_bytes_of', 'program')}'s {ch['min_gm_bytes']} GM bytes "
                     "once over the chip bus; "
                     f"cycles / ideal = {ch['ratio']})")
    if rep.get("memory_system"):
        m = rep["memory_system"]
        lines += ["", f"chip GM bus: {m['chip_bus_bytes']} bytes ({100 * m['chip_bus_utilisation']:.1f}% "
                  f"of its bandwidth), L2 hits {m['l2_hit_bytes']} of {m['gm_read_bytes']} bytes read"]
    if rep.get("hotspots"):
        labels = [f"{h.get('node') or h['location']} {h['op'].split('.', 1)[-1]} ({h['pipe']})"
                  for h in rep["hotspots"]]
        width = max([44] + [len(label) for label in labels])
        lines += ["", f"{'hotspot':<{width}} {'count':>8} {'on unit':>10} {'waiting':>10}"]
        for label, h in zip(labels, rep["hotspots"]):
            lines.append(f"{label:<{width}} {h['count']:>8} {h['unit_cycles']:>10} "
                         f"{h['wait_cycles']:>10}")
        lines.append("(on unit: cycles the instructions held their pipe; waiting: cycles one of "
                     "them was dispatched but not started, each cycle counted once)")
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
                     f"max rel err {c['max_rel_err']:.3g})"
                     + (f"; {c['tolerance']}" if c.get("tolerance") else ""))
    return "\n".join(lines)
