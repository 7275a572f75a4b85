"""QDQ MatMuls and Convs onto the int8 cube.

A MatMul whose A is `DequantizeLinear(a_q)` of a run-time int8 tensor (one
scale and zero point) and whose B is `DequantizeLinear(W_q)` of a constant
int8 weight (zero zero points; one scale, or one per output column) is

    MatMul(DQ(a_q), DQ(W_q)) = (s_a * s_w) * ((a_q - zp_a) x W_q)

so it becomes `MatMulInteger(a_q, W_q)` (on the int8 cube: `onnx_matmul_integer`),
a Cast to float, the subtraction of zp_a * colsum(W_q) (made on the host)
and one multiplication by s_a * s_w, one value per column: the
dequantisation, which `npu-fuse` joins to the cube's drain. The
`QuantizeLinear` making a_q then runs on the device into int8: saturate(
round(x / s) + zp), rounding half to even as ONNX does (with the float
fallback's rounding, `onnx_qdq_float.on_grid`). When the MatMul's only user
is such a QuantizeLinear, the two meet on the drain: one multiplication by
s_a * s_w / s_y, the rounding and the zero point, and int8 comes out (the
requantisation). A Conv takes the same path as `ConvInteger(a_q, W_q,
zp_a)` (`onnx_qdq_conv`, which says which convs match). Runs before constant
folding, which would fold DQ(W_q) into a float weight and lose W_q.

What does not match stays as it was and runs in float (`onnx_qdq_float`,
which says so in a remark).
"""

from __future__ import annotations

import numpy as np

from npu.frontend.onnx_matmul_integer import zero_point_correction
from npu.frontend.onnx_qdq import (Int8Product, _constants, int8_activation, int8_scalar_params,
                                   producers_of, quant_axis, users_of, zero_point)
from npu.frontend.onnx_qdq_conv import conv_product
from npu.frontend.onnx_qdq_float import on_grid

INT8, FLOAT = 3, 1
# The ops whose DQ operands `rewrite_qdq_int8` puts on the int8 cube.
INT8_CUBE_OPS = ("MatMul", "Conv")


def _int8_weight(dq, consts: dict):
    """(W_q, per-column scale) when `dq` dequantizes a constant int8 [.., K, N]
    weight with zero zero points and one scale or one per column, else None."""
    w = consts.get(dq.input[0])
    scale = consts.get(dq.input[1])
    zp = zero_point(dq, consts)
    if w is None or scale is None or w.dtype != np.int8 or w.ndim < 2:
        return None
    if zp is not None and np.any(zp != 0):
        return None
    if scale.size == 1:
        return w, scale.reshape(()).astype(np.float32)
    if quant_axis(dq) % w.ndim != w.ndim - 1 or scale.size != w.shape[-1]:
        return None
    return w, scale.reshape(-1).astype(np.float32)


def _matmul_product(node, producers: dict, consts: dict) -> Int8Product | None:
    """A MatMul of DQ(a_q) and DQ(W_q) the int8 cube takes, else None."""
    dq_a, dq_b = (producers.get(i) for i in node.input[:2])
    if not (dq_a and dq_b and dq_a.op_type == dq_b.op_type == "DequantizeLinear"):
        return None
    act, weight = int8_activation(dq_a, consts), _int8_weight(dq_b, consts)
    if act is None or weight is None:
        return None
    (a_q, s_a, zp_a), (w_q, s_w) = act, weight

    def product(e, a: str) -> str:
        acc = e.make("Cast", [e.make("MatMulInteger", [a, dq_b.input[0]], "int8")], "acc",
                     to=FLOAT)
        if zp_a:
            # (a_q - zp_a) x W_q = a_q x W_q - zp_a * colsum(W_q), in f32: both
            # terms are exact integers there below 2^24, their difference
            # rounds once.
            acc = e.make("Sub", [acc, e.const("zero_point_correction",
                                              zero_point_correction(zp_a, w_q), np.float32)],
                         "zero_point_removed")
        return acc

    return Int8Product((dq_a, dq_b), a_q, s_a, zp_a, s_w, product)


def rewrite_qdq_int8(model, remark) -> list[str]:
    """Rewrite (in place) the QDQ MatMuls and Convs described above (and in
    `onnx_qdq_conv`); their names."""
    from npu.frontend.onnx_expansion import Expansion

    graph = model.graph
    if not any(n.op_type == "DequantizeLinear" for n in graph.node):
        return []
    consts = _constants(model)
    producers, users = producers_of(graph), users_of(graph)
    outputs = {o.name for o in graph.output}
    nodes, done, quantized, dropped = [], [], set(), set()
    for node in graph.node:
        plan = _matmul_product(node, producers, consts) if node.op_type == "MatMul" else \
            conv_product(node, producers, consts, remark) if node.op_type == "Conv" else None
        q = producers.get(plan.a_q) if plan is not None else None
        if plan is None or (q is not None and q.op_type == "QuantizeLinear"
                            and not _runs_on_device(q, consts)):
            nodes.append(node)
            continue
        e = Expansion(graph, node, nodes)
        acc = plan.product(e, plan.a_q)
        scale = np.float32(plan.s_a) * plan.s_w
        requant, dq_y = _requantizing_user(node, users, consts), None
        if requant is None:
            if plan.bias is None:
                e.final("Mul", [acc, e.const("dequant_scale", scale, np.float32)], "dequantized")
            else:
                v = e.make("Mul", [acc, e.const("dequant_scale", scale, np.float32)], "dequantized")
                e.final("Add", [v, e.const("bias", plan.bias, np.float32)], "bias")
        else:
            # Straight into the next int8 tensor: one multiplication by
            # s_a * s_w / s_y (after the bias, in the accumulator's units), as
            # onnxruntime's QLinearMatMul and QLinearConv requantise.
            if plan.bias_acc is not None:
                acc = e.make("Add", [acc, e.const("bias_acc", plan.bias_acc, np.float32)], "bias")
            eq = Expansion(graph, requant, nodes)
            s_q, zp_q = int8_scalar_params(requant, consts)
            multiplier = scale / np.float32(s_q)
            v = eq.make("Mul", [acc, eq.const("requant_scale", multiplier, np.float32)],
                        "requant_scaled")
            dq_y = _only_float_user(requant, users, consts, outputs)
            if dq_y is None:
                _round_saturate(eq, v, zp_q)
            else:
                # Its int8 values only go back to float: kept on the int8 grid
                # in float, never written out as int8 and read back.
                s_d, zp_d = int8_scalar_params(dq_y, consts)
                v = on_grid(eq, v, -128 - zp_q, 127 - zp_q, zp_q - zp_d)
                ed = Expansion(graph, dq_y, nodes)
                ed.final("Mul", [v, ed.const("scale", s_d, np.float32)], "dequantized")
                dropped.add(dq_y.name)
            dropped.add(requant.name)
        for dq in plan.dqs:
            if all(u is node for u in users.get(dq.output[0], [])):
                dropped.add(dq.name)
        if q is not None and q.op_type == "QuantizeLinear":
            quantized.add(q.name)
        done.append(node.name)
        into = ", dequantised after it" if requant is None else \
            f", requantised by '{requant.name}' on the drain" if dq_y is None else \
            f", requantised by '{requant.name}' on the drain and kept in float for '{dq_y.name}'"
        remark(f"node '{node.name}' ({node.op_type}) between '{plan.dqs[0].name}' and "
               f"'{plan.dqs[1].name}' (DequantizeLinear): {plan.unit}{into}")
    if done:
        kept = [n for n in nodes if n.name not in dropped]
        del graph.node[:]
        for n in kept:
            if n.name in quantized:
                graph.node.extend(_quantize_on_device(n, consts, graph))
            else:
                graph.node.append(n)
    return done


def _runs_on_device(q, consts: dict) -> bool:
    """A QuantizeLinear `_round_saturate` writes out: a constant scalar scale
    and int8 zero point."""
    return int8_scalar_params(q, consts) is not None


def _requantizing_user(node, users: dict, consts: dict):
    """The QuantizeLinear that is the only user of `node`'s result, when it
    runs on the device; else None."""
    after = users.get(node.output[0], [])
    if len(after) == 1 and after[0].op_type == "QuantizeLinear" and _runs_on_device(after[0], consts):
        return after[0]
    return None


def _only_float_user(q, users: dict, consts: dict, outputs: set):
    """The DequantizeLinear (constant scalar scale, int8 zero point) that is
    the only user of `q`'s int8 result, when no MatMul or Conv reads it back;
    else None."""
    after = users.get(q.output[0], [])
    if len(after) != 1 or after[0].op_type != "DequantizeLinear" or q.output[0] in outputs:
        return None
    dq = after[0]
    if int8_scalar_params(dq, consts) is None:
        return None
    if any(u.op_type in INT8_CUBE_OPS for u in users.get(dq.output[0], [])):
        return None
    return dq


def _quantize_on_device(q, consts: dict, graph) -> list:
    """QuantizeLinear (constant scalar scale, int8 zero point) as float ops and
    a Cast to int8: clip(round(x / s) + zp, -128, 127)."""
    from npu.frontend.onnx_expansion import Expansion

    out: list = []
    e = Expansion(graph, q, out)
    scale, zp = int8_scalar_params(q, consts)
    _round_saturate(e, e.make("Div", [q.input[0], e.const("scale", scale, np.float32)], "scaled"),
                    zp)
    return out


def _round_saturate(e, v: str, zp: int) -> None:
    """The scaled value `v` rounded half to even (as ONNX rounds), shifted by
    the zero point and saturated to int8: the node's own output."""
    e.final("Cast", [on_grid(e, v, -128 - zp, 127 - zp, zp)], "int8", to=INT8)
