"""A strict, cycle-approximate model of one DaVinci AI core.

`simulate(module, inputs)` runs a cce-level `func.func` and returns its
outputs, cycles, a report and hazards; see `core.simulate`.
"""

from npu.simulator.core import SimResult, simulate
from npu.simulator.errors import SimulationError

__all__ = ["SimResult", "SimulationError", "simulate"]
