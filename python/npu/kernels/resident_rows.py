"""Resident rows: one-pass fused chunks of one long row each (a vocabulary
softmax), which fit UB only twice over (`fused_chunk.resident_fits`).

Each chunk holds one row, stored from the buffer it was loaded into, in two
slots taken by turns. A slot's row is loaded, computed and stored before
the next-but-one row can be loaded into it, so whole-row transfers would
leave the vector unit waiting for load + store of every other row. The row
moves in `PIECES` pieces instead, and the last step before a store (a
lane-wise op) runs piece by piece with each piece stored as soon as it is
computed: the next row's load into the slot follows the stores piece by
piece (npu-insert-sync orders them by the bytes they touch), and the vector
unit, which does the most work per row, runs back to back.

A mixin of `FusedKernel` (npu-lower-fused): needs `n`, `granule`, `flat`,
`fixed`, `g` and `elementwise`.
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.fusion import rows as fusion
from npu.kernels.cce_build import copy, lin, sub

# Pieces a resident row is stored in (and its last step computed in), and
# loaded in: each load piece waits for the last store piece over its bytes
# from two rows before, one loop-carried flag pair each, and npu-insert-sync
# merges a loop's carried pairs of one pipe pair into one (the load of a
# slot then waits for the other slot's stores too) past half its event ids.
PIECES = 8
LOAD_PIECES = 2
# Piece widths are multiples of this many elements (whole f16 and f32 repeats).
PIECE_STEP = 128


class ResidentRows:
    resident: bool = False

    def resident_pieces(self, pieces: int = PIECES) -> list[tuple[int, int]]:
        """(first column, width) of each of about `pieces` pieces of a row:
        whole repeats but the last."""
        n = self.n
        width = max(PIECE_STEP, -(-n // (pieces * PIECE_STEP)) * PIECE_STEP)
        return [(j0, min(width, n - j0)) for j0 in range(0, n, width)]

    def move_row(self, name: str, o: fusion.Operand, buf: ir.Value, row0) -> None:
        """Copy one row of a full operand between GM and UB, piece by piece."""
        gm = self.flat[o.value]
        load = name == "cce.copy_gm_to_ub"
        for j0, w in self.resident_pieces(LOAD_PIECES if load else PIECES):
            view = sub(gm, lin((row0, self.n), (j0, 1)), w)
            part = sub(buf, j0, w)
            src, dst = (view, part) if load else (part, view)
            copy(name, src, dst, 1, w * o.es // self.granule)

    def split_store(self, step) -> bool:
        """Whether `step` is computed piece by piece, each piece stored as it
        is done: a lane-wise op whose result leaves (not deferred, not in Nz)."""
        m = step.op
        return (self.resident and step.kind == "op" and m.compute is not None
                and m.out.kind == "full" and m.out.root in self.g.leaving
                and m.out.root not in self.deferred and m.out.root not in self.g.nz)

    def elementwise_stored(self, m: fusion.RowOp, bufs: dict, expanded: dict, out: ir.Value,
                      row0) -> None:
        """`m` over each piece of the row, each piece stored right after."""
        fixed = dict(self.fixed)
        gm = self.flat[m.out.value]
        for j0, w in self.resident_pieces():
            self.width = w
            part = dict(bufs)
            for i in m.ins:
                if i.kind == "full":
                    part[i.root] = sub(bufs[i.root], j0, w)
                elif i.kind == "row":
                    self.fixed[i.root] = sub(fixed[i.root], j0, w)
            self.elementwise(m, part, expanded, sub(out, j0, w), 1, 1)
            bufs.update((k, v) for k, v in part.items() if isinstance(k, tuple))  # reciprocals
            copy("cce.copy_ub_to_gm", sub(out, j0, w), sub(gm, lin((row0, self.n), (j0, 1)), w),
                 1, w * m.out.es // self.granule)
        self.width = self.n
        self.fixed.update(fixed)
