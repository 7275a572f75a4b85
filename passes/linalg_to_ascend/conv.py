"""linalg convolutions -> `ascend.conv2d`.

torch-mlir writes an ONNX Conv as a zero `tensor.pad` of the input (when it
has pads), an init that is the bias broadcast over N, H, W (a zero fill
without bias), and one of three named ops:
* `linalg.conv_2d_nchw_fchw` (groups = 1);
* `linalg.depthwise_conv_2d_nchw_chw` (groups = C, one output per channel);
* `linalg.conv_2d_ngchw_gfchw` between `tensor.expand_shape`s that split C
  and Cout into (G, C/G), and a `collapse_shape` after (other groups).
The pad is not materialised: it becomes the op's `pads`, so the conv
lowering reads the unpadded map and img2col supplies the zeros. Data is cast
to f16 for the cube (weights on the host), the bias becomes the op's bias
operand in the result type; an init that is not a constant bias is added
after the conv.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from npu.ir import NUMPY_DTYPES
from npu.passes.linalg_to_ascend.emitter import Buf, i64_array
from npu.passes.linalg_to_ascend.structure import UnsupportedOp, element_name, tensor_shape
from npu.passes.linalg_to_ascend.conv_int8 import INT8_CONV, Int8ConvLowering
from npu.passes.linalg_to_ascend.conv_layouts import ConvLayouts
from npu.passes.linalg_to_ascend.values import Tensor
from npu.passes.linalg_to_ascend.clamp_f16 import CONV_OPS



def _ints(op: ir.Operation, name: str, default: list[int]) -> list[int]:
    if name not in op.attributes:
        return default
    return [int(v) for v in ir.DenseIntElementsAttr(op.attributes[name])]


def _feeds_convs(value: ir.Value) -> bool:
    """Every use is a conv, or an expand_shape whose every use is a conv."""
    for use in value.uses:
        owner = use.owner
        if owner.name == "tensor.expand_shape":
            if not _feeds_convs(owner.results[0]):
                return False
        elif owner.name not in CONV_OPS + (INT8_CONV,):
            return False
    return True


def block_diagonal(weight: np.ndarray, groups: int) -> np.ndarray:
    """[Cout, C/G, Kh, Kw] grouped weights as dense [Cout, C, Kh, Kw] ones,
    zero outside each group's (Cout/G, C/G) block: the same conv with groups = 1."""
    cout, cg, kh, kw = weight.shape
    fg = cout // groups
    dense = np.zeros((cout, cg * groups, kh, kw), weight.dtype)
    for gi in range(groups):
        dense[gi * fg:(gi + 1) * fg, gi * cg:(gi + 1) * cg] = weight[gi * fg:(gi + 1) * fg]
    return dense


class ConvLowering(ConvLayouts, Int8ConvLowering):
    """Mixed into `Converter` (uses its tensors, scalars, emitter, nd, dest)."""

    @property
    def conv_pads(self) -> dict:
        """Padded value -> (unpadded value, (top, left, bottom, right))."""
        if not hasattr(self, "_conv_pads"):
            self._conv_pads = {}
        return self._conv_pads

    @property
    def conv_pad_values(self) -> dict:
        """Padded value -> its non-zero padding value (an int8 conv's zero point)."""
        if not hasattr(self, "_conv_pad_values"):
            self._conv_pad_values = {}
        return self._conv_pad_values

    def pad(self, op: ir.Operation) -> None:
        """A zero `tensor.pad` of H and W feeding convs only, or one padding
        with the zero point feeding int8 convs only: remembered."""
        low = list(ir.DenseI64ArrayAttr(op.attributes["static_low"]))
        high = list(ir.DenseI64ArrayAttr(op.attributes["static_high"]))
        yielded = list(op.regions[0].blocks[0].operations)[-1].operands[0]
        if len(op.operands) != 1 or len(low) != 4 or any(low[:2]) or any(high[:2]):
            raise UnsupportedOp(op, f"tensor.pad with low {low} high {high}: only zero pads of H and W "
                                "before a convolution are supported")
        value = self.scalars.get(yielded)
        if value != 0 and not (isinstance(value, int) and element_name(op.results[0]) == "i8"
                               and all(u.owner.name == INT8_CONV for u in op.results[0].uses)):
            raise UnsupportedOp(op, "tensor.pad with a value other than zero")
        if value:
            self.conv_pad_values[op.results[0]] = value
        if not _feeds_convs(op.results[0]):
            raise UnsupportedOp(op, "tensor.pad whose result is used by something other than a "
                                "convolution or a pooling")
        self.conv_pads[op.results[0]] = (op.operands[0], (low[2], low[3], high[2], high[3]))

    def expand_padded(self, op: ir.Operation) -> bool:
        """An expand_shape of a remembered pad (grouped convs): remembered too."""
        src = op.operands[0]
        if src not in self.conv_pads:
            return False
        self.conv_pads[op.results[0]] = self.conv_pads[src]
        return True

    def reshape_5hd(self, op: ir.Operation) -> bool:
        """A reshape that only splits or merges the channels of an NC1HWC0
        conv result (the (G, C/G) expand before a grouped conv, the collapse
        after it): the result shares the NC1HWC0 buffer, so no layout
        conversion runs between the convs. False when it does not apply."""
        t = self.tensors.get(op.operands[0])
        if t is None or t.c1hwc0 is None or t.nd is not None:
            return False
        shape = tuple(tensor_shape(op.results[0]))
        if (len(shape) < 4 or shape[0] != t.shape[0] or shape[-2:] != t.shape[-2:]
                or int(np.prod(shape[1:-2])) != int(np.prod(t.shape[1:-2]))):
            return False
        self.tensors[op.results[0]] = Tensor(shape, t.dtype, c1hwc0=t.c1hwc0, nz_loc=t.nz_loc)
        return True

    def conv(self, op: ir.Operation) -> None:
        loc = self.loc(op)
        x_val, w_val = op.operands[0], op.operands[1]
        init_val = op.operands[2]
        x_val, pads = self.conv_pads.get(x_val, (x_val, (0, 0, 0, 0)))
        xs = list(self.tensors[x_val].shape)  # unpadded; [N, G, C/G, H, W] when grouped
        w = self.tensors[w_val]
        out_shape = list(tensor_shape(op.results[0]))
        if op.name == "linalg.conv_2d_nchw_fchw":
            groups, w_shape = 1, list(w.shape)
        elif op.name == "linalg.depthwise_conv_2d_nchw_chw":
            c, kh, kw = w.shape
            groups, w_shape = c, [c, 1, kh, kw]
        else:  # ngchw_gfchw: x [N, G, C/G, H, W], w [G, F, C/G, Kh, Kw], out [N, G, F, Ho, Wo]
            g, f, cg, kh, kw = w.shape
            groups, w_shape = g, [g * f, cg, kh, kw]
        x4 = [xs[0], int(np.prod(xs[1:-2])), xs[-2], xs[-1]]
        out4 = [out_shape[0], w_shape[0], out_shape[-2], out_shape[-1]]
        out_dtype = element_name(op.results[0])
        if out_dtype not in ("f16", "f32"):
            raise UnsupportedOp(op, f"convolution of {out_dtype} data: the cube takes f16/f32 models")
        bias, extra = self._conv_bias(init_val, out4, out_dtype, loc)
        attrs = dict(strides=i64_array(_ints(op, "strides", [1, 1])), pads=i64_array(list(pads)),
                     dilations=i64_array(_ints(op, "dilations", [1, 1])), groups=f"{groups} : i64")
        result = op.results[0]
        if w.is_constant and extra is None:
            weight = w.array.reshape(w_shape)
            diagonal = False
            if groups != 1:
                # Grouped and depthwise convs run on the cube with weights zero
                # off the groups' diagonal blocks; when every group sits inside
                # one C0 block and Cout = C (depthwise, small groups), only the
                # diagonal fractals are kept (docs/grouped_conv.md).
                cg = x4[1] // groups
                diagonal = out4[1] == x4[1] and 16 % cg == 0 and x4[1] > 4
                weight = block_diagonal(weight, groups)
                attrs["groups"] = "1 : i64"
            if diagonal:  # the group size lets npu-lower-conv pick the vector unit for depthwise
                attrs["group_channels"] = f"{x4[1] // groups} : i64"
            self._conv_5hd(op, x_val, x4, weight, bias, out4, out_dtype, attrs, loc, diagonal)
            return
        x = self._conv_f16(x_val, x4, loc)
        wt = self._conv_f16(w_val, w_shape, loc)
        if extra is None:
            out = self.dest(result, out4, out_dtype, loc)
        else:
            out = self.em.alloc(out4, out_dtype, loc)
        operands = [x, wt] + ([self.em.constant(bias)] if bias is not None else []) + [out]
        self.em.op("ascend.conv2d", operands, loc, **attrs)
        if extra is not None:
            total = self.dest(result, out4, out_dtype, loc)
            self.em.op("ascend.add", [out, extra, total], loc)
            out = total
        self.tensors[result] = Tensor(tuple(out_shape), out_dtype,
                                      nd=self.em.reshape(out, out_shape, loc))

    def _conv_f16(self, value: ir.Value, shape: list[int], loc: str) -> Buf:
        """`value` as an f16 GM buffer of `shape` (constants cast on the host)."""
        t = self.tensors[value]
        if t.is_constant:
            return self.em.constant(self.host_f16(t.array.reshape(shape)))
        src = self.em.reshape(self.nd(value, loc), shape, loc)
        if src.dtype == "f16":
            return src
        half = self.em.alloc(shape, "f16", loc)
        self.em.op("ascend.cast", [src, half], loc, round_mode='"rint"')
        return half

    def _conv_bias(self, init: ir.Value, out4: list[int], dtype: str,
                   loc: str) -> tuple[np.ndarray | None, Buf | None]:
        """(bias values, a non-bias init to add afterwards) from the conv's init."""
        t = self.tensors[init]
        if t.is_constant:
            full = np.broadcast_to(t.array.reshape(out4) if t.array.size == np.prod(out4) else t.array,
                                   out4)
            per_channel = full[:1, :, :1, :1]
            if np.array_equal(np.broadcast_to(per_channel, out4), full):
                if not np.any(per_channel):
                    return None, None
                return per_channel.reshape(-1).astype(NUMPY_DTYPES[dtype]), None
        return None, self.em.reshape(self.nd(init, loc), out4, loc)
