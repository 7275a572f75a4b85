"""P's NaN guard in the fused attention (`npu.costmodel.attention.guard`):
the rows whose max is not finite are zeroed in P before P.V, so the cube
makes their context 0 @ V exactly, and their row sum (0) is raised to 1/2
before the division (any other row's sum is at least 1: its max scores
exp(0)). Online, a tile that makes the running max non-finite also zeroes
the correction alpha (exp(inf - inf) would be NaN), so the earlier tiles'
context becomes their 0 @ V too."""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.vector.recipes import Compute
from npu.kernels.cce_build import sub
from npu.kernels.vector_compute import emit_flat_run

# A guarded row's sum is 0 and every other row's at least 1: max(sum, this)
# changes only the guarded rows, whose context 0 @ V it then divides.
GUARDED_SUM = 0.5


class NanGuard:
    """Mixed into the kernel with `SoftmaxSteps` (`a`, `t`, `apply`,
    `constant_block`)."""

    def non_finite_mask(self, values: ir.Value, count: int, elem: str) -> ir.Value:
        """i8 [count]: 1 where `values` (a max, or a multiple of it) is not
        finite: x - x is NaN exactly there, and NaN compares unequal."""
        diff = nir.alloc([count], elem, "ub")
        emit_flat_run(Compute("binary", vop="cce.vsub"), self.t, count, (diff, elem),
                      [(values, elem), (values, elem)])
        mask = nir.alloc([count], "i8", "ub")
        emit_flat_run(Compute("cmp", predicate="ne"), self.t, count, (mask, "i8"),
                      [(diff, elem), (diff, elem)])
        return mask

    def guard_rows(self, shift: ir.Value, rows: int, elem: str) -> None:
        """The mask of P's guarded rows over one [rows, 16] slab, from the
        shift broadcast over it (a multiple of the row max, or its offset)."""
        if self.a.guard:
            self.guarded = self.non_finite_mask(shift, rows * 16, elem)

    def zero_guarded(self, p: ir.Value, j0: int, j1: int, slab: int) -> None:
        """The guarded rows of P's f16 key slabs j0..j1-1 set to 0."""
        if not self.a.guard:
            return
        zero = self.constant_block(0.0, "f16")
        for j in range(j0, j1):
            pj = sub(p, j * slab, slab)
            emit_flat_run(Compute("select"), self.t, slab, (pj, "f16"),
                          [(self.guarded, "i8"), zero, (pj, "f16")])

    def guard_alpha(self, alpha: ir.Value, running: ir.Value, rows: int) -> None:
        """alpha = 0 on the rows whose running max (f32 `running`, or a
        multiple of it) is not finite."""
        if not self.a.guard:
            return
        mask = self.non_finite_mask(running, rows, "f32")
        emit_flat_run(Compute("select"), self.t, rows, (alpha, "f32"),
                      [(mask, "i8"), self.constant_block(0.0), (alpha, "f32")])

    def guard_sums(self, at: int, slab: int) -> None:
        """The row sums (the context's slab at `at`) of guarded rows: 0 -> 1/2."""
        if self.a.guard:
            self.apply(Compute("scalar", vop="cce.vmaxs", scalar=GUARDED_SUM), self.context,
                       [self.context], slab, offsets=(at, at))
