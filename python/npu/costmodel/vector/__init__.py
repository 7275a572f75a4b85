"""The vector unit's geometry: lanes, repeats and chunks of UB (`tiling`),
the two-slot chunk pipeline of the row kernels (`chunk_pipeline`), the
instructions each elementwise op computes with (`recipes`), how operands
broadcast to an elementwise result (`broadcast`) and which rows a kernel
can store in Nz (`nz_limits`)."""
