"""What the IR does, derived from it: which bytes each instruction reads and
writes (`access`; its values and overlap tests in `byte_ranges`, the affine
index expressions they are built of in `affine` and `index_values`, the
bounds of non-affine offsets in `offset_intervals`, and the accesses of
unrolled loop copies in `unrolled`), and the work each instruction gives its
pipe (`pipe_work`), and the contiguous runs a slice moves (`slice_runs`). Used by the buffer planner, the synchronisation pass,
the cost models and the simulator's checks.

Within the package the imports run one way: affine <- index_values <-
byte_ranges, offset_intervals <- access <- unrolled.

May import: `npu.ir`, `npu.target`, `npu.diagnostics`, `npu.dialects`.
"""
