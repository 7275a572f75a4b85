"""The L1 map of an int8 conv, staged from its f16 NC1HWC0 input.

The int8 form's input holds int8 values in f16 ([N, C1, H, W, 16]: GM keeps
32-byte blocks of 16 channels like every other map), while the int8 cube's
img2col reads 32-channel int8 pixels ([C1_32, rows, W, 32] in L1). Per
band, per 32-channel block j and chunk of pixels: the f16 blocks 2j and
2j+1 go GM -> UB (one burst each), a vector pass per block interleaves
them into 32-channel pixels (`vadds` of 0 with destination block stride 2:
block 2j's pixel p to the 32-byte block 2p, block 2j+1's to 2p+1; an odd
C1's missing block is a `vdup` of 0 there), one `vconv` narrows the f16
pixels to int8 rounding toward zero with saturation (values on the int8
grid narrow exactly) and MTE3 copies them UB -> L1. The buffers the GM
reads land in are taken in turn from SRC_SETS (chunks in flight cover the
GM latency), the vector ones from two, so MTE2, V and MTE3 overlap; each
band's map is filled a band ahead (`StagedMaps`, after the band's mads and
before its drains), so the cube does not wait for it.
The UB it takes is `npu.costmodel.conv.int8_staging.staging_bytes`.
"""

from __future__ import annotations

from mlir import ir

from npu import ir as nir
from npu.costmodel.conv.int8_staging import (CHUNK, INT8_PIXELS_PER_REPEAT, PIXELS_PER_REPEAT,
                                             RUN, SRC_SETS)
from npu.kernels.cce_build import copy, lin, sub
from npu.passes.lower_conv.image_map import StagedMaps
from npu.target import Target

Index = int | ir.Value
C0 = 16       # f16 channels of an input block
C0_INT8 = 32  # int8 channels of an L1 map pixel


class Int8Map(StagedMaps):
    """Fills a band's L1 map [C1_32, rows, W, 32] i8 from the f16 map `x5`."""

    next_with_band = False

    def __init__(self, target: Target, x5: ir.Value, band_pixels: int):
        self.target = target
        self.x = nir.flatten_memref(x5)
        self.n, self.c1, self.h, self.w, _ = nir.memref_shape(x5)
        self.c1_32 = -(-self.c1 // 2)
        self.chunk = min(CHUNK, -(-band_pixels // PIXELS_PER_REPEAT) * PIXELS_PER_REPEAT)
        # blocks 2j and 2j+1 as read (SRC_SETS chunks in flight on MTE2), and
        # two sets of the interleaved f16 pixels and the narrowed int8 ones
        self.src = [nir.alloc([2 * self.chunk * C0], "f16", "ub") for _ in range(SRC_SETS)]
        self.sets = [(nir.alloc([self.chunk * C0_INT8], "f16", "ub"),
                      nir.alloc([self.chunk * C0_INT8], "i8", "ub")) for _ in range(2)]
        self.turn = 0
        self.src_turn = 0
        self.run = 0
        self.ahead: dict = {}

    def load(self, n: int, r0: Index, rows: int, fm: ir.Value) -> None:
        """Input rows [r0, r0 + rows) of image `n` -> the L1 map `fm`: its
        chunks (32-channel block j, pixels p0..) in runs of RUN, each run's
        GM reads first, then its vector work and copies to L1."""
        total = rows * self.w
        flat = nir.flatten_memref(fm)
        pieces = [(j, p0, min(self.chunk, total - p0)) for j in range(self.c1_32)
                  for p0 in range(0, total, self.chunk)]
        for k0 in range(0, len(pieces), RUN):
            run = [(piece, self.src[(self.src_turn + k) % SRC_SETS])
                   for k, piece in enumerate(pieces[k0:k0 + RUN])]
            self.src_turn = (self.src_turn + RUN) % SRC_SETS
            for (j, p0, count), src in run:
                self.read(n, j, lin((r0, self.w), (p0, 1)), count, src)
            for (j, p0, count), src in run:
                self.narrow(j, count, src, sub(flat, (j * total + p0) * C0_INT8, count * C0_INT8))

    def read(self, n: int, j: int, start: Index, count: int, src: ir.Value) -> None:
        """`count` pixels from pixel `start` (of the image's rows) of the f16
        blocks 2j and 2j+1 -> `src` (block 2j's pixels, then 2j+1's)."""
        plane = self.h * self.w
        for k, b in enumerate(b for b in (2 * j, 2 * j + 1) if b < self.c1):
            at = lin(((n * self.c1 + b) * plane, C0), (start, C0))
            copy("cce.copy_gm_to_ub", sub(self.x, at, count * C0),
                 sub(src, k * self.chunk * C0, count * C0), 1, count)

    def narrow(self, j: int, count: int, src: ir.Value, dst_l1: ir.Value) -> None:
        """The `count` pixels of blocks 2j, 2j+1 in `src` -> 32-channel int8
        pixels -> `dst_l1` (count * 32 int8)."""
        mid, out = self.sets[self.turn]
        self.turn ^= 1
        t = self.target
        blocks = 2 if 2 * j + 1 < self.c1 else 1
        mr = t.max_repeat
        for k in range(2):  # block 2j + k -> the k-th half of each 32-channel pixel
            for q0 in range(0, count, mr * PIXELS_PER_REPEAT):
                pixels = min(mr * PIXELS_PER_REPEAT, count - q0)
                full, tail = divmod(pixels, PIXELS_PER_REPEAT)
                for rep, mask, p in ((full, PIXELS_PER_REPEAT * C0, q0),
                                     (1 if tail else 0, tail * C0, q0 + full * PIXELS_PER_REPEAT)):
                    if not rep:
                        continue
                    d = sub(mid, p * C0_INT8 + k * C0, (self.chunk - p) * C0_INT8 - k * C0)
                    if k < blocks:
                        s = sub(src, k * self.chunk * C0 + p * C0, (self.chunk - p) * C0)
                        nir.create_op("cce.vadds", [d, s], repeat=rep, mask=mask, dst_blk_stride=2,
                                      src_blk_stride=1, dst_rep_stride=16, src_rep_stride=8,
                                      scalar=0.0)
                    else:  # an odd C1: the last block's upper 16 channels are zero
                        nir.create_op("cce.vdup", [d], repeat=rep, mask=mask, dst_blk_stride=2,
                                      dst_rep_stride=16, scalar=0.0)
        lanes = INT8_PIXELS_PER_REPEAT * C0_INT8
        elems = count * C0_INT8
        for e0 in range(0, elems, mr * lanes):
            size = min(mr * lanes, elems - e0)
            full, tail = divmod(size, lanes)
            for rep, mask, at in ((full, lanes, e0), (1 if tail else 0, tail, e0 + full * lanes)):
                if rep:
                    span = (rep - 1) * lanes + mask
                    nir.create_op("cce.vconv", [sub(out, at, span), sub(mid, at, span)], repeat=rep,
                                  mask=mask, dst_blk_stride=1, src_blk_stride=1, dst_rep_stride=4,
                                  src_rep_stride=8, round_mode="trunc")
        copy("cce.copy_ub_to_l1", sub(out, 0, elems), dst_l1, 1, count)
