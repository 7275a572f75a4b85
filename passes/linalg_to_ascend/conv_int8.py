"""Integer convolutions -> `ascend.conv2d`'s int8 form.

torch-mlir imports an ONNX `ConvInteger(x, W, x_zp)` (int8 x, constant int8
W, no weight zero point: `onnx_conv_integer`) as a `tensor.pad` of x with
the value x_zp (when it has pads), an i32 zero fill and
`linalg.conv_2d_nchw_fchw_q(padded, W, x_zp, 0)`, i.e.
sum (x - x_zp) * W. That becomes one `ascend.conv2d` in layout "nc1hwc0"
with `pad_value` = x_zp (the padded taps hold x_zp, so they contribute
x_zp * W like the real ones) and the i32 bias -x_zp * sum_{c,kh,kw} W[co]
made on the host: sum x * W - x_zp * sum W = sum (x - x_zp) * W, exactly in
the i32 accumulator. The weights are laid out by `fractal_z_int8` on the host.

The input holds int8 values in f16 (the contract): an `arith.fptosi` f32 ->
i8 feeding int8 convs only (the quantisation of the previous layer) becomes
a cast f32 -> f16 rounding toward zero, in NC1HWC0 when its input is held
so (the f32 epilogue of the previous conv) and no i8 tensor is made; that
is the same int8 as fptosi for the in-range values the quantisation makes
(rounding toward zero never crosses an integer). A run-time int8 tensor is
cast i8 -> f16 (exact). Then the f16 NCHW -> NC1HWC0 conversion every conv
input takes (`ConvLayouts.input_5hd`). The i32 result stays NC1HWC0: the
Cast to f32, the scale, the bias, ReLU and the next quantisation run there
(`ConvLayouts.elementwise_in_5hd`).
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu.passes.linalg_to_ascend.conv_layouts import C0, ceil_div, fractal_z_int8
from npu.passes.linalg_to_ascend.emitter import Buf, i64_array
from npu.passes.linalg_to_ascend.structure import (Structured, UnsupportedOp, element_name,
                                                   tensor_shape)
from npu.passes.linalg_to_ascend.values import Tensor

INT8_CONV = "linalg.conv_2d_nchw_fchw_q"


def _ints(op: ir.Operation, name: str) -> list[int]:
    if name not in op.attributes:
        return [1, 1]
    return [int(v) for v in ir.DenseIntElementsAttr(op.attributes[name])]


def feeds_int8_convs(value: ir.Value) -> bool:
    """Every use is an int8 conv's input, directly or through a `tensor.pad`
    whose every use is, or an elementwise generic that only widens it
    (`arith.sitofp`: a DequantizeLinear, e.g. of a residual), which reads the
    f16 values as exactly."""
    uses = list(value.uses)
    for use in uses:
        owner = use.owner
        if owner.name == "tensor.pad":
            if not all(u.owner.name == INT8_CONV and u.operand_number == 0
                       for u in owner.results[0].uses):
                return False
        elif owner.name == "linalg.generic":
            if not _only_widened(owner, use.operand_number):
                return False
        elif owner.name != INT8_CONV or use.operand_number != 0:
            return False
    return bool(uses)


def _only_widened(generic, operand: int) -> bool:
    """The generic's `operand`-th input is read only by `arith.sitofp`."""
    block = generic.regions[0].blocks[0]
    if operand >= len(block.arguments) - len(generic.results):
        return False  # an init (output) operand
    uses = list(block.arguments[operand].uses)
    return bool(uses) and all(u.owner.name == "arith.sitofp" for u in uses)


class Int8ConvLowering:
    """Mixed into `Converter` (uses its tensors, scalars, emitter, nd and
    the conv pads of `ConvLowering`)."""

    def int8_for_convs(self, op, s: Structured) -> bool:
        """`fptosi` f32 -> i8 whose result only int8 convs read: the values as
        f16, rounded toward zero (`Tensor.int8_f16`), in the input's layout
        (NC1HWC0 or NCHW); no i8 tensor is made. False (nothing emitted)
        otherwise."""
        body = [o.name for o in op.regions[0].blocks[0].operations]
        if body != ["arith.fptosi", "linalg.yield"] or len(s.inputs) != 1:
            return False
        t = self.tensors.get(s.inputs[0])
        n = len(s.loop_sizes)
        result = op.results[0]
        if t is None or t.is_constant or t.dtype not in ("f32", "f16") or n != 4 or \
                element_name(result) != "i8" or any(m != list(range(n)) for m in s.maps) or \
                not feeds_int8_convs(result):
            return False
        loc = self.loc(op)
        src = t.c1hwc0 if t.c1hwc0 is not None else self.nd(s.inputs[0], loc)
        half = self.em.alloc(list(src.shape), "f16", loc)
        self.em.op("ascend.cast", [src, half], loc, round_mode='"trunc"')
        self.tensors[result] = Tensor(tuple(tensor_shape(result)), "i8", int8_f16=half)
        return True

    def nd_of_int8_f16(self, value: ir.Value, loc: str) -> Buf:
        """The NCHW f16 buffer of int8 values held for the int8 convs, for a
        widening reader that runs in NCHW (f16 widens to the same floats as
        i8: `feeds_int8_convs` lets no other reader have it)."""
        t = self.tensors[value]
        if len(t.int8_f16.shape) != 5:
            return t.int8_f16
        self.tensors[value] = Tensor(t.shape, "f16", c1hwc0=t.int8_f16)
        try:
            return self.nchw_of_5hd(value, loc)
        finally:
            self.tensors[value] = t

    def conv_int8(self, op: ir.Operation) -> None:
        """`linalg.conv_2d_nchw_fchw_q` -> the int8 `ascend.conv2d` in "nc1hwc0"."""
        loc = self.loc(op)
        padded, w_val, x_zp_val, w_zp_val, init = op.operands
        x_val, pads = self.conv_pads.get(padded, (padded, (0, 0, 0, 0)))
        x_zp, w_zp = self.scalars.get(x_zp_val), self.scalars.get(w_zp_val)
        if not isinstance(x_zp, int) or not isinstance(w_zp, int):
            raise UnsupportedOp(op, "an integer convolution whose zero points are computed at "
                                "run time")
        if w_zp != 0:
            raise UnsupportedOp(op, f"an integer convolution with a weight zero point ({w_zp}): "
                                "the int8 conv takes symmetric weights")
        if not -128 <= x_zp <= 127:
            raise UnsupportedOp(op, f"an integer convolution whose input zero point {x_zp} is "
                                "outside int8")
        pad_value = self.conv_pad_values.get(padded, x_zp)
        if any(pads) and pad_value != x_zp:
            raise UnsupportedOp(op, f"an integer convolution padded with {pad_value} while its "
                                f"input zero point is {x_zp}")
        w = self.tensors[w_val]
        if not w.is_constant:
            raise UnsupportedOp(op, "an integer convolution with run-time weights (the int8 conv "
                                "lays out constant weights on the host)")
        weight = np.asarray(w.array)
        if weight.ndim != 4 or weight.min(initial=0) < -128 or weight.max(initial=0) > 127:
            raise UnsupportedOp(op, "an integer convolution whose weights are not int8")
        weight = weight.astype(np.int8)
        acc = self.tensors.get(init)
        if acc is None or not acc.is_constant or np.any(acc.array != 0):
            raise UnsupportedOp(op, "an integer convolution accumulating into a non-zero tensor")
        out_shape = [int(d) for d in tensor_shape(op.results[0])]
        if element_name(op.results[0]) != "i32":
            raise UnsupportedOp(op, f"an integer convolution into {element_name(op.results[0])}: "
                                "the int8 conv accumulates in i32")
        x4 = [int(d) for d in self.tensors[x_val].shape]
        n, cout, ho, wo = out_shape
        co1 = ceil_div(cout, C0)
        operands = [self.input_5hd(x_val, x4, loc),
                    self.em.constant(fractal_z_int8(weight))]
        if x_zp:
            # sum x * W - x_zp * sum W: the padded taps hold x_zp too.
            bias = np.zeros(co1 * C0, np.int64)
            bias[:cout] = -x_zp * weight.astype(np.int64).sum(axis=(1, 2, 3))
            operands.append(self.em.constant(bias.astype(np.int32)))
        out5 = self.em.alloc([n, co1, ho, wo, C0], "i32", loc)
        attrs = dict(strides=i64_array(_ints(op, "strides")), pads=i64_array(list(pads)),
                     dilations=i64_array(_ints(op, "dilations")), groups="1 : i64",
                     layout='"nc1hwc0"', kernel=i64_array(list(weight.shape[2:])))
        if x_zp:
            attrs["pad_value"] = f"{x_zp} : i64"
        self.em.op("ascend.conv2d", operands + [out5], loc, **attrs)
        self.tensors[op.results[0]] = Tensor(tuple(out_shape), "i32", c1hwc0=out5, nz_loc=loc)
