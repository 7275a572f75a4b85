"""Profiler-style CSVs of a run, laid out like msprof's op simulator output.

* `PipeUtilization.csv`: one row for the AI core (block 0), the run's time
  and cycles, then per unit its busy time and its share of the run
  (`aic_<unit>_time(us)`, `aic_<unit>_ratio`), as msprof names them, plus
  the cycles it stalled on flags (`aic_<unit>_wait_cycles`).
* `instr_types.csv`: one row per instruction type (`vadd`, `copy_gm_to_ub`,
  ..., and the set/wait/barrier sync ops), with how often it ran, the cycles
  it held its unit, the cycles from dispatch to start, and its bytes.

Times are microseconds at the target's clock; ratios are of the run's cycles.
"""

from __future__ import annotations

import csv
import io

from npu.simulator.hazards import PIPE_NAMES
from npu.simulator.instruction import OP, SET, WAIT
from npu.simulator.pipes import Timeline, pipelined_pipes
from npu.simulator.report import Hotspot, unit_cycles
from npu.target import Target

PIPE_UTILIZATION_CSV = "PipeUtilization.csv"
INSTR_TYPES_CSV = "instr_types.csv"

# msprof's unit names for our pipes.
MSPROF_UNITS = {"S": "scalar", "V": "vec", "M": "cube", "MTE1": "mte1", "MTE2": "mte2",
                "MTE3": "mte3"}


def _us(cycles: float, target: Target) -> float:
    return round(cycles / (1000.0 * target.clock_ghz), 6)


def _csv(header: list[str], rows: list[list]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def pipe_utilization_csv(report: dict, target: Target) -> str:
    cycles = report["cycles"]
    header = ["block_id", "sub_block_id", "aic_time(us)", "aic_total_cycles"]
    row: list = [0, "core0", _us(cycles, target), cycles]
    for pipe, unit in MSPROF_UNITS.items():
        p = report["pipes"][pipe]
        header += [f"aic_{unit}_time(us)", f"aic_{unit}_ratio", f"aic_{unit}_wait_cycles"]
        row += [_us(p["busy_cycles"], target), p["utilization"], p["wait_cycles"]]
    return _csv(header, [row])


def _sync_name(instr) -> str:
    return {SET: "set_flag", WAIT: "wait_flag"}.get(instr.kind, "pipe_barrier")


def instruction_types_csv(trace: list, timeline: Timeline, target: Target) -> str:
    """Aggregates per (instruction, pipe), sorted by cycles on the unit.

    `wait_cycles` counts, once per cycle, the time some instruction of the
    type was dispatched but not started (for a wait_flag: not finished).
    """
    pipelined = pipelined_pipes(target)
    total = timeline.total_cycles
    types: dict[tuple[str, int], Hotspot] = {}
    nbytes: dict[tuple[str, int], int] = {}
    starts, ends = timeline.start, timeline.end
    dispatch = timeline.dispatch or starts
    for i, (instr, _, _) in enumerate(trace):
        if instr.kind == OP:
            name = instr.name.split(".", 1)[-1]
            held, done_waiting = unit_cycles(instr, starts[i], ends[i], pipelined), starts[i]
        else:
            name = _sync_name(instr)
            held, done_waiting = 0, ends[i] if instr.kind == WAIT else starts[i]
        key = (name, instr.pipe)
        spot = types.get(key)
        if spot is None:
            spot = types[key] = Hotspot("", name, instr.pipe)
        spot.add(held, min(dispatch[i], starts[i]), done_waiting)
        nbytes[key] = nbytes.get(key, 0) + (instr.nbytes if instr.kind == OP else 0)
    header = ["instr", "pipe", "count", "unit_cycles", "unit_time(us)", "unit_ratio",
              "avg_unit_cycles", "wait_cycles", "bytes"]
    rows = []
    for key, t in sorted(types.items(), key=lambda kv: (-kv[1].unit, kv[0])):
        rows.append([t.op, PIPE_NAMES[t.pipe], t.count, t.unit, _us(t.unit, target),
                     round(t.unit / total, 4) if total else 0.0, round(t.unit / t.count, 2),
                     t.waiting, nbytes[key]])
    return _csv(header, rows)
