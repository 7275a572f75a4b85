"""Two bands' lone last K fractals in one chunk (`ConvKernel`).

A small-channel conv's K fractals rarely split evenly into chunks: the 7x7
stem has 13 (49 kernel points, 4 a fractal) in chunks of 2, so each band
ended with a chunk of one fractal. That chunk's img2col is short next to
the mads of the chunk before it, and with two L0A halves the next band's
first img2col waits for those mads (82 cycles a band), besides the chunk's
own img2col latency. Here a band whose successor follows in the same
straight code defers its last fractal and its drains; the successor starts
with one chunk holding both bands' last fractals (two img2cols into the two
halves of one L0A buffer, the weights' rows loaded once: both use the same
K row), the deferred band's last mads and drains, then its own first mads,
then its other chunks: two bands take 13 chunks of 2 instead of 14.

The successor's K order starts at the last fractal (the mads accumulate
in another order: the sums may differ in the last bits, as any K order's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from mlir import ir

from npu import ir as nir
from npu.kernels.cce_build import lin


@dataclass(frozen=True)
class Deferred:
    """A band whose last K fractal and drains wait for the next band."""

    n: int
    band: object  # band_maps.Band
    ho0: object  # int | ir.Value
    fm: ir.Value
    m1: int
    tiles: tuple
    l0c: tuple
    s0: int
    ns: int


class TailPairs:
    """Mixin of `ConvKernel` (its `s`, `t`, `l0a`, `l0b`, `frac`, `image`,
    `epilogue`, `loads`, `need`, `ahead`, `img2col`, `load_weights`, `drain_tile`
    and `by_block`)."""

    held: Deferred | None = None

    def pairs_tails(self) -> bool:
        """Whether consecutive bands share a chunk of their last fractals:
        a small-channel conv of one super tile with resident weights whose
        K fractals leave one over in chunks of kc >= 2."""
        s, t = self.s, self.t
        kc = min(t.kc, s.k1)
        return (s.small and not s.diagonal and t.weights_resident and s.co1 <= t.n1
                and kc >= 2 and s.k1 % kc == 1)

    def shared_tail(self, fm, band, tiles, l0c, w_l1, pitch: int, col: int, m1: int,
                    chunk: int) -> int:
        """The chunk of the deferred band's last fractal and this band's
        (first in its K order); the deferred band drains between them.
        Returns the chunk count."""
        d, kp, f = self.held, self.s.k1 - 1, self.frac
        self.held = None
        self.need(0, self.s.k1)  # one super tile (`pairs_tails`): its last row's copies
        a, b = self.l0a[chunk % 2], self.l0b[chunk % 2]
        parts = ((d.fm, d.band, 0, d.m1), (fm, band, d.m1, m1))
        for src, bnd, at, rows in parts:
            self.img2col(src, nir.subview(a, [at * f], [rows * f]), bnd, kp, 0, 1, rows)
        for t0, n1 in tiles:
            self.load_weights(w_l1, b, pitch, col + t0, kp, 1, n1, t0)
        # as the last chunk of a band: each half drains right after its mads
        # (an image conv's too where it drains by block, `by_block`: V then
        # starts behind the first half's mads; stem image 48,260 -> 48,225)
        early = len(d.tiles) > 1 and (self.image is None and self.epilogue is None
                                      and not self.loads or self.by_block(d.n, d.ho0, d.band.rows))
        for last, (at, rows, ts, cs) in enumerate(((0, d.m1, d.tiles, d.l0c),
                                                    (d.m1, m1, tiles, l0c))):
            for (t0, n1), c in zip(ts, cs):
                nir.create_op("cce.mad", [nir.subview(a, [at * f], [rows * f]),
                                          nir.subview(b, [t0 * f], [n1 * f]), c],
                              m=rows * 16, n=f // 16, k=n1 * 16, accumulate=not last)
                if early and not last:
                    self.drain_tile(c, d.n, d.s0, t0, n1, d.ns, d.ho0, d.band.rows, d.m1, False)
            if not early and not last:
                for (t0, n1), c in zip(d.tiles, d.l0c):
                    self.drain_tile(c, d.n, d.s0, t0, n1, d.ns, d.ho0, d.band.rows, d.m1, False)
        if self.loads:
            self.ahead()
        return chunk + 1



@dataclass
class StraightBands:
    """Straight code's bands (`ConvKernel.emit_rows`): one call per band,
    emitted in order on `flush` (its map and first row made as it is
    emitted: the IR as without pairs), flushed before a loop; a band
    followed by another here shares its last chunk with it when the conv
    `pairs_tails`."""

    kernel: object  # kernel.ConvKernel
    base: object  # int | ir.Value: the run's first output row
    calls: list[Callable[[bool], None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.pairs = self.kernel.pairs_tails()

    def add(self, n: int, band, h0: int, fm: ir.Value | None = None,
            pair: list | None = None, k: int = 0) -> None:
        """Band `band` of image `n` from row `h0`: its map `fm`, or the k-th
        band of a run whose maps, made with its first band, go in turn in `pair`."""
        kernel = self.kernel

        def map_of() -> ir.Value:
            if pair is not None and not pair:
                # Two maps in turn (three for a small-channel conv: its long
                # map copies ran behind its bands' img2col; stem 7x7/2: 56,224
                # -> 54,928 cycles), live across the run: a map of its own per
                # band let npu-plan-memory give band b+1 band b's L1, so its
                # copies waited for band b's last img2col (ResNet-18 layer1
                # conv2: a GM latency and the map, 1,246 cycles a band).
                pair.extend([kernel.map_buffer(band) for _ in range(3 if kernel.s.small else 2)]
                            if kernel.image is None else [None])
            return pair[k % len(pair)] if pair is not None else fm

        def call(defer: bool, ready: bool) -> None:
            kernel.emit_band(n, band, lin((self.base, 1), (h0, 1)), map_of(), defer=defer,
                             map_ready=ready)

        def issue() -> None:
            kernel.issue_map(n, band, lin((self.base, 1), (h0, 1)), map_of())
        self.calls.append((call, issue))

    def flush(self) -> None:
        """Bands in order. Where the drains load operands (a residual), each
        band's map copies go out during the band before it, after its first
        super tile (`ConvKernel.next_map`), not behind all of its drains'
        loads on MTE2 (ResNet-50's layer3 conv3 with its residual: the cube
        idle 1.4k cycles for the second band's map)."""
        kernel, ready = self.kernel, False
        early = kernel.image is None and kernel.epilogue is not None and bool(kernel.epilogue.loaded)
        for k, (call, _) in enumerate(self.calls):
            nxt = self.calls[k + 1][1] if early and k + 1 < len(self.calls) else None
            kernel.next_map = nxt
            call(self.pairs and k + 1 < len(self.calls), ready)
            ready = nxt is not None and kernel.next_map is None
        kernel.next_map = None
        self.calls.clear()
