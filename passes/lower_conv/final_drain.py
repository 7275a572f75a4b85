"""The conv's last two chunks in narrow pieces (`ConvKernel`), so its
drain starts long before the last mad.

Every accumulator of a super tile completes only in its last chunk, and its
drain (L0C -> UB, the bias, -> GM) runs on V and MTE3 after that: behind the
conv's last mad, two accumulators of 8 blocks each kept V busy for their
drains and bias (2 x 588 cycles on 7 fractals) and then MTE3 for a store
and its GM latency (1x1/2 256->512 56: 1,740 cycles after the last mad).
Only where the super tile has two accumulators (not a single L0C set's
narrow ones, which already drain one by one) of at least 2 * FINAL_BLOCKS
blocks in all: 1x1 1024->256 14 (single set) 20,330 -> 20,882 in pieces,
3x3 512->512 7 (3 blocks) 85,931 -> 86,039.

In the conv's last super tile the last two chunks load their operands
first (both L0A and L0B halves), their weights per piece (`pieces_of`: a
block first and last, FINAL_BLOCKS between; each piece's [K, N] rows
contiguous); then piece by piece the two chunks' mads (in K order: the sums as before) and the piece's drain
and store. V starts on the first piece after two short mads and works
through the others while the cube does the rest; only the last piece's
small store is left at the end. An accumulator's pieces drain side by
side into the slot it would have drained into whole (with a slot a piece,
slots were reused and each store's flag held MTE3 for a GM latency:
34,341 cycles).
"""

from __future__ import annotations

from dataclasses import dataclass

from npu import ir as nir
from npu.passes.lower_conv.weights import FRAC

# Cout blocks of a piece between the first and last, which take one each
# (1x1/2 256->512 56: 33,333 cycles before; the last chunk alone in pieces
# of 1, 2, 4 blocks 33,130, 32,991, 33,049; the last two chunks, pieces of
# 2: 32,805; one-block first and last pieces: 32,664, of 3 between: 32,667)
FINAL_BLOCKS = 2


@dataclass(frozen=True)
class HeldChunk:
    """The penultimate chunk of the conv's last super tile: loaded, its
    mads waiting for the last chunk's (`FinalDrain.final_chunk`)."""

    a: object  # its L0A half
    b: object  # its L0B half, weights per piece
    kp0: int
    kcj: int
    accumulate: bool  # onto the accumulators' earlier sums (not the first K rows)


class FinalDrain:
    """Mixin of `ConvKernel` (its `s`, `t`, `frac`, `ub` slots, `drains` count,
    `out_type`, `load_weights`, `drain_to_ub` and `store`)."""

    final_held: HeldChunk | None = None

    def final_pieces(self, n: int, ho0, band, s0: int, kp0: int, kcj: int, k_end: int,
                     kc: int, tiles, defer: bool) -> bool:
        """Whether this chunk is one of the last two of the conv's (or this
        core's run's) last super tile (a static band ending at the last
        output row of the last image) and its halves would drain early (no
        epilogue, no staged map, no pending weight loads, not deferred)."""
        s = self.s
        return (isinstance(ho0, int) and ho0 + band.rows >= s.ho and n == s.batch - 1
                and s0 + self.t.n1 >= s.co1 and kp0 + kcj + kc >= k_end and kp0 + kcj <= k_end
                and not defer and len(tiles) > 1 and self.image is None
                and self.t.accumulators == 2 and sum(n1 for _, n1 in tiles) >= 2 * FINAL_BLOCKS
                and self.epilogue is None and not self.loads and not self.t.one_store
                and not s.diagonal)

    def final_loads(self, b, w_l1, pitch: int, col: int, tiles, kp0: int, kcj: int) -> None:
        """The chunk's weight rows per piece ([K, N] contiguous per piece)."""
        for p0, nu, _, _ in self.pieces_of(tiles, [None] * len(tiles)):
            self.load_weights(w_l1, b, pitch, col + p0, kp0, kcj, nu, kcj * p0)

    @staticmethod
    def pieces_of(tiles, l0c) -> list[tuple[int, int, object, int]]:
        """(first block in the super tile, blocks, accumulator, first block in
        it): one block first (V starts soonest) and last (the last store is
        the shortest), FINAL_BLOCKS at a time between, none across two
        accumulators."""
        ns = sum(n1 for _, n1 in tiles)
        inner = max(0, ns - 2)
        sizes = [1] + [min(FINAL_BLOCKS, inner - k) for k in range(0, inner, FINAL_BLOCKS)] + [1]
        bounds, at = [], 0
        for size in sizes[:ns]:
            bounds.append(at)
            at += size
        cuts = sorted(set(bounds) | {t0 for t0, _ in tiles})
        out = []
        for (t0, n1), c in zip(tiles, l0c):
            starts = [b for b in cuts if t0 <= b < t0 + n1] + [t0 + n1]
            out += [(b, e - b, c, b - t0) for b, e in zip(starts, starts[1:])]
        return out

    def final_chunk(self, last: HeldChunk, tiles, l0c, m1: int, n: int, s0: int, ho0,
                    rows: int) -> None:
        """The held chunk's and this one's mads piece by piece, each piece
        drained and stored right after its mads."""
        f = self.frac
        chunks = ([self.final_held] if self.final_held is not None else []) + [last]
        self.final_held = None
        pieces = self.pieces_of(tiles, l0c)
        slots = list(l0c)
        ob = nir.element_bytes(self.out_type)
        for p0, nu, c, u0 in pieces:
            acc = nir.subview(c, [u0 * m1 * FRAC], [nu * m1 * FRAC])
            for h in chunks:
                nir.create_op("cce.mad", [nir.subview(h.a, [0], [m1 * h.kcj * f]),
                                          nir.subview(h.b, [h.kcj * p0 * f], [h.kcj * nu * f]),
                                          acc],
                              m=m1 * 16, n=h.kcj * f // 16, k=nu * 16, accumulate=h.accumulate)
            # each accumulator's pieces in its own slot, where it would drain whole
            slot = self.ub[(self.drains + slots.index(c)) % len(self.ub)]
            ub = nir.subview(slot, [u0 * m1 * FRAC], [nu * m1 * FRAC])
            self.drain_to_ub(acc, ub, s0 + p0, nu, m1)
            self.store(ub, n, s0 + p0, nu, ho0, rows, m1, ob)
        self.drains += len(slots)
