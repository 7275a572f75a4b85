"""The simple schedule of `npu-lower-matmul`: the OS / IS / WS loop nests
(see the package docstring), the reduction loop with its first-step flag,
and `l1-steps` staging for OS."""

from __future__ import annotations

from typing import Callable, Sequence

from mlir import ir
from mlir.dialects import arith

from npu import ir as nir
from npu.costmodel.matmul.fitting import TilingChoice
from npu.passes.lower_matmul.blocks import IndexValue, Operands, Segment, segments


class SimpleSchedule:
    """Mixed into `LowerMatmul` (its options, target and `MatmulBlocks`)."""

    def emit_strategy(self, ops: Operands, choice: TilingChoice) -> None:
        frac = self.target.fractal
        mb, nb, kb = choice.tiles.m // frac, choice.tiles.n // frac, choice.tiles.k // frac
        xs, ss, ys = segments(ops.M1, mb), segments(ops.N1, nb), segments(ops.K1, kb)
        single_step = len(ss) == 1 and ss[0].count == 1
        if choice.strategy == "os" and self.pipelined is not None:
            self.emit_pipelined(ops, choice, self.pipelined)
        elif choice.strategy == "os":
            def os_x(x: IndexValue, m: int) -> None:
                def os_y(y: IndexValue, k: int) -> None:
                    c_tile = nir.alloc([k, m, frac, frac], self.acc_type, "l0c")
                    if self.l1_steps > 1:
                        self.staged_reduction(ops, x, y, m, nb, k, c_tile)
                    else:
                        def step(s: IndexValue, n: int, accumulate: bool) -> None:
                            a0 = self.load_a(ops, x, s, m, n)
                            b0 = self.load_b(ops, s, y, n, k)
                            self.mad(a0, b0, c_tile, m, n, k, accumulate)
                        self.emit_reduction(ss, step)
                    self.write_back(ops, c_tile, x, y, m, k)
                self.emit_tiles(ys, os_y)
            self.emit_tiles(xs, os_x)
        elif choice.strategy == "is":
            def is_x(x: IndexValue, m: int) -> None:
                if single_step:
                    a0 = self.load_a(ops, x, nir.index_const(0), m, ss[0].size)

                    def is_y1(y: IndexValue, k: int) -> None:
                        c_tile = nir.alloc([k, m, frac, frac], self.acc_type, "l0c")
                        b0 = self.load_b(ops, nir.index_const(0), y, ss[0].size, k)
                        self.mad(a0, b0, c_tile, m, ss[0].size, k, False)
                        self.write_back(ops, c_tile, x, y, m, k)
                    self.emit_tiles(ys, is_y1)
                    return
                # The C row strip: tile y (k column blocks x m rows) at block y*m.
                strip = nir.alloc([ops.K1 * m, frac, frac], self.acc_type, "l0c")

                def step(s: IndexValue, n: int, accumulate: bool) -> None:
                    a0 = self.load_a(ops, x, s, m, n)

                    def is_y(y: IndexValue, k: int) -> None:
                        b0 = self.load_b(ops, s, y, n, k)
                        self.mad(a0, b0, self.strip_tile(strip, y, m, k * m), m, n, k, accumulate)
                    self.emit_tiles(ys, is_y)
                self.emit_reduction(ss, step)

                def is_write(y: IndexValue, k: int) -> None:
                    self.write_back(ops, self.strip_tile(strip, y, m, k * m), x, y, m, k)
                self.emit_tiles(ys, is_write)
            self.emit_tiles(xs, is_x)
        else:  # ws
            def ws_y(y: IndexValue, k: int) -> None:
                if single_step:
                    b0 = self.load_b(ops, nir.index_const(0), y, ss[0].size, k)

                    def ws_x1(x: IndexValue, m: int) -> None:
                        c_tile = nir.alloc([k, m, frac, frac], self.acc_type, "l0c")
                        a0 = self.load_a(ops, x, nir.index_const(0), m, ss[0].size)
                        self.mad(a0, b0, c_tile, m, ss[0].size, k, False)
                        self.write_back(ops, c_tile, x, y, m, k)
                    self.emit_tiles(xs, ws_x1)
                    return
                # The C column strip: tile x (k column blocks x m rows) at block x*k.
                strip = nir.alloc([ops.M1 * k, frac, frac], self.acc_type, "l0c")

                def step(s: IndexValue, n: int, accumulate: bool) -> None:
                    b0 = self.load_b(ops, s, y, n, k)

                    def ws_x(x: IndexValue, m: int) -> None:
                        a0 = self.load_a(ops, x, s, m, n)
                        self.mad(a0, b0, self.strip_tile(strip, x, k, k * m), m, n, k, accumulate)
                    self.emit_tiles(xs, ws_x)
                self.emit_reduction(ss, step)

                def ws_write(x: IndexValue, m: int) -> None:
                    self.write_back(ops, self.strip_tile(strip, x, k, k * m), x, y, m, k)
                self.emit_tiles(xs, ws_write)
            self.emit_tiles(ys, ws_y)

    def emit_reduction(self, segs: Sequence[Segment],
                       body: Callable[[IndexValue, int, bool], None]) -> None:
        """The reduction loop: mad overwrites C on the first step
        (accumulate=false) and accumulates on every later one. `first-step=if`
        keeps one loop over the full steps and selects the flag with an
        scf.if on the induction variable (one copy of the body, and an even
        trip count stays even for double buffering); `first-step=peel`
        emits the first step as its own one-trip loop."""
        first = segs[0]
        if self.first_step == "if" and first.count > 1:
            def step(s: IndexValue, n: int) -> None:
                is_first = arith.CmpIOp(arith.CmpIPredicate.eq, s, nir.index_const(first.start)).result
                body(s, n, is_first)
            self.emit_tiles([first], step)
            self.emit_tiles(segs[1:], lambda s, n: body(s, n, True))
            return
        self.emit_tiles([Segment(first.start, 1, first.size)], lambda s, n: body(s, n, False))
        rest = list(segs[1:])
        if first.count > 1:
            rest.insert(0, Segment(first.start + first.size, first.count - 1, first.size))
        self.emit_tiles(rest, lambda s, n: body(s, n, True))

    def strip_tile(self, strip: ir.Value, index: IndexValue, scale: int, blocks: int) -> ir.Value:
        """The tile of an L0C strip starting at block `index * scale`."""
        offset = arith.MulIOp(index, nir.index_const(scale)).result
        frac = self.target.fractal
        return nir.subview(strip, [offset, 0, 0], [blocks, frac, frac])

    def staged_reduction(self, ops: Operands, x: IndexValue, y: IndexValue, m: int, nb: int,
                         k: int, c_tile: ir.Value) -> None:
        """OS reduction with `l1-steps` reduction steps per GM -> L1 copy:
        fewer, longer transfers (each pays the path latency once); the L0
        tiles and mads stay per step. Each step is a one-trip loop (scope of
        its L0 buffers); the first step of the first chunk overwrites C."""
        chunk = nb * self.l1_steps

        def per_chunk(sc: IndexValue, ncb: int, accumulate: bool | ir.Value) -> None:
            a1 = self.stage_a(ops, x, sc, m, ncb)
            b1 = self.stage_b(ops, sc, y, ncb, k)
            for seg in segments(ncb, nb):
                for t in range(seg.count):
                    j0 = seg.start + t * seg.size

                    def sub(_iv: IndexValue, n: int, j0: int = j0) -> None:
                        a0 = self.to_l0a(a1, m, n, first_col=j0)
                        b0 = self.to_l0b(b1, n, k, first_row=j0)
                        self.mad(a0, b0, c_tile, m, n, k, accumulate if j0 == 0 else True)
                    self.emit_tiles([Segment(j0, 1, seg.size)], sub)
        self.emit_reduction(segments(ops.N1, chunk), per_chunk)
