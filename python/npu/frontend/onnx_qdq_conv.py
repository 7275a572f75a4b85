"""QDQ Convs matched for the int8 conv.

A Conv whose x is `DequantizeLinear(x_q)` of a run-time int8 tensor (one
constant scale and int8 zero point) and whose weight is
`DequantizeLinear(W_q)` of a constant int8 [Cout, C, Kh, Kw] tensor (zero
zero points; one scale, or one per output channel along axis 0) is

    Conv(DQ(x_q), DQ(W_q)) + DQ(b) = (s_x * s_w) * ConvInteger(x_q, W_q, zp_x) + s_b * b

(ConvInteger pads with zp_x, i.e. (x_q - zp_x) with zeros, as the float Conv
pads DQ(x_q)). `onnx_qdq_int8` writes it out as ConvInteger, a Cast to f32,
one multiplication by s_x * s_w per output channel ([Cout, 1, 1]) and the
bias (an int32 constant dequantised on the host, or a float constant), or
with the requantisation when a QuantizeLinear is the Conv's only user; the
ConvInteger runs on the int8 conv, or a stem of few input channels exactly on the f16 cube
(`onnx_conv_integer`). A Conv with groups, a weight zero point, per-channel
activations, `auto_pad` SAME_* or pads that differ at an axis's two ends
(torch-mlir's ConvInteger takes neither) stays in float with a remark saying
why.
"""

from __future__ import annotations

import numpy as np

from npu.frontend.onnx_conv_integer import STEM_CHANNELS, asymmetric_pads
from npu.frontend.onnx_qdq import Int8Product, int8_activation, quant_axis, zero_point

FLOAT = 1


def conv_product(node, producers: dict, consts: dict, remark) -> Int8Product | None:
    """The int8 form of a QDQ Conv, or None (a Conv that is not between two
    DequantizeLinears, or one that does not match: then with a remark)."""
    dq_x, dq_w = (producers.get(i) for i in node.input[:2])
    if not (dq_x and dq_w and dq_x.op_type == dq_w.op_type == "DequantizeLinear"):
        return None
    plan = _match(node, dq_x, dq_w, producers, consts)
    if isinstance(plan, str):
        remark(f"node '{node.name}' (Conv) between '{dq_x.name}' and '{dq_w.name}' "
               f"(DequantizeLinear): stays in float: {plan}")
        return None
    return plan


def _match(node, dq_x, dq_w, producers: dict, consts: dict) -> Int8Product | str:
    """The plan, or why the Conv does not take the int8 conv."""
    act = int8_activation(dq_x, consts)
    if act is None:
        return "its input is not a run-time int8 tensor with one constant scale and zero point"
    w_name = dq_w.input[0]
    w, s_w, w_zp = consts.get(w_name), consts.get(dq_w.input[1]), zero_point(dq_w, consts)
    if w is None or s_w is None or w.dtype != np.int8 or w.ndim != 4:
        return "its weight is not a constant 2-D int8 kernel with a constant scale"
    if w_zp is not None and np.any(w_zp != 0):
        return "its weight has a non-zero zero point"
    cout = w.shape[0]
    if s_w.size == 1:
        s_w = s_w.reshape(()).astype(np.float32)
    elif quant_axis(dq_w) % 4 == 0 and s_w.size == cout:
        s_w = s_w.reshape(cout, 1, 1).astype(np.float32)
    else:
        return "its weight's scales are not one per tensor or one per output channel"
    attrs = {a.name: a for a in node.attribute}
    if "group" in attrs and attrs["group"].i != 1:
        return f"group = {attrs['group'].i} (the int8 conv takes groups = 1)"
    why = asymmetric_pads(node)
    if why:
        return why
    a_q, s_a, zp_a = act
    scale = np.float32(s_a) * s_w
    dqs = (dq_x, dq_w)
    bias = bias_acc = None
    if len(node.input) > 2 and node.input[2]:
        found = _bias(node.input[2], producers, consts, cout)
        if isinstance(found, str):
            return found
        bias, b_int, dq_b = found
        if dq_b is not None:
            dqs += (dq_b,)
        full = np.broadcast_to(scale.reshape(-1), (cout,))
        if b_int is not None and np.array_equal(consts[dq_b.input[1]].astype(np.float32)
                                                .reshape(-1) * np.ones(cout, np.float32), full):
            bias_acc = b_int.astype(np.float32)  # s_b = s_x * s_w: the integer itself
        else:
            bias_acc = (bias.astype(np.float64) / full).astype(np.float32)
        bias, bias_acc = bias.reshape(cout, 1, 1), bias_acc.reshape(cout, 1, 1)

    def product(e, x: str) -> str:
        inputs = [x, w_name] + ([e.const("x_zero_point", zp_a, np.int8)] if zp_a else [])
        acc = e.make("ConvInteger", inputs, "int8")
        e.nodes[-1].attribute.extend(node.attribute)
        return e.make("Cast", [acc], "acc", to=FLOAT)

    unit = "on the int8 cube" if w.shape[1] > STEM_CHANNELS else \
        f"exactly on the f16 cube (C = {w.shape[1]} input channels)"
    return Int8Product(dqs, a_q, s_a, zp_a, s_w, product, bias_acc, bias, unit)


def _bias(name: str, producers: dict, consts: dict, cout: int):
    """(f32 bias [Cout], its int32 values or None, its DequantizeLinear or
    None), or why the bias does not fit."""
    if name in consts:
        b = consts[name]
        if b.dtype.kind != "f" or b.size != cout:
            return "its bias is not a float vector of one value per output channel"
        return b.reshape(-1).astype(np.float32), None, None
    dq = producers.get(name)
    b = consts.get(dq.input[0]) if dq is not None and dq.op_type == "DequantizeLinear" else None
    s_b = consts.get(dq.input[1]) if b is not None else None
    zp = zero_point(dq, consts) if b is not None else None
    if b is None or s_b is None or b.dtype != np.int32 or b.size != cout or \
            s_b.size not in (1, cout) or (zp is not None and np.any(zp != 0)):
        return "its bias is not a constant float vector or the DequantizeLinear of an int32 constant"
    b = b.reshape(-1)
    # As DequantizeLinear computes it: float(b) * s_b in f32.
    return b.astype(np.float32) * s_b.reshape(-1).astype(np.float32), b, dq
