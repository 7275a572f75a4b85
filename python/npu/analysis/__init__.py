"""What the IR does, derived from it: which bytes each instruction reads and
writes (`access`, with `byte_ranges` and `offset_intervals` for the values
an offset can take), and the work each instruction gives its pipe
(`pipe_work`). Used by the buffer planner, the synchronisation pass, the
cost models and the simulator's checks.

May import: `npu.ir`, `npu.target`, `npu.diagnostics`, `npu.dialects`.
"""
