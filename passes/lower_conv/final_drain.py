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

The last super tile goes one accumulator after the other where that pays
(`final_groups`): the first drains whole while the cube does the second's
chunks, and only the second drains in pieces (its V work alone behind the
last mads). The held chunk's first piece's mads sit between the last
chunk's first and other weight loads (`held_step`), so the first piece's
mads wait for its own operands only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

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
    early: int = 0  # its first pieces whose mads are issued already (`held_step`)


class FinalDrain:
    """Mixin of `ConvKernel` (its `s`, `t`, `frac`, `ub` slots, `drains` count,
    `out_type`, `load_weights`, `drain_to_ub` and `store`)."""

    final_held: HeldChunk | None = None

    def final_super(self, n: int, ho0, band, s0: int, defer: bool) -> bool:
        """Whether this is the conv's (or this core's run's) last super tile
        (a static band ending at the last output row of the last image) and
        its accumulators would drain early (no epilogue, no staged map, no
        pending weight loads, not deferred)."""
        s = self.s
        return (isinstance(ho0, int) and ho0 + band.rows >= s.ho and n == s.batch - 1
                and s0 + self.t.n1 >= s.co1 and not defer and self.image is None
                and self.t.accumulators == 2 and self.epilogue is None and not self.loads
                and not self.t.one_store and not s.diagonal)

    def final_pieces(self, n: int, ho0, band, s0: int, kp0: int, kcj: int, k_end: int,
                     kc: int, tiles, defer: bool) -> bool:
        """Whether this chunk is one of the last two of the conv's last super
        tile (`final_super`) and of its last accumulators (`final_groups`),
        of at least 2 * FINAL_BLOCKS blocks in all."""
        ns = min(self.t.n1, self.s.co1 - s0)
        return (self.final_super(n, ho0, band, s0, defer) and kp0 + kcj + kc >= k_end
                and kp0 + kcj <= k_end and tiles[-1][0] + tiles[-1][1] == ns
                and sum(n1 for _, n1 in tiles) >= 2 * FINAL_BLOCKS)

    def final_groups(self, n: int, ho0, band, s0: int, tiles, l0c, m1: int,
                     defer: bool) -> list:
        """(accumulators, their L0C) in the order their chunks go: the conv's
        last super tile (`final_super`) one accumulator after the other,
        each through all its chunks (img2col again for each), where each has
        at least 2 * FINAL_BLOCKS blocks; else all together.

        The drain of a super tile's accumulators (V, ~70 cycles a block of 7
        fractals) is slower than their last two chunks' mads (56): in pieces
        (`final_chunk`) V still started only after the last chunk's loads
        and ran 1.4k cycles behind the last mad. One accumulator after the
        other, the first drains while the cube does the second's chunks, and
        the pieces drain the second only: 1x1/2 256->512 56, 32,574 ->
        32,415 cycles (4 chunk boundaries more, the first accumulator's
        img2col again); 1x1/2 64->256 14, 2,628 -> 2,564."""
        if not (len(tiles) == 2 and self.final_super(n, ho0, band, s0, defer)
                and all(n1 >= 2 * FINAL_BLOCKS for _, n1 in tiles)
                and self.split_pays(tiles[0][1], m1)):
            return [(tiles, l0c)]
        return [([tile], [c]) for tile, c in zip(tiles, l0c)]

    def final_loads(self, b, w_l1, pitch: int, col: int, tiles, kp0: int, kcj: int,
                    between=None) -> None:
        """The chunk's weight rows per piece ([K, N] contiguous per piece);
        `between()` after the first piece's."""
        for k, (p0, nu, _, _) in enumerate(self.pieces_of(tiles, [None] * len(tiles))):
            self.load_weights(w_l1, b, pitch, col + p0, kp0, kcj, nu, kcj * p0)
            if k == 0 and between is not None:
                between()

    def held_step(self, tiles, l0c, m1: int) -> None:
        """The held chunk's first piece's mads, between the last chunk's first
        piece's weight loads and the rest in program order: sync insertion
        then flags the first piece's operands apart (no run of MTE1 loads for
        one flag to sink after), and the first drain starts ~100 cycles sooner
        (V then paces the conv's end: 1x1/2 256->512 56, 32,664 -> 32,574)."""
        h = self.final_held
        if h is None:
            return
        p0, nu, c, u0 = self.pieces_of(tiles, l0c)[0]
        self.held_mad(h, m1, p0, nu, nir.subview(c, [u0 * m1 * FRAC], [nu * m1 * FRAC]))
        self.final_held = replace(h, early=1)

    def split_pays(self, blocks: int, m1: int) -> bool:
        """Whether the first accumulator's drain (`blocks` Cout blocks of m1
        f32 fractals, L0C -> UB on V) takes longer than what its chunks cost
        again: a mad latency each and the img2col of its K rows. 3x3 128->128
        28 (18 chunks of 4 K rows, 14 M fractals) took 32,850 -> 33,070
        cycles split, 1x1/2 256->512 56 (4 chunks, 7 fractals) 32,574 -> 32,415."""
        t, s = self.target, self.s
        kc = min(self.t.kc, s.k1)
        chunks = -(-s.k1 // kc)
        again = chunks * t.mad_latency + s.k1 * m1 * t.fractal_bytes(2) / t.img2col_bytes_per_cycle
        drain = blocks * m1 * t.fractal_bytes(4) / t.path("l0c_to_ub").bytes_per_cycle
        return again < drain

    @staticmethod
    def pieces_of(tiles, l0c) -> list[tuple[int, int, object, int]]:
        """(first block in the super tile, blocks, accumulator, first block in
        it): one block first (V starts soonest) and last (the last store is
        the shortest), FINAL_BLOCKS at a time between, none across two
        accumulators."""
        ns = sum(n1 for _, n1 in tiles)
        inner = max(0, ns - 2)
        sizes = [1] + [min(FINAL_BLOCKS, inner - k) for k in range(0, inner, FINAL_BLOCKS)] + [1]
        bounds, at = [], tiles[0][0]
        for size in sizes[:ns]:
            bounds.append(at)
            at += size
        cuts = sorted(set(bounds) | {t0 for t0, _ in tiles})
        out = []
        for (t0, n1), c in zip(tiles, l0c):
            starts = [b for b in cuts if t0 <= b < t0 + n1] + [t0 + n1]
            out += [(b, e - b, c, b - t0) for b, e in zip(starts, starts[1:])]
        return out

    def held_mad(self, h: HeldChunk, m1: int, p0: int, nu: int, acc) -> None:
        """Chunk `h`'s mad of the nu Cout blocks from p0 into `acc`."""
        f = self.frac
        nir.create_op("cce.mad", [nir.subview(h.a, [0], [m1 * h.kcj * f]),
                                  nir.subview(h.b, [h.kcj * p0 * f], [h.kcj * nu * f]), acc],
                      m=m1 * 16, n=h.kcj * f // 16, k=nu * 16, accumulate=h.accumulate)

    def final_chunk(self, last: HeldChunk, tiles, l0c, m1: int, n: int, s0: int, ho0,
                    rows: int) -> None:
        """The held chunk's and this one's mads piece by piece, each piece
        drained and stored right after its mads."""
        chunks = ([self.final_held] if self.final_held is not None else []) + [last]
        self.final_held = None
        pieces = self.pieces_of(tiles, l0c)
        slots = list(l0c)
        ob = nir.element_bytes(self.out_type)
        for k, (p0, nu, c, u0) in enumerate(pieces):
            acc = nir.subview(c, [u0 * m1 * FRAC], [nu * m1 * FRAC])
            for h in chunks:
                if k >= h.early:
                    self.held_mad(h, m1, p0, nu, acc)
            # each accumulator's pieces in its own slot, where it would drain whole
            slot = self.ub[(self.drains + slots.index(c)) % len(self.ub)]
            ub = nir.subview(slot, [u0 * m1 * FRAC], [nu * m1 * FRAC])
            self.drain_to_ub(acc, ub, s0 + p0, nu, m1)
            self.store(ub, n, s0 + p0, nu, ho0, rows, m1, ob)
        self.drains += len(slots)
