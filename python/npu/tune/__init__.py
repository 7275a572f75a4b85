"""`npu-tune`: per-op tuning and design-space sweeps, simulated as Ray tasks.

    from npu.tune import TuneOptions, load_program, tune, sweep_design
    result = tune(load_program("prog.mlir"), opts=TuneOptions(search="grid", workers=2))
    open("record.json", "w").write(result.record.to_json())

Modules: `program` (input, op kernels), `space` (search spaces, target
parameters), `cost_model` (estimates guided search ranks by), `search`,
`evaluate` (one candidate), `runner` (Ray), `store` (resumable results),
`progress`, `tuner` (per-op), `design`; the tuning record it writes is
`npu.passes.tuning_record` (npu-lower reads it). Ray is imported only when
a sweep runs.

A driver: may import `npu.frontend`, `npu.pipeline`, `npu.passes`,
`npu.simulator`, `npu.costmodel` and the core; never `npu.tools`.
"""

from npu.tune.design import DesignResult, sweep_design
from npu.tune.program import Program, ProgramError, load_program
from npu.passes.tuning_record import TuningRecord, op_signature
from npu.tune.space import SpaceError
from npu.tune.tuner import TuneOptions, TuneResult, tune

__all__ = ["DesignResult", "Program", "ProgramError", "SpaceError", "TuneOptions", "TuneResult",
           "TuningRecord", "load_program", "op_signature", "sweep_design", "tune"]
