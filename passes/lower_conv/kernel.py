"""The cce code of one conv (see the package docstring for the schedule).

Bands of output rows with the same feature-map register (the same pads at
their edges, the same number of input rows) form one `scf.for` (the first
and last bands, which see the top and bottom pads, are usually their own);
everything inside a band is static: the img2col fields are attributes.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv.tiling import ConvShape, ConvTiling
from npu.dialects.ascend_conv import ConvGeometry
from npu.kernels.cce_build import copy, copy_bursts, lin
from npu.target import Target

Index = int | ir.Value
FRAC = 256  # elements of one f16 (or f32) fractal


@dataclass(frozen=True)
class Band:
    """What a band's feature-map register and copies depend on."""

    rows: int       # output rows
    in_rows: int    # input rows copied to L1
    pad_top: int
    pad_bottom: int


class ConvKernel:
    def __init__(self, target: Target, g: ConvGeometry, s: ConvShape, t: ConvTiling,
                 x5: ir.Value, wz: ir.Value, bias: ir.Value | None, out5: ir.Value):
        self.target, self.g, self.s, self.t = target, g, s, t
        self.x5, self.wz, self.bias, self.out5 = x5, wz, bias, out5
        self.out_type = nir.memref_element(out5)
        self.ext_h = g.dilations[0] * (g.kh - 1) + 1

    # -- the plan ------------------------------------------------------------
    def band(self, ho0: int, rows: int) -> tuple[Band, int]:
        """(the band of output rows [ho0, ho0+rows), its first input row)."""
        g = self.g
        top = ho0 * g.strides[0] - g.pads[0]
        bottom = (ho0 + rows - 1) * g.strides[0] - g.pads[0] + self.ext_h
        r0 = max(0, top)
        return Band(rows, min(g.h, bottom) - r0, r0 - top, max(0, bottom - g.h)), r0

    def band_groups(self) -> list[tuple[Band, int, int]]:
        """(band, first band index, count) of consecutive bands alike."""
        rows, ho = self.t.rows, self.s.ho
        groups: list[tuple[Band, int, int]] = []
        for k in range(-(-ho // rows)):
            b, _ = self.band(k * rows, min(rows, ho - k * rows))
            if groups and groups[-1][0] == b:
                groups[-1] = (b, groups[-1][1], groups[-1][2] + 1)
            else:
                groups.append((b, k, 1))
        return groups

    # -- emission ------------------------------------------------------------
    def emit(self) -> None:
        s, t = self.s, self.t
        self.pattern = self.bias_pattern() if self.bias is not None else None
        self.w_l1 = None
        if t.weights_resident:
            self.w_l1 = nir.alloc([s.k1 * s.co1 * FRAC], "f16", "l1")
            copy("cce.copy_gm_to_l1", nir.flatten_memref(self.wz), self.w_l1, s.k1, s.co1 * 16)
        for n in range(s.batch):
            for band, k0, count in self.band_groups():
                if count == 1:
                    self.emit_band(n, band, k0)
                    continue
                loop = nir.for_loop(0, count)
                with ir.InsertionPoint(loop.body):
                    self.emit_band(n, band, lin((loop.induction_variable, 1), (k0, 1)))
                    nir.yield_()

    def bias_pattern(self) -> ir.Value:
        """The bias of every Cout block as 4 rows of 16 f32 (one 256-byte
        repeat), [Co1, 4, 16] in UB: vadd reads it with repeat stride 0."""
        co1 = self.s.co1
        dtype = nir.memref_element(self.bias)
        pattern = nir.alloc([co1 * 64], "f32", "ub")
        staged = pattern if dtype == "f32" else nir.alloc([co1 * 64], "f16", "ub")
        blocks = 2 if dtype == "f32" else 1
        for q in range(4):
            dst = nir.subview(staged, [q * 16], [co1 * 64 - q * 16])
            copy("cce.copy_gm_to_ub", self.bias, dst, co1, blocks, 0, 3 * blocks)
        if dtype != "f32":
            self.vconv(pattern, staged, co1 * 64)
        return pattern

    def emit_band(self, n: int, band: Band, k: Index) -> None:
        g, s, t = self.g, self.s, self.t
        ho0 = lin((k, t.rows))
        r0 = lin((k, t.rows * g.strides[0]), (-g.pads[0] + band.pad_top, 1))
        fm = nir.alloc([s.c1, band.in_rows, g.w, 16], "f16", "l1")
        src = nir.subview(self.x5, [n, 0, r0, 0, 0], [1, s.c1, band.in_rows, g.w, 16])
        copy_bursts("cce.copy_gm_to_l1", src, fm, s.c1, band.in_rows * g.w,
                    src_gap=(g.h - band.in_rows) * g.w)
        m1 = -(-band.rows * s.wo // 16)
        kc = min(t.kc, s.k1)
        l0a = [nir.alloc([m1 * kc * FRAC], "f16", "l0a") for _ in range(2)]
        n_tiles = [(c, min(t.n1, s.co1 - c)) for c in range(0, s.co1, t.n1)]
        l0b = [nir.alloc([kc * min(t.n1, s.co1) * FRAC], "f16", "l0b") for _ in range(2)]
        chunk = 0
        for co0, n1 in n_tiles:
            w_l1, pitch, col = self.w_l1, s.co1, co0
            if w_l1 is None:
                w_l1, pitch, col = nir.alloc([s.k1 * n1 * FRAC], "f16", "l1"), n1, 0
                wsrc = nir.subview(self.wz, [0, co0, 0, 0], [s.k1, n1, 16, 16])
                copy_bursts("cce.copy_gm_to_l1", wsrc, w_l1, s.k1, n1 * 16,
                            src_gap=(s.co1 - n1) * 16)
            l0c = nir.alloc([n1 * m1 * FRAC], "f32", "l0c")
            for kp0 in range(0, s.k1, kc):
                kcj = min(kc, s.k1 - kp0)
                a, b = l0a[chunk % 2], l0b[chunk % 2]
                chunk += 1
                for tt in range(kcj):
                    self.img2col(fm, a, band, kp0 + tt, tt, kcj, m1)
                self.load_weights(w_l1, b, pitch, col, kp0, kcj, n1)
                nir.create_op("cce.mad", [nir.subview(a, [0], [m1 * kcj * FRAC]),
                                          nir.subview(b, [0], [kcj * n1 * FRAC]), l0c],
                              m=m1 * 16, n=kcj * 16, k=n1 * 16, accumulate=kp0 > 0)
            self.drain(l0c, n, co0, n1, ho0, band.rows, m1)

    def img2col(self, fm, l0a, band: Band, kp: int, tt: int, kcj: int, m1: int) -> None:
        g, s = self.g, self.s
        c1, rest = divmod(kp, g.kh * g.kw)
        kh, kw = divmod(rest, g.kw)
        dst = nir.subview(l0a, [tt * FRAC], [((m1 - 1) * kcj + 1) * FRAC])
        nir.create_op("cce.img2col_l1_to_l0a", [fm, dst], fm_h=band.in_rows, fm_w=g.w,
                      pad_top=band.pad_top, pad_bottom=band.pad_bottom, pad_left=g.pads[1],
                      pad_right=g.pads[3], c1=c1, fetch_h=kh, fetch_w=kw,
                      left_top_h=-band.pad_top, left_top_w=-g.pads[1], stride_h=g.strides[0],
                      stride_w=g.strides[1], kernel_h=g.kh, kernel_w=g.kw,
                      dilation_h=g.dilations[0], dilation_w=g.dilations[1], dst_stride=kcj,
                      repeat_mode=1, repeat=m1)

    def load_weights(self, w_l1, l0b, pitch: int, col: int, kp0: int, kcj: int, n1: int) -> None:
        """Fractal-Z rows kp0..kp0+kcj, Cout blocks col..col+n1 -> L0B (Zn [kcj, n1])."""
        mr = self.target.max_repeat
        if n1 == pitch:  # the rows are contiguous
            total = kcj * n1
            for f0 in range(0, total, mr):
                rep = min(mr, total - f0)
                self.load(w_l1, l0b, (kp0 * pitch + f0), f0, rep)
            return
        for r in range(kcj):
            self.load(w_l1, l0b, (kp0 + r) * pitch + col, r * n1, n1)

    def load(self, src, dst, src_frac: int, dst_frac: int, repeat: int) -> None:
        nir.create_op("cce.load_l1_to_l0b", [nir.subview(src, [src_frac * FRAC], [repeat * FRAC]),
                                             nir.subview(dst, [dst_frac * FRAC], [repeat * FRAC])],
                      repeat=repeat, src_stride=1, dst_stride=1, transpose=False)

    def drain(self, l0c, n: int, co0: int, n1: int, ho0: Index, rows: int, m1: int) -> None:
        """L0C -> UB (+ bias, -> f16) -> GM: rows*Wo windows of each of the n1 blocks."""
        s, t = self.s, self.target
        count = n1 * m1 * FRAC
        direct = self.pattern is None and self.out_type == "f16"
        ub = nir.alloc([count], "f16" if direct else "f32", "ub")
        convert = {"convert": "f32_to_f16"} if direct else {}
        nir.create_op("cce.copy_l0c_to_ub", [l0c, ub], n_burst=1, burst_len=n1 * m1 * 32,
                      src_gap=0, dst_gap=0, **convert)
        if self.pattern is not None:
            for j in range(n1):
                block = nir.subview(ub, [j * m1 * FRAC], [m1 * FRAC])
                bias = nir.subview(self.pattern, [(co0 + j) * 64], [64])
                self.vector("cce.vadd", block, block, bias, m1 * 4, bias_rep=0)
        out = ub
        if self.out_type == "f16" and not direct:
            out = nir.alloc([count], "f16", "ub")
            self.vconv(out, ub, count)
        ob = nir.element_bytes(self.out_type)
        valid = rows * s.wo
        dst = nir.subview(self.out5, [n, co0, ho0, 0, 0], [1, n1, rows, s.wo, 16])
        copy_bursts("cce.copy_ub_to_gm", nir.subview(out, [0], [count]), dst, n1,
                    t.blocks(valid * 16 * ob), src_gap=t.blocks((m1 * 16 - valid) * 16 * ob),
                    dst_gap=t.blocks((s.ho - rows) * s.wo * 16 * ob))

    def vector(self, name: str, dst, src0, src1, repeats: int, bias_rep: int = 8) -> None:
        """f32 `dst = src0 op src1` over `repeats` 256-byte repeats (src1 with
        repeat stride `bias_rep`, 0: the same repeat every time)."""
        mr, lanes = self.target.max_repeat, self.target.lanes(4)
        for r0 in range(0, repeats, mr):
            rep = min(mr, repeats - r0)
            d = nir.subview(dst, [r0 * lanes], [rep * lanes])
            a = nir.subview(src0, [r0 * lanes], [rep * lanes])
            b = src1 if bias_rep == 0 else nir.subview(src1, [r0 * lanes], [rep * lanes])
            nir.create_op(name, [d, a, b], repeat=rep, mask=lanes, dst_blk_stride=1,
                          src0_blk_stride=1, src1_blk_stride=1, dst_rep_stride=8,
                          src0_rep_stride=8, src1_rep_stride=bias_rep)

    def vconv(self, dst, src, elements: int) -> None:
        """Between f16 and f32 over whole repeats of 64 lanes."""
        t = self.target
        lanes, mr = t.lanes(4), t.max_repeat
        reps = {e: lanes * nir.element_bytes(e) // t.vector_block_bytes for e in ("f16", "f32")}
        repeats = elements // lanes
        for r0 in range(0, repeats, mr):
            rep = min(mr, repeats - r0)
            d = nir.subview(dst, [r0 * lanes], [rep * lanes])
            a = nir.subview(src, [r0 * lanes], [rep * lanes])
            nir.create_op("cce.vconv", [d, a], repeat=rep, mask=lanes, dst_blk_stride=1,
                          src_blk_stride=1, dst_rep_stride=reps[nir.memref_element(dst)],
                          src_rep_stride=reps[nir.memref_element(src)],
                          round_mode="rint" if nir.memref_element(dst) == "f16" else "none")
