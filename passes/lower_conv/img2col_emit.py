"""The img2col instructions of a conv's band (`ConvKernel`): one load3d per
K fractal of the band's M fractals, or per M fractal repeating along K,
and the feature-map register fields each reads (pads, strides, the first
window, the kernel point); the cube bias's ones map and a folded stem's
rows are K fractals too."""

from __future__ import annotations

from npu import ir as nir
from npu.costmodel.conv.stem_fold import FOLD
from npu.passes.lower_conv.band_maps import Band


class Img2colEmit:
    """Mixin of `ConvKernel` (its `g`, `s`, `frac`, `fold`, `ones_fm`,
    `split_map`, `last_chunk`, `ext_h` and `pad_value`)."""

    def img2col(self, fm, l0a, band: Band, kp: int, tt: int, kcj: int, m1: int,
                block: int = 0) -> None:
        """K fractal `kp` (a (c1, kernel point), or 4 kernel points in the
        small-channel mode, or a kernel point of input block `block` in the
        block-diagonal form) of the band's m1 M fractals, at fractal tt of a
        chunk of kcj."""
        g, s = self.g, self.s
        if kp >= s.k1 - s.ones:  # the ones of the bias's fractal (`cube_bias`), not a map block
            dst = nir.subview(l0a, [tt * self.frac], [((m1 - 1) * kcj + 1) * self.frac])
            split, self.split_map = self.split_map, False
            self.load3d(nir.subview(self.ones_fm, [0, 0, 0, 0], [1, band.in_rows, g.w, 16]), dst,
                        band, 0, 0, 0, 0, kcj, 1, m1)
            self.split_map = split
            return
        if self.fold.order:  # the fractal at K position kp (`stem_fold.k_order`)
            kp = self.fold.order[kp]
        folded = self.fold.rows and kp < g.kw  # rows FOLD-1..0 of column kp (`stem_fold`)
        if folded:
            c1, kh, kw = 0, FOLD - 1, kp
        elif s.small:
            c1, (kh, kw) = 0, divmod(4 * kp, g.kw)
        else:
            c1, rest = divmod(kp, g.kh * g.kw)
            c1 += block
            kh, kw = divmod(rest, g.kw)
        # `single_tail`: the last fractal's one kernel point in the normal
        # mode, at twice the rate (its columns 4..15 read zero slots, as the
        # small mode's points past the kernel read zeros: the same products;
        # stem 7x7/2: see bench/conv.py)
        small = s.small and not (s.single_tail and kp == s.k1 - 1) and not folded
        extra = {"small_channel": 1} if small else {}
        dst = nir.subview(l0a, [tt * self.frac], [((m1 - 1) * kcj + 1) * self.frac])
        self.load3d(fm, dst, band, c1, kh, kw, 0, kcj, 1, m1, **extra)

    def img2col_row(self, fm, l0a, band: Band, kp0: int, mm: int, kcj: int) -> None:
        """M fractal `mm` (windows 16*mm.. of the band) of K fractals kp0..kp0+kcj,
        in one instruction repeating along K (repeat mode 0): for small bands
        (m1 < kcj) the fewer instructions, which the scalar unit issues."""
        g = self.g
        c1, rest = divmod(kp0, g.kh * g.kw)
        kh, kw = divmod(rest, g.kw)
        dst = nir.subview(l0a, [mm * kcj * self.frac], [kcj * self.frac])
        self.load3d(fm, dst, band, c1, kh, kw, 16 * mm, 1, 0, kcj,
                    last=(kp0 + kcj - 1) // (g.kh * g.kw))

    def load3d(self, fm, dst, band: Band, c1: int, kh: int, kw: int, window: int,
               dst_stride: int, repeat_mode: int, repeat: int, last: int | None = None,
               **extra) -> None:
        """One img2col of the band's map from kernel point (c1, kh, kw) and
        the band's `window`-th window (raster order) on; with `split_map`,
        of the view of its blocks c1..`last` (default c1)."""
        g = self.g
        if self.split_map and not self.last_chunk:
            shape = nir.memref_shape(fm)
            fm = nir.subview(fm, [c1, 0, 0, 0], [(c1 if last is None else last) - c1 + 1,
                                                 *shape[1:]])
            c1 = 0
        row, col = divmod(window, self.s.wo)
        # packed runs of rows (row_skip): one output row's run after another
        stride_h = self.ext_h if self.s.row_skip else g.strides[0]
        if self.pad_value:  # the int8 form's padded taps (its input's zero point)
            extra["pad_value"] = self.pad_value
        nir.create_op("cce.img2col_l1_to_l0a", [fm, dst], fm_h=band.in_rows, fm_w=g.w,
                      pad_top=band.pad_top, pad_bottom=band.pad_bottom, pad_left=g.pads[1],
                      pad_right=g.pads[3], c1=c1, fetch_h=kh, fetch_w=kw,
                      left_top_h=row * stride_h - band.pad_top,
                      left_top_w=col * g.strides[1] - g.pads[1], stride_h=stride_h,
                      stride_w=g.strides[1], kernel_h=g.kh, kernel_w=g.kw,
                      dilation_h=g.dilations[0], dilation_w=g.dilations[1],
                      dst_stride=dst_stride, repeat_mode=repeat_mode, repeat=repeat, **extra)
