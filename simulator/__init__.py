"""A strict, cycle-approximate model of one DaVinci AI core.

`simulate(module, inputs)` runs a cce-level `func.func` and returns its
outputs, cycles, a report and hazards; see `core.simulate`. `run_inputs`
and `run_check` are what a run takes (random or .npz arguments) and how its
outputs are checked against the numpy reference.

May import: `npu.hivm`, `npu.analysis`, `npu.reference` and the core
(`npu.ir`, `npu.dialects`, `npu.target`, `npu.diagnostics`); never a pass
or a driver.
"""

from npu.simulator.core import SimResult, simulate
from npu.simulator.errors import SimulationError

__all__ = ["SimResult", "SimulationError", "simulate"]
