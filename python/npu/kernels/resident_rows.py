"""Resident rows: one-pass fused chunks of one long row each (a vocabulary
softmax), too long for a chunk of whole rows (`resident_fit.resident_fit`).

Each chunk holds one row, stored from the buffer it was loaded into, in two
slots taken by turns (rows of more than half of UB: two slots that share
the bytes of the row's last stored piece, or one slot). A slot's row is
loaded, computed and stored before the next-but-one row can be loaded into
it, so whole-row transfers would
leave the vector unit waiting for load + store of every other row. The row
moves in `PIECES` pieces instead, and the last step before a store (a
lane-wise op) runs piece by piece with each piece stored as soon as it is
computed: the next row's load into the slot follows the stores piece by
piece (npu-insert-sync orders them by the bytes they touch), and the vector
unit, which does the most work per row, runs back to back. Where the slots
share bytes, a row stores that piece first and the next row loads it last
(`shared_last`): MTE2 loads in order, so only that piece waits.

A mixin of `FusedKernel` (npu-lower-fused): needs `n`, `granule`, `flat`,
`fixed`, `g` and `elementwise`.
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.fusion import rows as fusion
from npu.kernels.cce_build import copy, lin, sub
from npu.kernels.resident_fit import PIECES, resident_pieces

# Pieces a resident row is loaded in (`PIECES`: stored in, and its last step
# computed in): each load piece waits for the last store piece over its bytes
# from two rows before, one loop-carried flag pair each, and npu-insert-sync
# merges a loop's carried pairs of one pipe pair into one (the load of a
# slot then waits for the other slot's stores too) past half its event ids.
LOAD_PIECES = 2
# The key of a slot (`FusedKernel.slot_buffers`) saying where its row shares
# bytes with the other slot's: "end" or "start" (`ResidentFit.overlap`).
OVERLAP_KEY = ("overlap",)


class ResidentRows:
    resident: bool = False
    overlap: int = 0  # elements the two slots' rows share (`resident_fit.ResidentFit`)
    resident_slots: int = 0  # slots of the resident rows (`resident_fit.ResidentFit`)
    overlap_side: str | None = None  # this chunk's slot: "end" or "start" of the shared bytes
    tail: int = 0  # elements of a row's tail block (`fusion.tail_block`), 0: whole blocks
    gm_n: int | None = None  # the GM row length when the UB row has a tail block

    def resident_pieces(self, pieces: int = PIECES) -> list[tuple[int, int]]:
        """(first column, width) of each of about `pieces` pieces of the UB row."""
        return resident_pieces(self.n, pieces)

    @property
    def main(self) -> int:
        """Columns of a UB row that are the GM row's whole blocks."""
        return self.n - self.tail if self.tail else self.n

    def gm_columns(self, name: str, o: fusion.Operand, buf: ir.Value, start, j0: int,
                   w: int) -> None:
        """Copy columns [j0, j0 + w) of a UB row (`buf` holds the row from
        column 0) from / to its GM row starting at element `start`; the
        columns of the tail block go to the GM row's last `tail` elements,
        before the whole blocks' (their first lanes repeat the last of the
        whole blocks, which may hold a reduction's identity in UB: the
        copy of the whole blocks, later on the same pipe, writes them)."""
        load = name == "cce.copy_gm_to_ub"
        gm = self.flat[o.value]
        parts = []
        if self.tail and j0 + w > self.main:
            n = self.gm_n or self.n
            parts.append((lin((start, 1), (n - self.tail, 1)), self.main, self.tail))
        if j0 < self.main:
            parts.append((lin((start, 1), (j0, 1)), j0, min(j0 + w, self.main) - j0))
        for at, k0, width in parts:
            view, part = sub(gm, at, width), sub(buf, k0, width)
            src, dst = (view, part) if load else (part, view)
            copy(name, src, dst, 1, width * o.es // self.granule)

    def move_row(self, name: str, o: fusion.Operand, buf: ir.Value, row0) -> None:
        """Copy one row of a full operand between GM and UB, piece by piece
        (a store's tail block first)."""
        start = lin((row0, self.gm_n or self.n))
        load = name == "cce.copy_gm_to_ub"
        pieces = self.resident_pieces(LOAD_PIECES if load else PIECES)
        if load and self.overlap_side is not None:
            pieces = self.shared_last(pieces)
        for j0, w in pieces if load else pieces[-1:] + pieces[:-1]:
            self.gm_columns(name, o, buf, start, j0, w)

    def shared_last(self, pieces: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Load pieces cut where the row's bytes shared with the other slot
        begin or end, those bytes last: their load waits for the other row's
        store of them (its first), and MTE2 loads in order."""
        n, ov = self.n, self.overlap
        shared = (n - ov, ov) if self.overlap_side == "end" else (0, ov)
        lo, hi = shared[0], shared[0] + ov
        out = []
        for j0, w in pieces:
            for a, b in ((j0, min(j0 + w, lo)), (max(j0, hi), j0 + w)):
                if b > a:
                    out.append((a, b - a))
        return out + [shared]

    def load_row_operand(self, o: fusion.Operand, buf: ir.Value) -> None:
        """A row operand (gamma, beta) laid out as the rows are."""
        self.gm_columns("cce.copy_gm_to_ub", o, buf, 0, 0, self.n)

    def mask_tail(self, src: fusion.Operand, buf: ir.Value, identity: float) -> None:
        """The lanes of the tail block that repeat the whole blocks' last
        elements set to `identity`, so that a reduction over the UB row
        counts each element once."""
        if not self.tail:
            return
        repeated = self.tail - (self.gm_n or self.n) % self.tail
        nir.create_op("cce.vdup", [sub(buf, self.main, repeated)], repeat=1, mask=repeated,
                      dst_blk_stride=1, dst_rep_stride=8, scalar=identity)

    def split_store(self, step) -> bool:
        """Whether `step` is computed piece by piece, each piece stored as it
        is done: a lane-wise op whose result leaves (not deferred, not in Nz)."""
        m = step.op
        return (self.resident and step.kind == "op" and m.compute is not None
                and m.out.kind == "full" and m.out.root in self.g.leaving
                and m.out.root not in self.deferred and m.out.root not in self.g.nz)

    def elementwise_stored(self, m: fusion.RowOp, bufs: dict, expanded: dict, out: ir.Value,
                           row0) -> None:
        """`m` over each piece of the row, each piece stored right after (the
        last piece, which holds the tail block, first)."""
        fixed = dict(self.fixed)
        start = lin((row0, self.gm_n or self.n))
        pieces = self.resident_pieces()
        for j0, w in pieces[-1:] + pieces[:-1]:
            self.width = w
            part = dict(bufs)
            for i in m.ins:
                if i.kind == "full":
                    part[i.root] = sub(bufs[i.root], j0, w)
                elif i.kind == "row":
                    self.fixed[i.root] = sub(fixed[i.root], j0, w)
            self.elementwise(m, part, expanded, sub(out, j0, w), 1, 1)
            bufs.update((k, v) for k, v in part.items() if isinstance(k, tuple))  # reciprocals
            self.gm_columns("cce.copy_ub_to_gm", m.out, out, start, j0, w)
        self.width = self.n
        self.fixed.update(fixed)
