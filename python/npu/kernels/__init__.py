"""Builders that emit `cce` for a kernel the passes place: cce op helpers
(`cce_build`), emission of the elementwise recipes
(`npu.costmodel.vector.recipes`) on UB views (`vector_compute`), scalar and
column operands broadcast to blocks (`scalar_blocks`), Nz stores
(`nz_store`) and the fused row kernels (`fused_chunk`, `row_builders`,
`online_rows`, `online_kernel`).

May import: `npu.costmodel`, `npu.analysis`, `npu.ir`, `npu.target`,
`npu.diagnostics`, `npu.dialects`; never a pass.
"""
