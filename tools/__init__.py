"""The command-line tools: npu-opt, npu-run, npu-tune and npu-as.

The top of the dependency graph: may import every other package; nothing
imports `npu.tools`."""
