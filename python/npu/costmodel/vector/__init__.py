"""The vector unit's geometry: lanes, repeats and chunks of UB (`tiling`),
and the two-slot chunk pipeline of the row kernels (`chunk_pipeline`)."""
