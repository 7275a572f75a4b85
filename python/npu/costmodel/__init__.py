"""Every model that predicts cycles or bytes, or chooses a tiling, fusion or
schedule from those predictions. One subpackage per concern:

* `matmul`: the output-stationary tiling, L1 residency and the pipelined
  schedule's timing;
* `attention`: the attention pattern, its tile cost and plan, and the Q/K/V
  projection it may absorb;
* `fusion`: row groups, matmul epilogues, their precision and the GELU chain;
* `vector`: vector-instruction geometry, chunking and the chunk pipeline.

May import: `npu.analysis`, `npu.ir`, `npu.target`, `npu.diagnostics`,
`npu.dialects`; never a kernel builder or a pass.
"""
