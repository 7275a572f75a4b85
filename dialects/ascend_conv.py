"""`ascend.conv2d`: its rules and the shape arithmetic every conv pass shares.

The op is the frontend's contract for a 2-D convolution, NCHW on GM:
`conv2d(input [N, C, H, W], weight [Cout, C/groups, Kh, Kw], bias? [Cout],
out [N, Cout, Ho, Wo])`. Input and weight are f16 (the cube's type, as for
matmul: the frontend casts f32 models' data); out and bias are f16 or f32
(accumulation is in f32, rounded once to out's type). The int8 form (f16
input, i8 weight, i32 out and bias; groups = 1) runs on the int8 cube: the
input holds int8 values in f16, which the conv narrows toward zero with
saturation, and padded taps take `pad_value` (the input's zero point). f16
because an activation map in GM keeps 32-byte blocks of 16 channels like
every other map; the lowering repacks pairs of blocks into 32-channel int8
pixels (C0 = 32) on the way to L1. `ConvGeometry` is the
one place Ho/Wo and the padded extents are computed, so what the verifier
accepts and what the lowering and the reference assume cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from npu.dialects.opspec import I64, I64_ARRAY, OpSpec, Operand, memref_types
from npu.dialects.rules import RuleError
from npu.ir.accessors import int_array_attr, int_attr, memory_space, memref_element, memref_shape
from npu.target import Target

CONV2D = "ascend.conv2d"
CONV_OPS = (CONV2D,)
# (input, weight, out) element types; bias, when present, has out's type.
INT8_SIGNATURE = ("f16", "i8", "i32")
CONV_SIGNATURES = (("f16", "f16", "f32"), ("f16", "f16", "f16"), INT8_SIGNATURE)
C0_INT8 = 32  # int8 channels of one 32-byte block


@dataclass(frozen=True)
class ConvGeometry:
    """Sizes and attributes of one conv2d (all in elements)."""

    n: int
    c: int
    h: int
    w: int
    cout: int
    kh: int
    kw: int
    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)  # top, left, bottom, right
    dilations: tuple[int, int] = (1, 1)
    groups: int = 1

    @property
    def padded(self) -> tuple[int, int]:
        t, l, b, r = self.pads
        return self.h + t + b, self.w + l + r

    @property
    def kernel_extent(self) -> tuple[int, int]:
        """The dilated kernel's span: dh*(Kh-1)+1, dw*(Kw-1)+1."""
        return (self.dilations[0] * (self.kh - 1) + 1, self.dilations[1] * (self.kw - 1) + 1)

    @property
    def out_hw(self) -> tuple[int, int]:
        (hp, wp), (eh, ew) = self.padded, self.kernel_extent
        return (hp - eh) // self.strides[0] + 1, (wp - ew) // self.strides[1] + 1

    @property
    def out_shape(self) -> list[int]:
        return [self.n, self.cout, *self.out_hw]

    @property
    def weight_shape(self) -> list[int]:
        return [self.cout, self.c // self.groups, self.kh, self.kw]

    def problem(self) -> str | None:
        """Why these sizes make no convolution (None when they do)."""
        if min(self.strides) < 1 or min(self.dilations) < 1:
            return f"strides {list(self.strides)} and dilations {list(self.dilations)} must be >= 1"
        if min(self.pads) < 0:
            return f"pads {list(self.pads)} must be >= 0"
        if self.groups < 1 or self.c % self.groups or self.cout % self.groups:
            return (f"groups {self.groups} must be >= 1 and divide the input channels ({self.c}) "
                    f"and the output channels ({self.cout})")
        (hp, wp), (eh, ew) = self.padded, self.kernel_extent
        if eh > hp or ew > wp:
            return (f"the kernel spans {eh}x{ew} (dilations included), larger than the padded "
                    f"input {hp}x{wp}")
        return None


# The optional `layout` attribute: absent (or "nchw") is the contract's NCHW
# form; "nc1hwc0" is the cube's (input [N, C1, H, W, C0], weight fractal-Z
# [C1*Kh*Kw, Cout1, C0, C0] with `kernel = array<i64: Kh, Kw>`, bias
# [Cout1*C0], out [N, Cout1, Ho, Wo, C0]; padded channels are zeros).
NCHW, NC1HWC0 = "nchw", "nc1hwc0"
# The small-channel form (C <= 4, e.g. an RGB stem): the map as NC1HWC0 with
# one block, the weights [ceil(Kh*Kw/4), Cout1, 16, 16], K column j of group
# g = kernel point 4g + j // 4, channel j % 4 (img2col's small-channel mode).
NC1HWC0_C4 = "nc1hwc0_c4"
# In that form the input may also be the NCHW image itself ([N, C <= 4, H, W]
# f16): the conv's lowering lays each band out in L1 on the way (no NC1HWC0
# copy of the image is written to GM and read back).
# The block-diagonal form (a grouped conv whose groups stay inside one C0
# block and Cout = C, e.g. depthwise): output block j reads input block j
# only; the weights are the diagonal fractals [Kh*Kw, C1, 16, 16] (row p of
# block j = kernel point p, its 16x16 block zero outside the groups).
NC1HWC0_BD = "nc1hwc0_bd"
# In that form the optional `group_channels` (i64, dividing 16) says how many
# channels one group has (1: depthwise with multiplier 1, each fractal
# diagonal), which lets npu-lower-conv run the conv on the vector unit;
# without it the groups are unknown and the conv runs on the cube.
GROUP_CHANNELS = "group_channels"
FORMS_5HD = ("nc1hwc0", "nc1hwc0_c4", "nc1hwc0_bd")
C0 = 16  # f16 channels per 32-byte block


def is_int8(op: ir.Operation) -> bool:
    """The int8 form: i8 weights (and then f16 input, i32 out)."""
    return memref_element(memref_types(op)[1]) == "i8"


def pad_value(op: ir.Operation) -> int:
    """The padded taps' value (0 unless the int8 form says otherwise)."""
    if "pad_value" not in op.attributes:
        return 0
    if not isinstance(op.attributes["pad_value"], ir.IntegerAttr):
        raise RuleError(f"attribute 'pad_value' must be an integer, got {op.attributes['pad_value']}")
    return int_attr(op, "pad_value")


def group_channels(op: ir.Operation) -> int | None:
    """The channels of one group of a block-diagonal conv, when it says."""
    if GROUP_CHANNELS not in op.attributes:
        return None
    attr = op.attributes[GROUP_CHANNELS]
    if not isinstance(attr, ir.IntegerAttr) or isinstance(attr, ir.BoolAttr):
        raise RuleError(f"attribute '{GROUP_CHANNELS}' must be an integer, got {attr}")
    return int_attr(op, GROUP_CHANNELS)


def layout(op: ir.Operation) -> str:
    if "layout" not in op.attributes:
        return NCHW
    attr = op.attributes["layout"]
    return ir.StringAttr(attr).value if isinstance(attr, ir.StringAttr) else "?"


def geometry(op: ir.Operation) -> ConvGeometry:
    """The geometry of a (verified) `ascend.conv2d`; in NC1HWC0 the channel
    counts are the padded ones (C1*C0, Cout1*C0)."""
    x, w = (memref_shape(t) for t in memref_types(op)[:2])
    attrs = (tuple(int_array_attr(op, "strides")), tuple(int_array_attr(op, "pads")),
             tuple(int_array_attr(op, "dilations")), int_attr(op, "groups"))
    if layout(op) in FORMS_5HD:
        kh, kw = int_array_attr(op, "kernel")
        if len(x) == 4:  # the NCHW image of the small-channel form: one padded block
            return ConvGeometry(x[0], C0, x[2], x[3], w[1] * C0, kh, kw, *attrs)
        return ConvGeometry(x[0], x[1] * C0, x[2], x[3], w[1] * C0, kh, kw, *attrs)
    return ConvGeometry(x[0], x[1], x[2], x[3], w[0], w[2], w[3], *attrs)


def _check_nc1hwc0(op: ir.Operation, shapes: list[list[int]]) -> None:
    x, w, out = shapes[0], shapes[1], shapes[-1]
    # Optional in the spec (NCHW takes Kh, Kw from the weight), so its kind is
    # checked here: another dense array (array<ui8: 3, 3>) does not cast.
    kernel = op.attributes["kernel"] if "kernel" in op.attributes else None
    if not isinstance(kernel, ir.DenseI64ArrayAttr) or len(ir.DenseI64ArrayAttr(kernel)) != 2:
        got = f", got {kernel}" if kernel is not None else ""
        raise RuleError(f"layout \"nc1hwc0\" needs `kernel = array<i64: Kh, Kw>`{got}")
    image = layout(op) == NC1HWC0_C4 and len(x) == 4
    if image and not 1 <= x[1] <= 4:
        raise RuleError(f"an NCHW input in layout \"nc1hwc0_c4\" has 1 to 4 channels, got {x[1]}")
    for name, shape, form in (("input", x, "[N, C1, H, W, 16]"), ("out", out, "[N, Cout1, Ho, Wo, 16]")):
        if name == "input" and image:
            continue
        if len(shape) != 5 or shape[-1] != C0:
            raise RuleError(f"{name} must be {form} in layout \"nc1hwc0\", got shape {shape}")
    g = geometry(op)
    if g.groups != 1:
        raise RuleError(f"layout \"nc1hwc0\" takes groups = 1, got {g.groups}")
    why = g.problem()
    if why:
        raise RuleError(why)
    if is_int8(op):
        if layout(op) != NC1HWC0:
            raise RuleError(f"the int8 conv takes layout \"nchw\" or \"nc1hwc0\", got \"{layout(op)}\"")
        want = [-(-x[1] // 2) * g.kh * g.kw, out[1], C0, C0_INT8]
    elif layout(op) == NC1HWC0_BD:
        if x[1] != out[1]:
            raise RuleError(f"layout \"nc1hwc0_bd\" takes C1 = Cout1, got {x[1]} and {out[1]}")
        want = [g.kh * g.kw, out[1], C0, C0]
        cg = group_channels(op)
        if cg is not None and (cg < 1 or C0 % cg):
            raise RuleError(f"attribute '{GROUP_CHANNELS}' must divide {C0}, got {cg}")
    elif layout(op) == NC1HWC0_C4:
        if x[1] != 1 and not image:
            raise RuleError(f"layout \"nc1hwc0_c4\" takes one C1 block (C <= 4), got {x[1]}")
        want = [-(-g.kh * g.kw // 4), out[1], C0, C0]
    else:
        want = [x[1] * g.kh * g.kw, out[1], C0, C0]
    if w != want:
        raise RuleError(f"weight must be fractal-Z {want}, got {w}")
    if has_bias(op) and shapes[2] != [out[1] * C0]:
        raise RuleError(f"bias must be [Cout1*16] = [{out[1] * C0}], got {shapes[2]}")
    want_out = [g.n, out[1], *g.out_hw, C0]
    if out != want_out:
        raise RuleError(f"out must be {want_out}, got {out}")


def has_bias(op: ir.Operation) -> bool:
    return len(op.operands) == 4


def _check_conv(op: ir.Operation, target: Target) -> None:
    names = ("input", "weight", "bias", "out") if has_bias(op) else ("input", "weight", "out")
    if len(op.operands) not in (3, 4):
        raise RuleError(f"expects 3 or 4 operands (input, weight, optional bias, out), "
                        f"got {len(op.operands)}")
    types = memref_types(op)
    for i, (name, v) in enumerate(zip(names, op.operands)):
        if not isinstance(v.type, ir.MemRefType):
            raise RuleError(f"operand #{i} ('{name}') must be a memref, got {v.type}")
        t = ir.MemRefType(v.type)
        if t.memory_space is None or memory_space(t) != "gm":
            raise RuleError(f"operand #{i} ('{name}') must be in memory space 'gm', got {t}")
        if not t.has_static_shape:
            raise RuleError(f"operand #{i} ('{name}') must have a static shape, got {t}")
    dtypes = [memref_element(t) for t in types]
    sig = (dtypes[0], dtypes[1], dtypes[-1])
    if sig not in CONV_SIGNATURES:
        raise RuleError(f"unsupported element types (input: {sig[0]}, weight: {sig[1]}, out: "
                        f"{sig[2]}); input and weight are f16, out f32 or f16 (or the int8 "
                        f"form: f16 input, i8 weight, i32 out)")
    if "pad_value" in op.attributes:
        if sig != INT8_SIGNATURE:
            raise RuleError("attribute 'pad_value' applies to the int8 conv only (i8 weight)")
        if not -128 <= pad_value(op) <= 127:
            raise RuleError(f"attribute 'pad_value' must be in [-128, 127], got {pad_value(op)}")
    if sig == INT8_SIGNATURE and int_attr(op, "groups") != 1:
        raise RuleError(f"the int8 conv takes groups = 1, got {int_attr(op, 'groups')}")
    if has_bias(op) and dtypes[2] != dtypes[-1]:
        raise RuleError(f"bias must have out's element type {dtypes[-1]}, got {dtypes[2]}")
    for name, size in (("strides", 2), ("pads", 4), ("dilations", 2)):
        values = int_array_attr(op, name)
        if len(values) != size:
            raise RuleError(f"attribute '{name}' must have {size} entries, got {len(values)}")
    shapes = [memref_shape(t) for t in types]
    if layout(op) not in (NCHW, *FORMS_5HD):
        raise RuleError(f"attribute 'layout' must be \"nchw\", \"nc1hwc0\", \"nc1hwc0_c4\" or \"nc1hwc0_bd\", "
                        f"got {op.attributes['layout']}")
    if GROUP_CHANNELS in op.attributes and layout(op) != NC1HWC0_BD:
        raise RuleError(f"attribute '{GROUP_CHANNELS}' applies to layout \"nc1hwc0_bd\" only")
    if layout(op) in FORMS_5HD:
        _check_nc1hwc0(op, shapes)
        return
    x, w, out = shapes[0], shapes[1], shapes[-1]
    for name, shape, form in (("input", x, "[N, C, H, W]"), ("weight", w, "[Cout, C/groups, Kh, Kw]"),
                              ("out", out, "[N, Cout, Ho, Wo]")):
        if len(shape) != 4:
            raise RuleError(f"{name} must be {form}, got shape {shape}")
    g = geometry(op)
    why = g.problem()
    if why:
        raise RuleError(why)
    if w != g.weight_shape:
        raise RuleError(f"weight must be [Cout, C/groups, Kh, Kw] = {g.weight_shape} for input "
                        f"{x} and groups {g.groups}, got {w}")
    if has_bias(op) and shapes[2] != [g.cout]:
        raise RuleError(f"bias must be [Cout] = [{g.cout}], got {shapes[2]}")
    if out != g.out_shape:
        raise RuleError(f"out must be [N, Cout, Ho, Wo] = {g.out_shape} (Ho = (H + top + bottom - "
                        f"dh*(Kh-1) - 1) / sh + 1, Wo alike), got {out}")


def conv_specs() -> list[OpSpec]:
    """The spec `npu.dialects.ascend` registers (operand checks are in
    `_check_conv`: the bias is optional, so the generic table cannot name them)."""
    operands = tuple(Operand(n, "gm") for n in ("input", "weight", "bias", "out"))
    attrs = {"strides": I64_ARRAY, "pads": I64_ARRAY, "dilations": I64_ARRAY, "groups": I64}
    return [OpSpec(CONV2D, operands, (), attrs, {}, (_check_conv,), static_shapes=True,
                   variadic=True)]
