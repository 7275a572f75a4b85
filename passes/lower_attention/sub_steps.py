"""The L0A / L0B slots of the projection's L0 sub-steps
(`npu-lower-attention`'s `ProjectedHeads.job_mads`), taken by turns."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from npu import ir as nir


@dataclass
class SubStepRing:
    """The L0A / L0B slots of the jobs' sub-steps, taken by turns (across
    the jobs of a head when they share one, `run_jobs(one_scope=True)`)."""

    a: list[ir.Value]
    b: list[ir.Value]
    turn: int = 0

    def next(self, a_blocks: int) -> tuple[ir.Value, ir.Value]:
        """The next turn's slots, L0A's first `a_blocks` blocks (a row
        tile of fewer rows than the slot's)."""
        a, b = self.a[self.turn % 2], self.b[self.turn % 2]
        self.turn += 1
        if nir.memref_shape(a)[0] != a_blocks:
            a = nir.subview(a, [0, 0, 0], [a_blocks, 16, 16])
        return a, b
