"""The matmul's cost models: tiles ranked by GM traffic (`tiling`), whether
A's strip stays in L1 (`residency`), and the timed pipelined schedule
(`pipelined`)."""
