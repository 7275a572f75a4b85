"""Command-line tools: npu-opt and npu-run."""
