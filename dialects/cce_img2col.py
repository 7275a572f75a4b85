"""`cce.img2col_l1_to_l0a`: the img2col (load3d) instruction's rules.

Its geometry attributes are the fields of the three hivm words it becomes
(the feature-map register and the two instruction words,
`hivm.CONFIG_LAYOUTS` "fmatrix", "img2col_pos", "img2col"), so every range
comes from a field width; the words' `b8` comes from the operands' type. The
map is f16 (C0 = 16) or int8 (C0 = 32: a fractal is 16 windows x 32 bytes,
the same 512 bytes); an int8 one may give `pad_value`, the value its padded
taps take (the hivm padding register, `hivm.set_padding`).
`Img2colGeometry` is the window arithmetic the simulator, the lowering and
the verifier share: the output width of the map, the window of the q-th
row, and the kernel point of the r-th repeat.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from npu.dialects.hivm import CONFIG_LAYOUTS, IMG2COL_TYPE_FIELDS, IMG2COL_WORDS, SIGNED_FIELDS
from npu.dialects.opspec import I64, MAX_REPEAT, Bound, OpSpec, Operand, Range, memref_types
from npu.dialects.rules import RuleError
from npu.ir.accessors import element_bytes, int_attr, memref_element, memref_shape
from npu.target import Target

IMG2COL = "cce.img2col_l1_to_l0a"
# Geometry attribute -> the word holding it (every attribute is one field).
WORD_OF: dict[str, str] = {f.name: kind for kind in IMG2COL_WORDS for f in CONFIG_LAYOUTS[kind]
                           if f.name not in IMG2COL_TYPE_FIELDS}
ATTRS = tuple(WORD_OF)
# Attributes that may be left out (then 0): the small-channel mode.
OPTIONAL = ("small_channel",)
REQUIRED = tuple(a for a in ATTRS if a not in OPTIONAL)
SMALL_C0 = 4  # channels of a map pixel the small-channel mode reads (f16)
# The optional value of an int8 map's padded taps (default 0), an int8.
PAD_VALUE = "pad_value"
PAD_RANGE = (-128, 127)


def pad_cell(value: int, b8: bool) -> int:
    """The 16-bit pattern a pair of bytes in the pads takes: an int8 pad
    twice ((v & 0xff) * 0x101), or an f16 pad's own bits. `value` is the cce
    `pad_value` or the padding register's field (their low bytes agree)."""
    return (value & 0xFF) * 0x101 if b8 else value & 0xFFFF


def pad_value(op: ir.Operation) -> int:
    """The op's `pad_value` (0 when absent)."""
    return int_attr(op, PAD_VALUE) if PAD_VALUE in op.attributes else 0


@dataclass(frozen=True)
class Img2colGeometry:
    """The fields of one img2col, with the derived window arithmetic."""

    fm_h: int
    fm_w: int
    pad_top: int
    pad_bottom: int
    pad_left: int
    pad_right: int
    c1: int
    fetch_h: int
    fetch_w: int
    left_top_h: int
    left_top_w: int
    stride_h: int
    stride_w: int
    kernel_h: int
    kernel_w: int
    dilation_h: int
    dilation_w: int
    dst_stride: int
    repeat_mode: int
    repeat: int
    small_channel: int = 0

    @classmethod
    def of(cls, get) -> "Img2colGeometry":
        """From a getter `name -> int` (op attributes or decoded words; an
        optional one it cannot give is 0)."""
        values = {}
        for name in ATTRS:
            try:
                values[name] = int(get(name))
            except (KeyError, ValueError, TypeError):
                if name not in OPTIONAL:
                    raise
                values[name] = 0
        return cls(**values)

    @property
    def out_w(self) -> int:
        """Windows per row of the padded map (Wo)."""
        ext = self.dilation_w * (self.kernel_w - 1) + 1
        return (self.fm_w + self.pad_left + self.pad_right - ext) // self.stride_w + 1

    @property
    def out_h(self) -> int:
        ext = self.dilation_h * (self.kernel_h - 1) + 1
        return (self.fm_h + self.pad_top + self.pad_bottom - ext) // self.stride_h + 1

    @property
    def first_window(self) -> int:
        """Raster index of the window at (left_top_h, left_top_w)."""
        row = (self.left_top_h + self.pad_top) // self.stride_h
        col = (self.left_top_w + self.pad_left) // self.stride_w
        return row * self.out_w + col

    def window(self, q: int) -> tuple[int, int]:
        """Top-left (h, w) in map coordinates of the q-th window from the first."""
        row, col = divmod(self.first_window + q, self.out_w)
        return row * self.stride_h - self.pad_top, col * self.stride_w - self.pad_left

    def kernel_point(self, r: int) -> tuple[int, int, int]:
        """(c1, kh, kw) the r-th repeat reads (repeat mode 0 steps it); in the
        small-channel mode the first of its 4 consecutive kernel points (kh
        may then pass the kernel: those points read zeros)."""
        if self.small_channel:
            step = SMALL_C0 * r if self.repeat_mode == 0 else 0
            flat = self.fetch_h * self.kernel_w + self.fetch_w + step
            return (self.c1, *divmod(flat, self.kernel_w))
        step = r if self.repeat_mode == 0 else 0
        flat = (self.c1 * self.kernel_h + self.fetch_h) * self.kernel_w + self.fetch_w + step
        c1, rest = divmod(flat, self.kernel_h * self.kernel_w)
        return (c1, *divmod(rest, self.kernel_w))

    def rows_start(self, r: int) -> int:
        """The window index of the r-th repeat's first row (mode 1 steps it by 16)."""
        return 16 * r if self.repeat_mode == 1 else 0

    def problem(self, c1_blocks: int) -> str | None:
        """Why the fields make no img2col of a map with `c1_blocks` C1 blocks."""
        if self.fetch_h >= self.kernel_h or self.fetch_w >= self.kernel_w:
            return (f"kernel point ({self.fetch_h}, {self.fetch_w}) is outside the "
                    f"{self.kernel_h}x{self.kernel_w} kernel")
        if self.out_h < 1 or self.out_w < 1:
            return (f"the {self.kernel_h}x{self.kernel_w} kernel (dilation {self.dilation_h}x"
                    f"{self.dilation_w}) is larger than the padded {self.fm_h}x{self.fm_w} map")
        for axis, lt, pad, stride in (("h", self.left_top_h, self.pad_top, self.stride_h),
                                      ("w", self.left_top_w, self.pad_left, self.stride_w)):
            if lt < -pad or (lt + pad) % stride:
                return (f"left_top_{axis} = {lt} is not a window position: -pad ({-pad}) plus a "
                        f"multiple of the stride ({stride})")
        if (self.left_top_w + self.pad_left) // self.stride_w >= self.out_w:
            return f"left_top_w = {self.left_top_w} starts past the last window of a row"
        last = self.kernel_point(self.repeat - 1)[0]
        if self.small_channel and self.repeat_mode == 0 and \
                self.kernel_point(self.repeat - 1)[1] >= self.kernel_h + SMALL_C0:
            return (f"{self.repeat} repeats of 4 kernel points from ({self.fetch_h}, {self.fetch_w}) "
                    f"pass the {self.kernel_h}x{self.kernel_w} kernel")
        if max(self.c1, last) >= c1_blocks:
            return (f"reads C1 block {max(self.c1, last)} of a map with {c1_blocks} (c1 = {self.c1}, "
                    f"{self.repeat} repeats in mode {self.repeat_mode})")
        if self.repeat > 1 and self.dst_stride < 1:
            return "dst_stride must be >= 1 when repeat > 1 (the fractals would overwrite each other)"
        return None


def geometry(op: ir.Operation) -> Img2colGeometry:
    return Img2colGeometry.of(lambda name: int_attr(op, name) if name in op.attributes else
                              (0 if name in OPTIONAL else int_attr(op, name)))


def _check(op: ir.Operation, target: Target) -> None:
    src_t, dst_t = memref_types(op)
    src, dst = memref_shape(src_t), memref_shape(dst_t)
    esize = element_bytes(memref_element(src_t))
    c0 = target.fractal_k_int8 if esize == 1 else target.fractal
    g = geometry(op)
    if esize == 1 and g.small_channel:
        raise RuleError("small_channel = 1 reads f16 maps only (an int8 map has C0 = 32)")
    if len(src) != 4 or src[1:] != [g.fm_h, g.fm_w, c0]:
        raise RuleError(f"src must be the feature map [C1, fm_h, fm_w, {c0}] = [C1, {g.fm_h}, "
                        f"{g.fm_w}, {c0}], got {src}")
    why = g.problem(src[0])
    if why:
        raise RuleError(why)
    frac = target.fractal_bytes(2)
    need = ((g.repeat - 1) * g.dst_stride + 1) * frac
    have = esize
    for d in dst:
        have *= d
    if need > have:
        raise RuleError(f"writes {need} bytes ({g.repeat} fractals, dst_stride {g.dst_stride}) into "
                        f"a dst of {have} bytes")


def _field_range(name: str) -> Range:
    f = next(f for f in CONFIG_LAYOUTS[WORD_OF[name]] if f.name == name)
    if name in SIGNED_FIELDS:
        half = 1 << (f.width - 1)
        return Range(-half, half - 1)
    if name == "repeat":
        return Range(1, MAX_REPEAT)
    lo = 1 if name.startswith(("fm_", "stride_", "kernel_", "dilation_")) else 0
    return Range(lo, Bound(lambda t, op, m=f.max: m, f"{f.width}-bit field of the instruction"))


def img2col_specs() -> list[OpSpec]:
    """The spec `npu.dialects.cce` registers."""
    ranges = {name: _field_range(name) for name in REQUIRED}
    return [OpSpec(IMG2COL, (Operand("src", "l1"), Operand("dst", "l0a")),
                   (("f16", "f16"), ("i8", "i8")), {name: I64 for name in REQUIRED}, ranges,
                   (_check_small, _check_pad, _check))]


def _check_small(op: ir.Operation, target: Target) -> None:
    """`small_channel` is optional: 0 or 1 (an i64) when given."""
    if "small_channel" in op.attributes:
        attr = op.attributes["small_channel"]
        if not (isinstance(attr, ir.IntegerAttr) and str(ir.IntegerAttr(attr).type) == "i64"
                and ir.IntegerAttr(attr).value in (0, 1)):
            raise RuleError(f"attribute 'small_channel' must be 0 or 1 (an i64), got {attr}")



def _check_pad(op: ir.Operation, target: Target) -> None:
    """`pad_value` is optional: an i64 in [-128, 127], non-zero on an int8 map only."""
    if PAD_VALUE not in op.attributes:
        return
    attr = op.attributes[PAD_VALUE]
    if not (isinstance(attr, ir.IntegerAttr) and str(ir.IntegerAttr(attr).type) == "i64"):
        raise RuleError(f"attribute '{PAD_VALUE}' must be a 64-bit integer (e.g. `3 : i64`), "
                        f"got {attr}")
    value = ir.IntegerAttr(attr).value
    lo, hi = PAD_RANGE
    if not lo <= value <= hi:
        raise RuleError(f"attribute '{PAD_VALUE}' must be in [{lo}, {hi}] (an int8), got {value}")
    dtype = memref_element(memref_types(op)[0])
    if value and dtype != "i8":
        raise RuleError(f"pad_value = {value} needs an i8 map (an {dtype} map pads with 0)")
