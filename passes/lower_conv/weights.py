"""The weights of a conv's kernel (`kernel.py`): fractal-Z in GM -> L1,
resident for the whole conv (in pieces that arrive ahead of the chunks
needing them) or streamed per super tile of Cout blocks (two L1 buffers in
turn), and L1 -> L0B per reduction chunk."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv.first_band import ahead_pieces
from npu.costmodel.conv.streamed import STREAMED_PARTS
from npu.kernels.cce_build import copy, copy_bursts

FRAC = 256  # elements of one f16 (or f32, i32) fractal
FRAC_INT8 = 512  # elements of one int8 fractal (16 x 32: 512 bytes, like an f16 one)
# On the resident weights' L1 alloc: npu-prefetch finds the conv's pieces by it
# (the copies into it, grouped by their offset there, in order).
RESIDENT_ATTR = "npu.resident_weights"
# On the first of streamed weights' two L1 buffers: npu-prefetch may load the
# first tile's copies (those before its first read) during the previous op.
STREAMED_ATTR = "npu.streamed_weights"


@dataclass
class Load:
    """A copy to L1 the first band's chunks wait for: a weight piece or a
    map block, by (super tile, K1 row) of the first chunk reading it."""

    first: tuple[int, int]
    end: tuple[int, int] | None  # a weight piece's (super tile, K1 row past it)
    copy: Callable[[], None]

    @property
    def order(self) -> tuple:
        return (self.first, self.end is not None)


class ConvWeights:
    """Mixin of `ConvKernel` (its `g`, `s`, `t`, `wz`, `target`, and `in_type` /
    `frac`: the cube's input type and its fractals' elements)."""

    def plan_weights(self, share: bool = False) -> None:
        """The weights' L1 buffers, and the resident copy's pieces (the first
        goes out with the first band's map: `first_piece`); `share`: the
        conv is one core's run of rows (`first_tile_whole`)."""
        s, t = self.s, self.t
        self.w_l1 = None
        # Copies not issued yet, in the order the first band's chunks need them
        self.loads: list[Load] = []
        self.map_ends: list[int] = []  # K1 rows a deferred map's runs of blocks end at
        # Streamed weights: two L1 buffers, super tiles alternating between
        # them, so a super tile's weights load while the previous one's feed
        # the cube (per-tile buffers could share one address once planned).
        self.w_tiles = [] if t.weights_resident else [
            nir.alloc([s.k1 * min(t.n1, s.co1) * self.frac], self.in_type, "l1") for _ in range(2)]
        if self.w_tiles:
            self.w_tiles[0].owner.attributes[STREAMED_ATTR] = ir.UnitAttr.get()
        self.w_turn = 0
        self.tile_major = False
        self.streamed_first = not t.weights_resident
        if t.weights_resident:
            # Super tile by super tile ([tile][K1][its Cout blocks][16][C0] in L1,
            # the order the first band uses them), the first tile in pieces
            # (`pieces_of_rows`): the first chunk waits for its own rows only,
            # the first band's tile s for tiles 0..s only (in K1 row order
            # over all of Cout, its first tile waited for every weight: 1x1
            # 256->1024 14, 512 KB); when the first band is not in a loop, the
            # rest follow its input on MTE2 (`flush_weights`).
            self.w_l1 = nir.alloc([s.k1 * s.co1 * self.frac], self.in_type, "l1")
            # npu-prefetch may load its first pieces during the previous op
            self.w_l1.owner.attributes[RESIDENT_ATTR] = ir.UnitAttr.get()
            # Tile by tile only where it pays for the flags (each holds MTE2
            # for a GM latency): dw 3x3/2 144 56 21,894 in K1 rows, 22,618 by tile.
            self.tile_major = t.n1 < s.co1 and self.weights_hold_first_band()
            width = t.n1 if self.tile_major else s.co1
            whole = not share and self.first_tile_whole()
            for tile, s0 in enumerate(range(0, s.co1, width)):
                self.queue_pieces(tile, lambda k0, rows, s0=s0:
                                  self.copy_weight_rows(s0, k0, rows, width),
                                  self.pieces_of_rows() if tile == 0 and not whole else None)
        self.pieces = len(self.loads)

    def mte2_bound(self) -> bool:
        """Whether the tiling's estimate has MTE2 at least as busy as the cube
        and MTE1: then a weight piece's flag costs the conv a GM latency."""
        pipes = dict(self.t.pipes)
        return pipes.get("MTE2", 0) >= pipes.get("cube+MTE1", 0)

    def weights_hold_first_band(self) -> bool:
        """Whether the conv is one band (its only band uses the tiles in
        turn over the whole conv), or loading all the weights takes at least
        half the first band's compute (estimated): only then does the first
        band wait for later super tiles' weights long enough to pay their
        own flags (1x1 256->1024 14: 512 KB in 8.2k cycles against ~9.4k;
        dw 3x3/2 144 56: 41 KB in 650 against ~2.1k)."""
        s, t = self.s, self.t
        bands = s.batch * -(-s.ho // t.rows)
        load = s.k1 * s.co1 * self.target.fractal_bytes(2) / self.target.path("gm_to_l1").bytes_per_cycle
        return bands == 1 or 2 * load >= dict(t.pipes).get("cube+MTE1", 0) / bands

    def pieces_of_rows(self) -> list[tuple[int, int]]:
        """(first K1 row, rows) of the weights' pieces (`ConvShape.first_pieces`)."""
        t = self.t
        return self.s.first_pieces(t.m1, t.n1, t.kc, self.target, self.s.tapers(
            t.rows, t.n1, t.weights_resident, self.mte2_bound()))

    def first_tile_whole(self) -> bool:
        """Whether resident weights' first super tile loads in one run (with
        the first band's map), not in pieces: tile by tile (`tile_major`),
        where the first band's work on it takes no longer than the second
        tile's weights take to land after it (their transfer and a GM
        latency). The cube then waits for the second tile whatever the first
        tile's pieces, and each piece's flag only holds MTE2 for a GM latency
        more before the second tile may start (1x1/2 256->512 56: 1.8k cycles
        of cube work on the first tile against 2.4k for the second's 128 KB;
        34,369 cycles in pieces, 33,669 whole). The first bands' maps still go
        out in runs as `pieces_of_rows` would have the pieces (`defer_map`):
        with the map whole too, 33,905. Not on a core's share of the conv
        (its rows or its slice of Cout): there npu-prefetch takes the first
        pieces during the previous op while they fit its idle MTE2 time, and
        a whole first tile did not (ResNet-50 on 32 cores 320,227 ->
        323,683 cycles; 320,739 with the first piece apart and the rest of
        the tile whole, which on one core gives 34,019)."""
        s, t = self.s, self.t
        if not self.tile_major or s.co1 <= t.n1 or self.row_pitch() != s.co1 * 16:
            return False
        target = self.target
        kc = min(t.kc, s.k1)
        work = (target.cube_cycles(t.m1 * s.k1 * t.n1)
                + -(-s.k1 // kc) * target.mad_latency)
        path = target.path("gm_to_l1")
        second = s.k1 * min(t.n1, s.co1 - t.n1) * self.frac * nir.element_bytes(self.in_type)
        return work <= path.latency + second / path.bytes_per_cycle

    def ahead_pieces(self, m1: int) -> int:
        """How many weight pieces go out in one run after a band's first
        chunk of m1 M fractals (without `split_map`): far enough ahead of
        their chunks to hide the GM latency and their own transfer."""
        s, t = self.s, self.t
        return ahead_pieces(m1, min(t.kc, s.k1), min(t.n1, s.co1), s.diagonal, self.target)

    def map_in_blocks_pays(self, block_bytes: int, m1: int) -> bool:
        """Whether a band's map in blocks beside the weight pieces
        (`kernel.defer_map`) is estimated faster than the whole map in the
        first run, both with the pieces loaded in the conv and with them
        loaded before it (npu-prefetch takes a conv's first pieces during the
        op before it; on many cores most of them).

        In blocks the cube starts after the first piece's blocks, not the
        whole map, but each run's flag holds MTE2 for a GM latency. Loaded in
        the conv, each piece is its own run (the `ahead_pieces` run is gone):
        max(MTE2 + the extra runs' latencies, latency + the first blocks +
        the cube) against max(MTE2, latency + the whole map + the cube), from
        the tiling's pipes. Prefetched, the blocks go out a run and a latency
        at a time, the cube working through a run's rows once it lands
        (`_blocks_landing`), against the latency, the whole map and the band's
        cube work. On one core the cube has the slack (3x3/2 128->128 56:
        33,950 against 30,814 loaded, 11,438 against 9,028 prefetched); a
        core's share of 32 is one band and prefetched in a model: ResNet-50
        on 32 cores 320,739 -> 332,503 cycles with every map in blocks
        (3x3 128->128 28: 2,682 against 2,874 loaded, a phase of the model
        4,556 -> 5,382; 3x3 256->256 14: 4,026 against 4,036 prefetched,
        5,824 -> 6,464). The blocks must win both by a GM latency: MobileNetV2's
        1x1 960->160 and 320->1280 on 7x7, ahead by 65 and 25 estimated, made
        it 183,637 -> 184,157 on 32 cores (one core's wins: 453 and more)."""
        s, t, g = self.s, self.t, self.g
        path = self.target.path("gm_to_l1")
        pieces = self.pieces_of_rows()
        runs = len(pieces) - min(len(pieces), 2 + max(0, len(pieces) - 1 - self.ahead_pieces(m1)))
        first = min(s.c1, -(-pieces[0][1] // (g.kh * g.kw)))  # blocks the first piece reads
        pipes = dict(t.pipes)
        mte2, cube = pipes.get("MTE2", 0), pipes.get("cube+MTE1", 0)
        map_cycles = s.c1 * block_bytes / path.bytes_per_cycle
        whole = max(mte2, path.latency + map_cycles + cube)
        blocks = max(mte2 + runs * path.latency,
                     path.latency + first * block_bytes / path.bytes_per_cycle + cube)
        band_cube = cube / max(1, self.run_bands)
        prefetched = self._blocks_landing(pieces, block_bytes, band_cube / s.k1)
        margin = path.latency  # the estimate's error: see the docstring
        return (blocks + margin < whole
                and prefetched + margin < path.latency + map_cycles + band_cube)

    def _blocks_landing(self, pieces: list[tuple[int, int]], block_bytes: int,
                        row_cycles: float) -> float:
        """When the cube ends a band whose map goes out in runs of the blocks
        each piece's rows read, its pieces already in L1: a run lands a GM
        latency and its bytes after the one before; the cube works through a
        piece's rows (`row_cycles` each) once its run lands."""
        path = self.target.path("gm_to_l1")
        s, g = self.s, self.g
        land = done = 0.0
        sent = 0  # blocks sent in earlier runs
        for k0, rows in pieces:
            end = min(s.c1, -(-(k0 + rows) // (g.kh * g.kw)))
            land += path.latency + (end - sent) * block_bytes / path.bytes_per_cycle
            done = max(done, land) + row_cycles * rows
            sent = end
        return done

    def first_piece(self) -> None:
        """The resident copy's first piece, with the first band's map blocks
        it needs: one run of loads and one GM latency for both. (Before them,
        its flag held MTE2 for the latency before the map could start, on
        every core after a chip barrier.)"""
        if self.loads and (len(self.loads) == self.pieces or self.split_map):
            self.ahead()

    def queue_pieces(self, tile: int, copy_rows, parts: list[tuple[int, int]] | None) -> None:
        """Queue super tile `tile`'s K1 rows: `copy_rows(k0, rows)` per
        (first row, rows) of `parts`, or all in one copy (None)."""
        for k0, rows in parts or [(0, self.s.k1)]:
            self.queue(Load((tile, k0), (tile, k0 + rows),
                            lambda k0=k0, rows=rows: copy_rows(k0, rows)))

    def thirds(self) -> list[tuple[int, int]]:
        """A later streamed tile's pieces: whole chunks, STREAMED_PARTS of them."""
        k1 = self.s.k1
        kc = min(self.t.kc, k1)
        chunks = -(-k1 // kc)
        n = min(STREAMED_PARTS, chunks)
        bounds = [min(k1, -(-chunks * i // n) * kc) for i in range(n + 1)]
        return [(a, b - a) for a, b in zip(bounds, bounds[1:]) if b > a]

    def queue(self, load: Load) -> None:
        """Add `load` in need order (a map block before a piece needed alike)."""
        at = len(self.loads)
        while at and self.loads[at - 1].order > load.order:
            at -= 1
        self.loads.insert(at, load)

    def need(self, tile: int, k_end: int) -> None:
        """Issue every queued copy that super tile `tile`'s K1 rows below
        `k_end` read (before their consumers in program order)."""
        while self.loads and self.loads[0].first < (tile, k_end):
            self.loads.pop(0).copy()

    def ahead(self) -> None:
        """Issue the next weight piece and the map blocks its rows read: one
        run of copies on MTE2 (one flag: sink-sets puts it after the run)."""
        piece = next((ld for ld in self.loads if ld.end is not None), None)
        if piece is not None:
            # the map blocks its chunks read go first in the run (as a band's
            # map went before its weights)
            for block in [ld for ld in self.loads if ld.end is None and ld.first < piece.end]:
                self.loads.remove(block)
                block.copy()
            self.need(*piece.end)
            return
        # map blocks only (the band after the first): in runs as the pieces go
        while self.map_ends and self.loads and self.map_ends[0] <= self.loads[0].first[1]:
            self.map_ends.pop(0)
        self.need(0, self.map_ends.pop(0)) if self.map_ends else self.flush_weights()

    def tile_weights(self, s0: int, ns: int) -> tuple[ir.Value, int, int]:
        """(L1 buffer, its row pitch in blocks of 16, first column) of the
        weights of the super tile of `ns` Cout blocks at s0: the resident
        copy, or the streamed buffer of its turn, loaded now."""
        if self.w_l1 is not None and not self.tile_major:
            return self.w_l1, self.s.co1, s0
        if self.w_l1 is not None:
            return nir.subview(self.w_l1, [s0 * self.s.k1 * self.frac],
                               [ns * self.s.k1 * self.frac]), ns, 0
        w_l1 = self.w_tiles[self.w_turn]
        self.w_turn ^= 1
        if self.streamed_pieces:
            # In pieces, like resident weights: the tile's first chunk waits
            # for its own rows, not the whole tile (3x3 256->256 14: the cube
            # idled 7k cycles for 295 KB at the start, 3.2k before the second
            # tile). The conv's first tile as the first band's resident
            # weights, later ones in STREAMED_PARTS (during the previous tile).
            self.queue_pieces(s0 // self.t.n1, lambda k0, rows:
                              self.copy_tile_weights(w_l1, s0, k0, rows),
                              self.pieces_of_rows() if self.streamed_first else self.thirds())
            self.streamed_first = False
        else:
            self.copy_tile_weights(w_l1, s0)
        return w_l1, ns, 0

    def row_pitch(self) -> int:
        """32-byte blocks from one K1 row of the fractal-Z weights to the
        next: Cout1 * 16, or more in one core's slice of a conv split over
        its output channels (npu-split-cores)."""
        strides, _ = nir.memref_layout(self.wz)
        return strides[0] * nir.element_bytes(self.in_type) // 32

    def copy_weight_rows(self, s0: int, k0: int, rows: int, width: int) -> None:
        """K1 rows [k0, k0 + rows) of the `width` Cout blocks at s0 (a super
        tile, or all of Cout) -> their place in the resident L1 copy: one
        burst when the rows are contiguous in GM, else one per row."""
        s = self.s
        frac = self.frac
        ns = min(width, s.co1 - s0)
        dst = nir.subview(self.w_l1, [(s0 * s.k1 + k0 * ns) * frac], [rows * ns * frac])
        gap = self.row_pitch() - ns * 16
        if gap == 0:
            src = nir.subview(nir.flatten_memref(self.wz), [k0 * ns * frac], [rows * ns * frac])
            copy("cce.copy_gm_to_l1", src, dst, 1, rows * ns * 16)
        else:
            src = nir.subview(self.wz, [k0, s0, 0, 0], [rows, ns, 16, frac // 16])
            copy_bursts("cce.copy_gm_to_l1", src, dst, rows, ns * 16, src_gap=gap)

    def copy_tile_weights(self, w_l1, s0: int, k0: int = 0, rows: int | None = None) -> None:
        """K1 rows [k0, k0 + rows) (default: all) of the fractal-Z columns of
        the super tile at Cout block s0 -> L1: one burst from weights laid out
        tile by tile (1-D), else one per K1 row."""
        s = self.s
        rows = s.k1 - k0 if rows is None else rows
        ns = min(self.t.n1, s.co1 - s0)
        dst = nir.subview(w_l1, [k0 * ns * self.frac], [rows * ns * self.frac])
        if len(nir.memref_shape(self.wz)) == 1:  # laid out tile by tile (`tile_major_data`)
            src = nir.subview(self.wz, [(s0 * s.k1 + k0 * ns) * self.frac], [rows * ns * self.frac])
            copy("cce.copy_gm_to_l1", src, dst, 1, rows * ns * 16)
            return
        wsrc = nir.subview(self.wz, [k0, s0, 0, 0], [rows, ns, 16, self.frac // 16])
        copy_bursts("cce.copy_gm_to_l1", wsrc, dst, rows, ns * 16,
                    src_gap=self.row_pitch() - ns * 16)

    def flush_weights(self) -> None:
        while self.loads:
            self.loads.pop(0).copy()

    def load_weights(self, w_l1, l0b, pitch: int, col: int, kp0: int, kcj: int, n1: int,
                     at: int) -> None:
        """Fractal-Z rows kp0..kp0+kcj, Cout blocks col..col+n1 -> L0B (Zn [kcj, n1])
        from fractal `at`: whole runs when the rows are contiguous, else one
        load per row or per column (whichever is fewer instructions)."""
        mr = self.target.max_repeat
        if n1 == pitch:
            total = kcj * n1
            for f0 in range(0, total, mr):
                rep = min(mr, total - f0)
                self.load(w_l1, l0b, kp0 * pitch + f0, at + f0, rep, 1, 1)
        elif kcj <= n1:
            for r in range(kcj):
                self.load(w_l1, l0b, (kp0 + r) * pitch + col, at + r * n1, n1, 1, 1)
        else:
            for c in range(n1):
                self.load(w_l1, l0b, kp0 * pitch + col + c, at + c, kcj, pitch, n1)

    def load(self, src, dst, src_frac: int, dst_frac: int, repeat: int, src_stride: int,
             dst_stride: int) -> None:
        frac = self.frac
        src_len = ((repeat - 1) * src_stride + 1) * frac
        dst_len = ((repeat - 1) * dst_stride + 1) * frac
        nir.create_op("cce.load_l1_to_l0b", [nir.subview(src, [src_frac * frac], [src_len]),
                                             nir.subview(dst, [dst_frac * frac], [dst_len])],
                      repeat=repeat, src_stride=src_stride, dst_stride=dst_stride, transpose=False)
