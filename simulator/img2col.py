"""img2col (load3d): im2col'd fractals from an NC1HWC0 map in L1 into L0A.

The geometry (`npu.dialects.cce_img2col.Img2colGeometry`) is static, so the
cell each destination cell takes is computed once at decode: an index into
the map, or -1 for a tap in the pads (which writes the pad). Cells are
2-byte: an f16 channel, or a pair of int8 channels (an int8 map [C1, H, W,
32] is byte for byte the f16 map [C1, H, W, 16] of its channel pairs, and
its 16 x 32 fractal the f16 16 x 16 one), so both move as uint16; only the
pads differ (`cce_img2col.pad_cell`: an int8 pad value fills both bytes of
a pair). The pad value is the cce op's `pad_value`, or at the hivm level
the padding register (`hivm.set_padding`). The source pattern is the set of
map bytes read (whole pairs: every channel of a pixel is read), the
destination `repeat` fractals `dst_stride` fractals apart. Cost:
`img2col_latency + ceil(bytes written / img2col_bytes_per_cycle)` from the
target, the same for both element sizes; the bytes count on the
l1_to_l0a path (the same MTE1 port as a plain load).
"""

from __future__ import annotations

import numpy as np

from npu.dialects.cce_img2col import OPTIONAL, PAD_VALUE, SMALL_C0, Img2colGeometry, pad_cell
from npu.simulator import access
from npu.simulator.instruction import Access, DecodeContext, Instr
from npu.simulator.memory import Memory, Shadow
from npu.target import PATH_PIPES

PATH = "l1_to_l0a"


def gather_index(g: Img2colGeometry, c0: int, edge: int) -> np.ndarray:
    """(repeat, edge, c0) element offsets into the [C1, fm_h, fm_w, c0] map,
    -1 where the tap falls in the pads. All repeats at once: axes (repeat,
    row, column)."""
    points = np.array([g.kernel_point(r) for r in range(g.repeat)], np.int64).reshape(-1, 3)
    c1, kh, kw = (points[:, k, None, None] for k in range(3))
    starts = np.array([g.rows_start(r) for r in range(g.repeat)], np.int64)
    flat = g.first_window + starts[:, None, None] + np.arange(edge)[None, :, None]
    top = (flat // g.out_w) * g.stride_h - g.pad_top
    left = (flat % g.out_w) * g.stride_w - g.pad_left
    cols = np.arange(c0)[None, None, :]
    if g.small_channel:  # column j: kernel point (first + j // 4), channel j % 4
        point = kh * g.kernel_w + kw + cols // SMALL_C0
        kh, kw = point // g.kernel_w, point % g.kernel_w
        chan, real = cols % SMALL_C0, point < g.kernel_h * g.kernel_w
    else:
        chan, real = cols, True
    h = top + kh * g.dilation_h
    w = left + kw * g.dilation_w
    inside = (h >= 0) & (h < g.fm_h) & (w >= 0) & (w < g.fm_w) & real
    return np.where(inside, ((c1 * g.fm_h + h) * g.fm_w + w) * c0 + chan, -1)


class Img2col(Instr):
    """`cce.img2col_l1_to_l0a` (and its hivm twin, decoded from its words)."""

    moves = True

    def __init__(self, ctx: DecodeContext):
        ctx.expect_operands("l1", "l0a")
        super().__init__(ctx, PATH_PIPES[PATH])
        t = ctx.target
        esizes = {o.esize for o in ctx.operands}
        if esizes not in ({1}, {2}):
            raise ctx.fail("moves f16 or int8 maps only (both operands of one element size)")
        # cce: the operands' type; hivm: the word's b8 field (its operands are untyped)
        b8 = ctx.bool("b8", False) or esizes == {1}
        g = Img2colGeometry.of(lambda n: ctx.int(n, 0 if n in OPTIONAL else None))
        why = g.problem(1 << 12)  # the C1 count is the map's: bounds are checked on the access
        if why:
            raise ctx.fail(why)
        if b8 and g.small_channel:
            raise ctx.fail("small-channel mode reads f16 maps only")
        pad = ctx.int(PAD_VALUE, 0)
        if pad and not b8 and ctx.name == ctx.cce_name:  # the cce attribute is int8 only
            raise ctx.fail(f"pad_value = {pad} needs an i8 map")
        self.pad = pad_cell(pad, b8)
        self.src_space, self.dst_space = "l1", "l0a"
        edge = t.fractal
        self.frac = t.fractal_bytes(2)
        self.repeat = g.repeat
        index = gather_index(g, edge, edge)
        self.inside = index >= 0
        read = index[self.inside]
        self.index = np.where(self.inside, index, 0)
        dst_pat = access.from_bursts(g.repeat, self.frac, max(g.dst_stride, 1) * self.frac)
        self.dst_stride = max(g.dst_stride, 1)
        writes = Access(1, dst_pat, True, t.granule("l0a"))
        if read.size:
            src_pat = access.from_elements(np.unique(read), 2)
            self.src_hi = src_pat.hi
            self.accesses = (Access(0, src_pat, False, t.granule("l1")), writes)
        else:  # every tap in the pads (a band's edge windows): no map byte is read
            self.src_hi = 0
            self.accesses = (writes,)
        self.path = PATH
        self.nbytes = g.repeat * self.frac
        self.rate = t.img2col_small_bytes_per_cycle if g.small_channel else t.img2col_bytes_per_cycle
        self.occupancy = -(-self.nbytes // self.rate)
        self.latency = t.img2col_latency

    def compute(self, mems: list[Memory], addrs: list[int]) -> None:
        src = mems[0].data[addrs[0]:addrs[0] + self.src_hi + (self.src_hi & 1)].view(np.uint16)
        # Replayed on the uninitialised flags (a movement carrying them), the
        # pads are written, so initialised: flag 0, not the pad value.
        pad = 0 if isinstance(mems[1], Shadow) else self.pad
        values = (np.where(self.inside, src[self.index], pad) if self.src_hi
                  else np.full(self.inside.shape, pad)).astype(np.uint16)
        dst = mems[1].data
        step = self.dst_stride * self.frac
        span = (self.repeat - 1) * step + self.frac
        fractals = dst[addrs[1]:addrs[1] + span]
        if self.dst_stride == 1:
            fractals.view(np.uint16)[...] = values.reshape(-1)
            return
        for r in range(self.repeat):
            fractals[r * step:r * step + self.frac].view(np.uint16)[...] = values[r].reshape(-1)


def decoders() -> dict:
    return {"cce.img2col_l1_to_l0a": Img2col}
