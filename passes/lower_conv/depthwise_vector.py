"""A depthwise conv (layout "nc1hwc0_bd", one channel a group) on the vector unit.

Per tile of `blocks` C1 blocks x a band of output rows (the plan of
`npu.costmodel.conv.depthwise_vector`):
  1. one run of GM -> UB loads: the blocks' input rows (halo included; rows
     outside the map are not loaded) and their weights, and the epilogue's
     operands. The weights are the compact operand [C1, Kh*Kw, 16] that
     npu-lower-conv makes of constant ones (`compact_weights.py`), else the
     diagonal fractals [Kh*Kw, blocks, 16, 16];
  2. fractals: the weights summed out of them (four halving vadds over their
     rows: exact, every other entry is zero), one 16-channel block per
     kernel point and C1 block; with f32 accumulation the weights converted
     to f32, the input band too;
  3. per C1 block: the result initialised with the bias (or the product of a
     kernel point that covers every output), then per kernel point one
     `vmla` over the rectangle of outputs whose tap lies in the map: the
     source is the loaded band shifted by the kernel point, its block stride
     the column stride and its repeat stride the row stride, the weight one
     block read with strides 0 (`vector_rect.py`);
  4. the epilogue group on the tile (as on a cube drain), one store.
Tiles are `scf.for` iterations (npu-double-buffer ping-pongs their buffers):
the bands that read no padding rows of every block group in one loop, each
other band in a loop over the block groups.
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv.depthwise_vector import DwBand, DwPlan, DwShape, valid
from npu.costmodel.vector.tiling import split_repeats
from npu.kernels.cce_build import Index, by_run, copy, copy_bursts, delinearize, for_range, lin, sub
from npu.passes.lower_conv.drain_cast import f16_pattern
from npu.passes.lower_conv.epilogue import ConvEpilogue
from npu.passes.lower_conv.vector_rect import Rect, along_rows, flat_op, rect_op, units
from npu.target import Target

FRAC = 256


class DepthwiseKernel:
    def __init__(self, target: Target, s: DwShape, plan: DwPlan, x5: ir.Value, wz: ir.Value,
                 bias: ir.Value | None, out5: ir.Value, epilogue: ConvEpilogue | None,
                 out_type: str) -> None:
        self.target, self.s, self.plan = target, s, plan
        self.x5, self.wz, self.bias, self.out5 = x5, wz, bias, out5
        self.epilogue = epilogue
        self.out_type = out_type  # the tile's type: the conv's, or f16 when the drain rounds
        self.acc = "f16" if s.acc_bytes == 2 else "f32"
        self.dest = epilogue.result if epilogue is not None else out5
        self.b = 32 // s.acc_bytes  # elements of one block in the accumulation type
        self.m1 = -(-plan.rows * s.wo // 16)
        self.drains = 0

    # -- the plan --------------------------------------------------------------
    def emit(self, row_parts: tuple[int, ir.Value] | None = None) -> None:
        s, rows = self.s, self.plan.rows
        if self.epilogue is not None:
            self.epilogue.stage_patterns(s.c1)
            self.epilogue.allocate(self.plan.blocks * self.m1 * FRAC)
        if row_parts is None:
            self.tiles(s.bands(rows), 0)
            return
        parts, part = row_parts
        run = s.ho // parts
        inner = s.bands(rows, run, 2 * run) if parts > 2 else []
        if not all(b.interior for b in inner):
            raise ValueError(f"the inner runs of {run} output rows read padding rows")
        by_run(parts, part, lambda: self.tiles(s.bands(rows, 0, run), 0),
               lambda: self.tiles(s.bands(rows, s.ho - run, s.ho), 0),
               (lambda: self.tiles(inner, lin((part, run), (1, -run)))) if inner else None)

    def load_bias(self, j0: Index, gb: int) -> ir.Value:
        """The tile's bias, [gb, 16] in the tile's type, loaded with its
        input (the vector ops read one block with strides 0). Staged once as
        the cube drain's pattern (`channel_pattern`: 8 copies of C1 bursts),
        it held the first tile's loads back by its copies and their GM
        latency: 960@7 6,647 -> 5,958 -> 5,664 cycles (one copy, then none)."""
        flat = nir.flatten_memref(self.bias)
        elem = nir.memref_element(self.bias)
        bias = nir.alloc([gb * 16], elem, "ub")
        copy("cce.copy_gm_to_ub", nir.subview(flat, [lin((j0, 16))], [gb * 16]), bias, 1,
             self.target.blocks(gb * 16 * nir.element_bytes(elem)))
        return f16_pattern(self.target, bias) if elem != self.out_type else bias

    def tiles(self, bands: list[DwBand], shift: Index) -> None:
        """Every (image, block group, band) of `bands` (output rows moved by
        `shift`): the consecutive bands alike that read no padding in one loop
        with the block groups and images, each other band in its own."""
        s, g = self.s, self.plan.blocks
        full, rest = divmod(s.c1, g)
        groups = ([(full, g, 0)] if full else []) + ([(1, rest, full * g)] if rest else [])
        k = 0
        while k < len(bands):
            band = bands[k]
            run = 1
            while (band.interior and k + run < len(bands) and bands[k + run].interior
                   and bands[k + run].rows == band.rows):
                run += 1
            for count, gb, first in groups:
                self.loop(band, run, count, gb, first, shift)
            k += run

    def loop(self, band: DwBand, run: int, count: int, gb: int, first: int, shift: Index) -> None:
        s = self.s
        sizes = [s.n, count, run]

        def body(i) -> None:
            n, grp, kk = delinearize(i, sizes)
            j0 = lin((grp, self.plan.blocks), (1, first))
            o0 = lin((kk, band.rows), (1, band.o0), (shift, 1))
            in_start = lin((kk, band.rows * s.strides[0]), (1, band.in_start), (shift, s.strides[0]))
            self.tile(n, j0, gb, band, o0, in_start)

        for_range(s.n * count * run, body)

    # -- one tile --------------------------------------------------------------
    def tile(self, n: Index, j0: Index, gb: int, band: DwBand, o0: Index, in_start: Index) -> None:
        s, t = self.s, self.target
        k = s.points
        x = nir.alloc([gb * band.in_rows * s.w * 16], "f16", "ub")
        src = nir.subview(self.x5, [n, j0, in_start, 0, 0], [1, gb, band.in_rows, s.w, 16])
        copy_bursts("cce.copy_gm_to_ub", src, x, gb, band.in_rows * s.w,
                    src_gap=(s.h - band.in_rows) * s.w)
        weights = self.load_weights(j0, gb)
        bias = self.load_bias(j0, gb) if self.bias is not None else None
        m1 = -(-band.rows * s.wo // 16)
        drain = self.drains
        self.drains += 1
        if self.epilogue is not None:
            self.epilogue.prefetch(n, j0, gb, o0, band.rows, m1, s.ho, s.wo, drain)
        if not s.compact:
            weights = self.sum_weights(weights, k * gb)
        weights = self.widened(weights, k * gb)
        if self.acc == "f32":
            xf = nir.alloc([gb * band.in_rows * s.w * 16], "f32", "ub")
            flat_op("cce.vconv", xf, x, gb * band.in_rows * s.w * 16, t.lanes(4), t.max_repeat,
                    dst_rep=8, src_rep=4, round_mode="none")
            x = xf
        out = nir.alloc([gb * m1 * FRAC], self.acc, "ub")
        self.compute(x, band.in_rows * s.w * 16, weights, bias, gb, out, m1 * FRAC, band)
        ob = s.acc_bytes
        if self.epilogue is not None:
            out = self.epilogue.apply(out, j0, gb, band.rows, m1, s.wo, drain)
            ob = nir.element_bytes(nir.memref_element(self.dest))
        valid_px = band.rows * s.wo
        dst = nir.subview(self.dest, [n, j0, o0, 0, 0], [1, gb, band.rows, s.wo, 16])
        copy_bursts("cce.copy_ub_to_gm", out, dst, gb, t.blocks(valid_px * 16 * ob),
                    src_gap=t.blocks((m1 * 16 - valid_px) * 16 * ob),
                    dst_gap=t.blocks((s.ho - band.rows) * s.wo * 16 * ob))

    def load_weights(self, j0: Index, gb: int) -> ir.Value:
        """The tile's weights in UB: the compact operand's [gb, K, 16] (one
        burst), or the diagonal fractals [K, gb, 16, 16] (one burst a kernel
        point unless the tile is every block)."""
        k = self.s.points
        if self.s.compact:
            w = nir.alloc([gb * k * 16], "f16", "ub")
            copy("cce.copy_gm_to_ub", nir.subview(self.wz, [j0, 0, 0], [gb, k, 16]), w, 1, gb * k)
            return w
        frac = nir.alloc([k * gb * FRAC], "f16", "ub")
        pitch = nir.memref_layout(self.wz)[0][0] * 2 // 32
        wsrc = nir.subview(self.wz, [0, j0, 0, 0], [k, gb, 16, 16])
        if pitch == gb * 16:
            copy("cce.copy_gm_to_ub", wsrc, frac, 1, k * gb * 16)
        else:
            copy_bursts("cce.copy_gm_to_ub", wsrc, frac, k, gb * 16, src_gap=pitch - gb * 16)
        return frac

    def weight_at(self, kp: int, g: int, gb: int) -> int:
        """Element offset of kernel point `kp`'s weight block of the tile's
        block `g` (64 f32 a block with f32 accumulation)."""
        q = g * self.s.points + kp if self.s.compact else kp * gb + g
        return q * (16 if self.acc == "f16" else 64)

    def sum_weights(self, frac: ir.Value, count: int) -> ir.Value:
        """Each fractal's 16 rows added up (its diagonal: the 16 channels'
        weights of one kernel point and block), block q of the result for
        fractal q, in f16; with f32 accumulation each as one f32 repeat (4
        rows of 16). A tree across fractals, 8 a repeat: 15 vadds of
        count/8 repeats, no two in a row dependent (a chain of adds into one
        block waits out the vector latency each time)."""
        t = self.target
        q8 = -(-count // 8)
        rows = nir.alloc([8 * q8 * 128], "f16", "ub")  # partial sums [8][count] blocks, padded to 8s
        full, tail = divmod(count, 8)
        pieces = [(q0, min(t.max_repeat, full - q0), 8) for q0 in range(0, full, t.max_repeat)]
        pieces += [(full, 1, tail)] if tail else []
        for r in range(8):  # rows r and r + 8 of every fractal
            for q0, rep, width in pieces:
                n = (rep - 1) * 8 + width  # fractals this instruction covers
                def src(row: int, q0=q0, n=n) -> ir.Value:
                    return sub(frac, (q0 * 8 * 16 + row) * 16, ((n - 1) * 16 + 1) * 16)
                nir.create_op("cce.vadd", [sub(rows, (r * q8 * 8 + q0 * 8) * 16, n * 16),
                                           src(r), src(r + 8)],
                              repeat=rep, mask=width * 16, dst_blk_stride=1, src0_blk_stride=16,
                              src1_blk_stride=16, dst_rep_stride=8, src0_rep_stride=128,
                              src1_rep_stride=128)
        for half in (4, 2, 1):
            for r in range(half):
                for ins in split_repeats(count * 16, 128, t.max_repeat):
                    span = (ins.repeat - 1) * 128 + ins.mask
                    dst = sub(rows, r * q8 * 128 + ins.offset, span)
                    nir.create_op("cce.vadd", [dst, dst, sub(rows, (r + half) * q8 * 128 + ins.offset, span)],
                                  repeat=ins.repeat, mask=ins.mask, dst_blk_stride=1,
                                  src0_blk_stride=1, src1_blk_stride=1, dst_rep_stride=8,
                                  src0_rep_stride=8, src1_rep_stride=8)
        return rows

    def widened(self, rows: ir.Value, count: int) -> ir.Value:
        """`count` blocks of 16 f16 weights as the accumulation type wants
        them: as they are for f16, each an f32 repeat (64) for f32."""
        if self.acc == "f16":
            return rows
        t = self.target
        wide = nir.alloc([count * 64], "f32", "ub")
        for q0 in range(0, count, t.max_repeat):
            rep = min(t.max_repeat, count - q0)
            nir.create_op("cce.vconv", [sub(wide, q0 * 64, rep * 64), sub(rows, q0 * 16, rep * 16)],
                          repeat=rep, mask=64, dst_blk_stride=1, src_blk_stride=0,
                          dst_rep_stride=8, src_rep_stride=1, round_mode="none")
        return wide

    def compute(self, x: ir.Value, x_pitch: int, weights: ir.Value, bias: ir.Value | None,
                gb: int, out: ir.Value, out_pitch: int, band: DwBand) -> None:
        """The tile's blocks (each `x_pitch` / `out_pitch` elements apart):
        init, then a vmla per kernel point (per half of a pixel's blocks with
        f32 accumulation). Kernel points outermost: consecutive instructions
        write different blocks, so none waits out the latency of the one
        before (a chain into one block did: 576@14, V 16,416 -> see the
        commit)."""
        s, b, t = self.s, self.b, self.target
        p = s.halves
        (sh, sw), (dh, dw) = s.strides, s.dilations
        parts = []
        for a in range(s.kh):
            i0, i1 = valid(band.rows, sh, a * dh - band.row_dst, band.in_rows)
            for c in range(s.kw):
                j_0, j_1 = s.columns(c)
                if i0 < i1 and j_0 < j_1:
                    parts.append((a * s.kw + c, a, c, i0, i1, j_0, j_1))
        whole = next((q for q in parts if q[3:] == (0, band.rows, 0, s.wo)), None)
        if whole is not None:  # without a bias, its product initialises the result
            parts = [whole] + [q for q in parts if q != whole]
        dsts = [[Rect(out, g * out_pitch + h * b, s.wo * p, p) for h in range(p)] for g in range(gb)]
        if bias is not None or whole is None:
            for g in range(gb):
                for h in range(p):
                    if bias is not None:
                        rect_op("cce.vmuls", dsts[g][h], [Rect(bias, g * 16 + h * b, 0, 0)], band.rows, s.wo, b, t.max_repeat,
                                scalar=1.0)
                    else:
                        rect_op("cce.vdup", dsts[g][h], [], band.rows, s.wo, b, t.max_repeat,
                                scalar=0.0)
        for kp, a, c, i0, i1, j_0, j_1 in parts:
            first = bias is None and (kp, a, c, i0, i1, j_0, j_1) == whole
            shift = ((i0 * sh + a * dh - band.row_dst) * s.w + j_0 * sw + c * dw - s.pads[1]) * 16
            srcs = [Rect(x, shift, sh * s.w * p, sw * p), Rect(weights, 0, 0, 0)]
            along = along_rows(i1 - i0, j_1 - j_0, [dsts[0][0]] + srcs)
            # pieces of one block overlap in extent (a barrier between them),
            # the blocks' do not: the blocks innermost
            for h in range(p):
                for unit in units(i1 - i0, j_1 - j_0, along):
                    for g in range(gb):
                        src = Rect(x, g * x_pitch + h * b + shift, sh * s.w * p, sw * p)
                        wgt = Rect(weights, self.weight_at(kp, g, gb) + h * b, 0, 0)
                        rect_op("cce.vmul" if first else "cce.vmla", dsts[g][h].moved(i0, j_0, b),
                                [src, wgt], i1 - i0, j_1 - j_0, b, t.max_repeat, along=along,
                                unit=unit)
