"""npu: an MLIR-based tensor compiler and cycle-approximate simulator for a
DaVinci-style matrix NPU. Sub-packages map onto the repository's top-level
folders: `npu.dialects` (dialects/), `npu.passes` (passes/), `npu.simulator`
(simulator/), `npu.tools` (tools/)."""
