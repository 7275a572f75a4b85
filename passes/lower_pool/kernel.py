"""The cce code of one `ascend.pool2d` tile (see the package docstring).

Per tile (16 planes, `ob` output rows):
  1. load each plane's input rows GM -> UB (whole blocks, and the run's
     last block on its own so no copy reads past the run);
  2. `vnchwconv` to pixel-major: pixel k of the band becomes one 32-byte
     block holding that pixel of 16 planes (f16) or of 8 planes (f32, two
     images: planes 0-7 and 8-15);
  3. with pads: fill a padded image with the kind's identity (`vdup`) and
     copy the rows into it (one UB copy per image, a gap per row);
  4. the window: one vector op per kernel point over the output rectangle,
     the source stepping `sw` blocks per output column and `sh` rows per
     output row (block and repeat strides), so strides, dilation and pads
     cost nothing extra; `avg` then scales rectangles of equal count;
  5. `vnchwconv` back to plane-major and store each plane's run (the last
     block again on its own, ending at the run's end).
An NC1HWC0 map (a conv's result) is pixel-major already: steps 1 and 5 are
one copy of the group's band each way, and there is no `vnchwconv` (an f32
one's pixel is two blocks: its two images interleaved, every vector op
stepping two blocks a pixel); its
window may take each kernel point straight from the image (kh * kw ops, no
image of rows pooled across) where that buys larger bands
(`PoolGeometry.choose_form`).
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.kernels.cce_build import Index, copy, lin, sub
from npu.passes.lower_pool.plan import BLOCKS_PER_REPEAT, GROUP, Band, PoolGeometry
from npu.passes.transpose_general import vnchwconv

MAX_STRIDE = 255  # 8-bit block / repeat stride fields
MAX_GAP = 65535   # 16-bit copy gap fields


class PoolTile:
    """Emits tiles of one op; `x` / `y` are the flat GM input and output."""

    def __init__(self, p, geo: PoolGeometry, elem: str, x: ir.Value, y: ir.Value, ob: int) -> None:
        self.p, self.geo, self.elem, self.x, self.y, self.ob = p, geo, elem, x, y, ob
        self.b = geo.block
        self.lanes = BLOCKS_PER_REPEAT * self.b

    # -- one tile ----------------------------------------------------------------
    def emit(self, p0: Index, gp: int, o0: Index, band: Band, in_start: Index) -> None:
        g, b = self.geo, self.b
        n_in = band.rows * g.w
        pix = self.load(p0, gp, in_start, n_in)
        out = nir.alloc([g.regions * self.ob * g.wo * b], self.elem, "ub")
        interleaved = g.pixel_blocks > 1  # image r's pixel k at block 2k + r
        for r in range(g.regions):
            in_base = r * b if interleaved else r * n_in * b
            out_base = r * b if interleaved else r * self.ob * g.wo * b
            self.window(pix, in_base, out, out_base, band)
            if g.pool.kind == "avg":
                self.scale(out, out_base, band)
        self.store(out, p0, gp, o0, band.out_rows)

    def load(self, p0: Index, gp: int, in_start: Index, n: int) -> ir.Value:
        """The band of 16 planes, pixel-major (pixel k of image r at block r*n + k)."""
        g, b = self.geo, self.b
        if g.pixel_major:  # NC1HWC0: the group's band is n whole pixels (16 channels) in GM
            # every band's buffer the largest band's size: the first band's loop and the
            # interior loop then ping-pong in the same places (`test_stem_pool_band_buffers_alike`)
            pb = g.pixel_blocks * b  # elements a pixel
            pix = nir.alloc([min(g.band_rows(self.ob), g.h) * g.w * pb], self.elem, "ub")
            copy("cce.copy_gm_to_ub", sub(self.x, lin((p0, g.h * g.w), (in_start, g.w * pb)), n * pb),
                 sub(pix, 0, n * pb), 1, n * g.pixel_blocks)
            return pix
        whole, tail = n // b, n % b != 0
        stage = nir.alloc([GROUP * whole * b], self.elem, "ub")
        tails = nir.alloc([GROUP * b], self.elem, "ub") if tail else None
        plane = g.h * g.w
        if gp > 1 and plane % b == 0 and not tail and (plane - n) // b <= MAX_GAP:
            copy("cce.copy_gm_to_ub", sub(self.x, lin((p0, plane), (in_start, g.w)),
                                          (gp - 1) * plane + n), stage, gp, whole,
                 src_gap=(plane - n) // b)
        else:
            for j in range(gp):
                start = lin((p0, plane), (in_start, g.w), (1, j * plane))
                copy("cce.copy_gm_to_ub", sub(self.x, start, whole * b),
                     sub(stage, j * whole * b, whole * b), 1, whole)
                if tail:
                    copy("cce.copy_gm_to_ub", sub(self.x, lin((start, 1), (1, n - b)), b),
                         sub(tails, j * b, b), 1, 1)
        pix = nir.alloc([g.regions * n * b], self.elem, "ub")
        rows = [min(j, gp - 1) for j in range(GROUP)]
        self.to_pixels(pix, 0, stage, [r * whole for r in rows], n, whole)
        if tail:
            self.to_pixels(pix, (n - b) * b, tails, rows, n, 1)
        return pix

    def to_pixels(self, pix, at: int, src, src_offsets: list[int], n: int, repeats: int) -> None:
        """vnchwconv of 16 plane rows into pixel blocks from element `at` of `pix`."""
        b = self.b
        if b == GROUP:  # 2-byte: 16 pixels a repeat
            dst_offsets = list(range(GROUP))
        else:           # 4-byte: pixel t's halves go to images 0 and 1
            dst_offsets = [t + half * n for t in range(b) for half in (0, 1)]
        dst = sub(pix, at, nir.memref_shape(pix)[0] - at)
        vnchwconv(self.p, dst, src, repeats, src_offsets, dst_offsets, 1, b, b, b * b)

    # -- the window ------------------------------------------------------------
    def window(self, pix: ir.Value, base: int, out: ir.Value, out_base: int, band: Band) -> None:
        """Separably: along each loaded row (the kw points), then down the
        columns of that (the kh points); each point combined only into the
        outputs whose point lies inside the input (pads hold the identity)."""
        g, b, ps = self.geo, self.b, self.geo.pixel_blocks
        pool = g.pool
        (sh, sw), (dh, dw), w, wo = pool.strides, pool.dilations, g.w, g.wo
        op = "cce.vmax" if pool.kind == "max" else "cce.vadd"
        rows = band.rows
        if g.direct:  # each kernel point from the image: row step sh rows, column step sw
            parts = []
            for a in range(pool.kernel[0]):
                i0, i1 = _valid(band.out_rows, sh, a * dh - band.row_dst, rows)
                for c in range(pool.kernel[1]):
                    j0, j1 = _valid(wo, sw, c * dw - pool.pads[1], w)
                    if i0 < i1 and j0 < j1:
                        at = ((i0 * sh + a * dh - band.row_dst) * w + j0 * sw + c * dw - pool.pads[1])
                        parts.append((i0, i1, j0, j1, (pix, base + at * ps * b, sh * w * ps, sw * ps)))
            self.combine(op, (out, out_base, wo * ps, ps), band.out_rows, wo, parts)
            return
        across = nir.alloc([rows * wo * b], self.elem, "ub")
        parts = []
        for c in range(pool.kernel[1]):
            j0, j1 = _valid(wo, sw, c * dw - pool.pads[1], w)
            if j0 < j1:
                parts.append((0, rows, j0, j1, (pix, base + (j0 * sw + c * dw - pool.pads[1]) * ps * b,
                                                w * ps, sw * ps)))
        self.combine(op, (across, 0, wo, 1), rows, wo, parts)
        parts = []
        for a in range(pool.kernel[0]):
            i0, i1 = _valid(band.out_rows, sh, a * dh - band.row_dst, rows)
            if i0 < i1:
                at = (i0 * sh + a * dh - band.row_dst) * wo * b
                parts.append((i0, i1, 0, wo, (across, at, sh * wo, 1)))
        self.combine(op, (out, out_base, wo * ps, ps), band.out_rows, wo, parts)

    def combine(self, op: str, dst, rows: int, cols: int, parts) -> None:
        """dst (a rows x cols rectangle, rows contiguous) = `op` over `parts`,
        each (i0, i1, j0, j1, source at (i0, j0)) covering part of it."""
        buf, base, row_step, col_step = dst
        at = lambda i, j: (buf, base + (i * row_step + j * col_step) * self.b,  # noqa: E731
                           row_step, col_step)
        whole = [p for p in parts if p[:4] == (0, rows, 0, cols)]
        rest = [p for p in parts if p not in whole]
        if len(whole) >= 2:
            self.rect(op, dst, [whole[0][4], whole[1][4]], rows=rows, cols=cols)
            rest = whole[2:] + rest
        elif whole:
            self.rect("cce.vmuls", dst, [whole[0][4]], rows=rows, cols=cols, scalar=1.0)
        else:
            if row_step != cols * col_step:
                raise ValueError("a pool's output rectangle is filled only when its rows are dense")
            self.fill(buf, base, rows * cols, -np.inf if op == "cce.vmax" else 0.0, col_step)
        for i0, i1, j0, j1, src in rest:
            self.rect(op, at(i0, j0), [at(i0, j0), src], rows=i1 - i0, cols=j1 - j0)

    def fill(self, buf: ir.Value, at: int, blocks: int, value: float, step: int = 1) -> None:
        """`blocks` blocks from element `at`, `step` blocks apart (2: one image
        of an f32 NC1HWC0 tile), set to `value`."""
        total, done = blocks * self.b, 0
        while done < total:  # full repeats, then one masked repeat
            full = (total - done) // self.lanes
            rep = min(full, self.p.target.max_repeat) or 1
            mask = self.lanes if full else total - done
            start = at + done * step
            extent = ((total - done) // self.b - 1) * step * self.b + self.b if step > 1 \
                else total - done
            nir.create_op("cce.vdup", [sub(buf, start, extent)], repeat=rep, mask=mask,
                          dst_blk_stride=step, dst_rep_stride=BLOCKS_PER_REPEAT * step, scalar=value)
            done += rep * mask

    def scale(self, out: ir.Value, base: int, band: Band) -> None:
        """avg: multiply rectangles of equal count by 1/count."""
        g = self.geo
        pool = g.pool
        dtype = np.float16 if self.elem == "f16" else np.float32
        if pool.count_include_pad:
            runs_r = [(0, band.out_rows, pool.kernel[0])]
            runs_c = [(0, g.wo, pool.kernel[1])]
        else:
            rows, cols = pool.counts(g.h, g.w)
            rows = [pool.kernel[0]] * band.out_rows if band.interior else \
                list(rows[band.o0:band.o0 + band.out_rows])
            runs_r, runs_c = _runs(rows), _runs(list(cols))
        for r0, r1, rc in runs_r:
            for c0, c1, cc in runs_c:
                factor = float(dtype(np.float32(1) / np.float32(max(rc * cc, 1))))
                ps = g.pixel_blocks
                view = (out, base + (r0 * g.wo + c0) * ps * self.b, g.wo * ps, ps)
                self.rect("cce.vmuls", view, [view], rows=r1 - r0, cols=c1 - c0, scalar=factor)

    def rect(self, name: str, dst, srcs, rows: int = 0, cols: int = 0,
             scalar: float | None = None) -> None:
        """`name` over a rows x cols rectangle of blocks; an operand is (buffer,
        element offset, blocks per row, blocks per column)."""
        rows, cols = rows or self.ob, cols or self.geo.wo
        ops = [dst] + list(srcs)
        by_rows = all(o[2] <= MAX_STRIDE and o[3] <= MAX_STRIDE for o in ops)
        by_cols = all(o[3] * BLOCKS_PER_REPEAT <= MAX_STRIDE for o in ops)
        chunks = -(-cols // BLOCKS_PER_REPEAT)
        if by_rows and (not by_cols or chunks * -(-rows // 255) <= rows * (1 + (cols % 8 > 0))):
            for c in range(chunks):  # repeats walk down the rows
                width = min(BLOCKS_PER_REPEAT, cols - c * BLOCKS_PER_REPEAT)
                for r0 in range(0, rows, self.p.target.max_repeat):
                    rep = min(self.p.target.max_repeat, rows - r0)
                    self._vop(name, [(o[0], o[1] + (r0 * o[2] + c * 8 * o[3]) * self.b, o[3], o[2],
                                      rep, width) for o in ops], rep, width * self.b, scalar)
            return
        if not by_cols:
            raise ValueError("pool window strides exceed the vector stride fields")
        for r in range(rows):  # repeats walk along the row
            full, rest = divmod(cols, BLOCKS_PER_REPEAT)
            for c0, count, width in ((0, full, BLOCKS_PER_REPEAT), (full, 1 if rest else 0, rest)):
                for k in range(0, count, self.p.target.max_repeat):
                    rep = min(self.p.target.max_repeat, count - k)
                    first = (c0 + k) * BLOCKS_PER_REPEAT
                    self._vop(name, [(o[0], o[1] + (r * o[2] + first * o[3]) * self.b, o[3],
                                      8 * o[3], rep, width) for o in ops],
                              rep, width * self.b, scalar)

    def _vop(self, name: str, views, rep: int, mask: int, scalar) -> None:
        operands, attrs = [], {"repeat": rep, "mask": mask}
        tags = ["dst"] + (["src"] if len(views) == 2 else ["src0", "src1"])
        for tag, (buf, at, blk, rep_stride, reps, width) in zip(tags, views):
            extent = ((reps - 1) * rep_stride + (width - 1) * blk + 1) * self.b
            operands.append(sub(buf, at, extent))
            attrs[f"{tag}_blk_stride"] = blk
            attrs[f"{tag}_rep_stride"] = rep_stride
        if scalar is not None:
            attrs["scalar"] = scalar
        nir.create_op(name, operands, **attrs)

    # -- back to planes --------------------------------------------------------
    def store(self, out: ir.Value, p0: Index, gp: int, o0: Index, ob: int) -> None:
        """The tile's `ob` output rows from row `o0` -> GM."""
        g, b = self.geo, self.b
        n = ob * g.wo
        if g.pixel_major:
            pb = g.pixel_blocks * b  # elements a pixel
            copy("cce.copy_ub_to_gm", out, sub(self.y, lin((p0, g.ho * g.wo), (o0, g.wo * pb)), n * pb),
                 1, n * g.pixel_blocks)
            return
        whole, tail = n // b, n % b != 0
        stage = nir.alloc([GROUP * whole * b], self.elem, "ub")
        self.to_planes(stage, out, [j * whole for j in range(GROUP)], n, 0, whole)
        tails = None
        if tail:
            tails = nir.alloc([GROUP * b], self.elem, "ub")
            self.to_planes(tails, out, list(range(GROUP)), n, n - b, 1)
        plane = g.ho * g.wo
        if gp > 1 and plane % b == 0 and not tail and (plane - n) // b <= MAX_GAP:
            copy("cce.copy_ub_to_gm", stage, sub(self.y, lin((p0, plane), (o0, g.wo)),
                                                 (gp - 1) * plane + n), gp, whole,
                 dst_gap=(plane - n) // b)
            return
        for j in range(gp):
            start = lin((p0, plane), (o0, g.wo), (1, j * plane))
            copy("cce.copy_ub_to_gm", sub(stage, j * whole * b, whole * b),
                 sub(self.y, start, whole * b), 1, whole)
            if tail:
                copy("cce.copy_ub_to_gm", sub(tails, j * b, b),
                     sub(self.y, lin((start, 1), (1, n - b)), b), 1, 1)

    def to_planes(self, dst, out, plane_offsets: list[int], n: int, first: int, repeats: int) -> None:
        """vnchwconv of pixel blocks [first, first + 16 * repeats) back to plane rows."""
        b = self.b
        if b == GROUP:
            src_offsets = list(range(GROUP))
            dst_offsets = plane_offsets
        else:  # rows 0-7: image 0's pixels, 8-15: image 1's
            src_offsets = list(range(b)) + [n + t for t in range(b)]
            dst_offsets = [plane_offsets[t + half * b] for t in range(b) for half in (0, 1)]
        src = sub(out, first * b, nir.memref_shape(out)[0] - first * b)
        vnchwconv(self.p, dst, src, repeats, src_offsets, dst_offsets, b, 1, b * b, b)


def _runs(values: list[int]) -> list[tuple[int, int, int]]:
    """Maximal runs [start, end) of equal values: (start, end, value)."""
    runs: list[tuple[int, int, int]] = []
    for i, v in enumerate(values):
        if runs and runs[-1][2] == v:
            runs[-1] = (runs[-1][0], i + 1, v)
        else:
            runs.append((i, i + 1, v))
    return runs


def _valid(count: int, stride: int, shift: int, size: int) -> tuple[int, int]:
    """[i0, i1): the outputs i < count whose point i*stride + shift is in [0, size)."""
    i0 = max(0, -(-(-shift) // stride)) if shift < 0 else 0
    i1 = min(count, (size - 1 - shift) // stride + 1) if size - 1 - shift >= 0 else 0
    return i0, max(i0, i1)
