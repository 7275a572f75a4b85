"""Chrome trace-event JSON (loads in ui.perfetto.dev and chrome://tracing).

One process (the AI core), one thread per pipe, one complete ("X") slice per
instruction, and a flow arrow ("s" -> "f") from each set_flag to the
wait_flag that consumed it. Timestamps are microseconds at the target clock
(`cycles / (1000 * clock_ghz)`); each slice's args carry its cycles.

Pipelined units (V, M) accept a new instruction every `occupancy` cycles;
their slices show that issue interval (so slices on one track never overlap)
and give the full latency in args. A wait slice spans its stall; a set slice
spans the flag latency.
"""

from __future__ import annotations

from npu.simulator.hazards import PIPE_NAMES
from npu.simulator.instruction import OP, SET, WAIT
from npu.simulator.pipes import Timeline, pipelined_pipes
from npu.target import Target

PID = 1


def chrome_trace_cores(cores: list[tuple], target: Target) -> dict:
    """A multi-core launch: one process per core (pid = core + 1), its pipes
    as threads, so a trace viewer groups the lanes by core."""
    events: list[dict] = []
    flows = 0
    for core, (trace, timeline) in enumerate(cores):
        one = chrome_trace(trace, timeline, target, core + 1, f"AI core {core} ({target.name})",
                           flows)
        flows += len(timeline.flows)
        events += one["traceEvents"]
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"target": target.name, "clock_ghz": target.clock_ghz,
                          "cores": len(cores),
                          "cycles": max(t.total_cycles for _, t in cores)}}


def chrome_trace(trace: list, timeline: Timeline, target: Target, pid: int = PID,
                 process: str | None = None, first_flow: int = 0) -> dict:
    scale = 1.0 / (1000.0 * target.clock_ghz)  # cycles -> microseconds
    events: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
         "args": {"name": process or f"AI core ({target.name})"}}]
    for p, name in enumerate(PIPE_NAMES):
        events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": p, "args": {"name": name}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": p,
                       "args": {"sort_index": p}})
    starts, ends = timeline.start, timeline.end
    pipelined = pipelined_pipes(target)
    for i, (instr, _, _) in enumerate(trace):
        t0, t1 = starts[i], ends[i]
        args = {"cycle": t0, "end_cycle": t1, "location": instr.where}
        if instr.kind == OP:
            dur = instr.occupancy if instr.pipe in pipelined else t1 - t0
            args["latency"] = instr.latency
            if instr.path:
                args["path"] = instr.path
                args["bytes"] = instr.nbytes
            name = instr.name.removeprefix("cce.")
        elif instr.kind == SET:
            dur, name = max(t1 - t0, 1), f"set_flag {instr.flag_text}"
        elif instr.kind == WAIT:
            dur, name = max(t1 - t0, 1), f"wait_flag {instr.flag_text}"
        else:
            dur = max(t1 - t0, 1)
            name = ("sync_all" if instr.chip else "pipe_barrier(ALL)" if instr.barrier_all
                    else f"pipe_barrier({instr.pipe_name})")
        events.append({"name": name, "cat": "sync" if instr.kind != OP else "instr", "ph": "X",
                       "pid": pid, "tid": instr.pipe, "ts": t0 * scale, "dur": max(dur, 1) * scale,
                       "args": args})
    for n, (set_i, wait_i) in enumerate(timeline.flows, first_flow):
        s_instr, w_instr = trace[set_i][0], trace[wait_i][0]
        events.append({"name": "flag", "cat": "flag", "ph": "s", "id": n, "pid": pid,
                       "tid": s_instr.pipe, "ts": starts[set_i] * scale})
        events.append({"name": "flag", "cat": "flag", "ph": "f", "bp": "e", "id": n, "pid": pid,
                       "tid": w_instr.pipe, "ts": max(starts[wait_i], starts[set_i]) * scale})
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"target": target.name, "cycles": timeline.total_cycles,
                          "clock_ghz": target.clock_ghz}}
