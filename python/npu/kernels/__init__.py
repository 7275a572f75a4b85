"""Builders that emit `cce` for a kernel the passes place: cce op helpers
(`cce_build`), elementwise recipes on UB views (`vector_compute`), Nz
stores (`nz_store`) and the fused row kernels (`fused_chunk`,
`row_builders`, `online_rows`, `online_kernel`).

May import: `npu.costmodel`, `npu.analysis`, `npu.ir`, `npu.target`,
`npu.diagnostics`, `npu.dialects`; never a pass.
"""
