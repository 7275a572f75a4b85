"""QDQ MatMuls onto the int8 cube.

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
requantisation). Runs before constant folding, which
would fold DQ(W_q) into a float weight and lose W_q.

What does not match stays as it was and runs in float (`onnx_qdq_float`,
which says so in a remark).
"""

from __future__ import annotations

import numpy as np

from npu.frontend.onnx_matmul_integer import zero_point_correction
from npu.frontend.onnx_qdq import _constants, producers_of, quant_axis, users_of
from npu.frontend.onnx_qdq_float import on_grid

INT8, FLOAT = 3, 1


def _zero_point(node, consts: dict) -> np.ndarray | None:
    """A Q/DQ node's constant zero point, or None (absent or computed at run
    time; an absent one means uint8 data, which is not int8)."""
    if len(node.input) < 3 or not node.input[2]:
        return None
    return consts.get(node.input[2])


def _int8_scalar_params(node, consts: dict) -> tuple[float, int] | None:
    """(scale, zero point) of a Q/DQ node with one constant scale and one
    constant int8 zero point, else None."""
    zp = _zero_point(node, consts)
    scale = consts.get(node.input[1])
    if zp is None or scale is None or zp.dtype != np.int8 or zp.size != 1 or scale.size != 1:
        return None
    return float(scale.reshape(-1)[0]), int(zp.reshape(-1)[0])


def _int8_activation(dq, consts: dict):
    """(a_q, s_a, zp_a) when `dq` dequantizes a run-time int8 tensor with one
    constant scale and zero point, else None."""
    params = _int8_scalar_params(dq, consts)
    if params is None or dq.input[0] in consts:
        return None
    return (dq.input[0], *params)


def _int8_weight(dq, consts: dict):
    """(W_q, per-column scale) when `dq` dequantizes a constant int8 [.., K, N]
    weight with zero zero points and one scale or one per column, else None."""
    w = consts.get(dq.input[0])
    scale = consts.get(dq.input[1])
    zp = _zero_point(dq, consts)
    if w is None or scale is None or w.dtype != np.int8 or w.ndim < 2:
        return None
    if zp is not None and np.any(zp != 0):
        return None
    if scale.size == 1:
        return w, scale.reshape(()).astype(np.float32)
    if quant_axis(dq) % w.ndim != w.ndim - 1 or scale.size != w.shape[-1]:
        return None
    return w, scale.reshape(-1).astype(np.float32)


def rewrite_qdq_matmuls(model, remark) -> list[str]:
    """Rewrite (in place) the QDQ MatMuls described above; their names."""
    from npu.frontend.onnx_expansion import Expansion

    graph = model.graph
    if not any(n.op_type == "DequantizeLinear" for n in graph.node):
        return []
    consts = _constants(model)
    producers, users = producers_of(graph), users_of(graph)
    outputs = {o.name for o in graph.output}
    nodes, done, quantized, dropped = [], [], set(), set()
    for node in graph.node:
        if node.op_type != "MatMul":
            nodes.append(node)
            continue
        dq_a, dq_b = (producers.get(i) for i in node.input[:2])
        if not (dq_a and dq_b and dq_a.op_type == dq_b.op_type == "DequantizeLinear"):
            nodes.append(node)
            continue
        act, weight = _int8_activation(dq_a, consts), _int8_weight(dq_b, consts)
        q = producers.get(act[0]) if act is not None else None
        if act is None or weight is None or (q is not None and q.op_type == "QuantizeLinear"
                                             and not _runs_on_device(q, consts)):
            nodes.append(node)
            continue
        (a_q, s_a, zp_a), (w_q, s_w) = act, weight
        e = Expansion(graph, node, nodes)
        acc = e.make("Cast", [e.make("MatMulInteger", [a_q, dq_b.input[0]], "int8")], "acc",
                     to=FLOAT)
        if zp_a:
            # (a_q - zp_a) x W_q = a_q x W_q - zp_a * colsum(W_q), in f32: both
            # terms are exact integers there below 2^24, their difference
            # rounds once.
            acc = e.make("Sub", [acc, e.const("zero_point_correction",
                                              zero_point_correction(zp_a, w_q), np.float32)],
                         "zero_point_removed")
        scale = np.float32(s_a) * s_w
        requant, dq_y = _requantizing_user(node, users, consts), None
        if requant is None:
            e.final("Mul", [acc, e.const("dequant_scale", scale, np.float32)], "dequantized")
        else:
            # Straight into the next int8 tensor: one multiplication by
            # s_a * s_w / s_y, as onnxruntime's QLinearMatMul requantises.
            eq = Expansion(graph, requant, nodes)
            s_q, zp_q = _int8_scalar_params(requant, consts)
            multiplier = scale / np.float32(s_q)
            v = eq.make("Mul", [acc, eq.const("requant_scale", multiplier, np.float32)],
                        "requant_scaled")
            dq_y = _only_float_user(requant, users, consts, outputs)
            if dq_y is None:
                _round_saturate(eq, v, zp_q)
            else:
                # Its int8 values only go back to float: kept on the int8 grid
                # in float, never written out as int8 and read back.
                s_d, zp_d = _int8_scalar_params(dq_y, consts)
                v = on_grid(eq, v, -128 - zp_q, 127 - zp_q, zp_q - zp_d)
                ed = Expansion(graph, dq_y, nodes)
                ed.final("Mul", [v, ed.const("scale", s_d, np.float32)], "dequantized")
                dropped.add(dq_y.name)
            dropped.add(requant.name)
        for dq in (dq_a, dq_b):
            if all(u is node for u in users.get(dq.output[0], [])):
                dropped.add(dq.name)
        if q is not None and q.op_type == "QuantizeLinear":
            quantized.add(q.name)
        done.append(node.name)
        into = ", dequantised after it" if requant is None else \
            f", requantised by '{requant.name}' on the drain" if dq_y is None else \
            f", requantised by '{requant.name}' on the drain and kept in float for '{dq_y.name}'"
        remark(f"node '{node.name}' (MatMul) between '{dq_a.name}' and '{dq_b.name}' "
               f"(DequantizeLinear): on the int8 cube{into}")
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
    return _int8_scalar_params(q, consts) is not None


def _requantizing_user(node, users: dict, consts: dict):
    """The QuantizeLinear that is the only user of `node`'s result, when it
    runs on the device; else None."""
    after = users.get(node.output[0], [])
    if len(after) == 1 and after[0].op_type == "QuantizeLinear" and _runs_on_device(after[0], consts):
        return after[0]
    return None


def _only_float_user(q, users: dict, consts: dict, outputs: set):
    """The DequantizeLinear (constant scalar scale, int8 zero point) that is
    the only user of `q`'s int8 result, when no MatMul reads it back; else None."""
    after = users.get(q.output[0], [])
    if len(after) != 1 or after[0].op_type != "DequantizeLinear" or q.output[0] in outputs:
        return None
    dq = after[0]
    if _int8_scalar_params(dq, consts) is None:
        return None
    if any(u.op_type == "MatMul" for u in users.get(dq.output[0], [])):
        return None
    return dq


def _quantize_on_device(q, consts: dict, graph) -> list:
    """QuantizeLinear (constant scalar scale, int8 zero point) as float ops and
    a Cast to int8: clip(round(x / s) + zp, -128, 127)."""
    from npu.frontend.onnx_expansion import Expansion

    out: list = []
    e = Expansion(graph, q, out)
    scale, zp = _int8_scalar_params(q, consts)
    _round_saturate(e, e.make("Div", [q.input[0], e.const("scale", scale, np.float32)], "scaled"),
                    zp)
    return out


def _round_saturate(e, v: str, zp: int) -> None:
    """The scaled value `v` rounded half to even (as ONNX rounds), shifted by
    the zero point and saturated to int8: the node's own output."""
    e.final("Cast", [on_grid(e, v, -128 - zp, 127 - zp, zp)], "int8", to=INT8)
