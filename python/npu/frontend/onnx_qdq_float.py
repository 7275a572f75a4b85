"""QDQ nodes run in float: the fallback for quantisation we do not (yet) run
on the int8 cube. Never a refusal: each rewritten node gets a remark.

* QuantizeLinear -> DequantizeLinear with constant scale and zero point (the
  fake quantisation of an activation) becomes
      y = round(clip(x / s, lo - zp, hi - zp)) * s
  which equals ONNX's (saturate(round(x / s) + zp) - zp) * s since zp is an
  integer (`on_grid`: round half to even, as ONNX's, by 1.5*2^23 in f32).
* A QuantizeLinear with constant parameters and no DequantizeLinear after it
  becomes round(clip(x / s, lo - zp, hi - zp)) + zp and a Cast to its type.
* DequantizeLinear of a run-time int8 tensor becomes (float(x) - zp) * s.
  (A DequantizeLinear of a constant weight is folded on the host before this.)
Per-axis scales are reshaped to broadcast along their axis.
"""

from __future__ import annotations

import numpy as np

from npu.frontend.onnx_qdq import QUANT_TYPES, _constants, quant_axis, users_of

_MAGIC = np.float32(1.5 * 2.0**23)
_ELEM_TYPE = {np.dtype(np.int8): 3, np.dtype(np.uint8): 2}  # zero point dtype -> ONNX type


def _axis_shape(values: np.ndarray, axis: int, rank: int) -> np.ndarray:
    """A per-axis vector shaped to broadcast along `axis` of a rank-`rank` tensor."""
    if values.ndim == 0:
        return values
    axis = axis % rank
    return values.reshape((-1,) + (1,) * (rank - 1 - axis))


def _params(node, consts: dict, rank: int):
    """(scale, zero point) of a Q/DQ node as broadcastable f32 arrays, or None
    when either is computed at run time."""
    s_name = node.input[1]
    z_name = node.input[2] if len(node.input) > 2 and node.input[2] else ""
    if s_name not in consts or (z_name and z_name not in consts):
        return None
    axis = quant_axis(node)
    scale = _axis_shape(consts[s_name].astype(np.float32), axis, rank)
    zp = consts[z_name] if z_name else np.zeros((), np.int8)
    return scale, _axis_shape(zp.astype(np.float32), axis, rank), zp.dtype


def rewrite_qdq_in_float(model, types: dict, remark) -> list[str]:
    """Rewrite (in place) Q->DQ pairs and run-time DQs into float ops; the
    names of the rewritten nodes (each reported through `remark`)."""
    from npu.frontend.onnx_expansion import Expansion

    graph = model.graph
    if not any(n.op_type in ("QuantizeLinear", "DequantizeLinear") for n in graph.node):
        return []
    consts = _constants(model)
    users = users_of(graph)
    outputs = {o.name for o in graph.output}
    nodes, done, drop = [], [], set()
    for node in graph.node:
        if node.name in drop:
            continue
        dims = (types or {}).get(node.input[0], (None, 0))[0] if node.input else None
        rank = len(dims) if dims is not None else 0
        params = _params(node, consts, max(rank, 1)) if node.op_type in (
            "QuantizeLinear", "DequantizeLinear") else None
        after = users.get(node.output[0], []) if node.output else []
        dq = after[0] if len(after) == 1 and after[0].op_type == "DequantizeLinear" else None
        dq_params = _params(dq, consts, max(rank, 1)) if dq is not None else None
        if node.op_type == "QuantizeLinear" and params is not None and dq_params is not None \
                and node.output[0] not in outputs:
            scale, zp, zdtype = params
            _, lo, hi = QUANT_TYPES[_ELEM_TYPE[np.dtype(zdtype)]]
            e = Expansion(graph, dq, nodes)
            e.prefix = node.name
            v = e.make("Div", [node.input[0], e.const("scale", scale, np.float32)], "scaled")
            d_scale, d_zp, _ = dq_params
            # The DQ's own zero point may differ from the Q's: q + zp_q - zp_dq.
            v = on_grid(e, v, lo - zp, hi - zp, zp - d_zp)
            e.final("Mul", [v, e.const("dq_scale", d_scale, np.float32)], "dequantized")
            drop.add(dq.name)
            done.append(node.name)
            remark(f"node '{node.name}' (QuantizeLinear) and '{dq.name}' (DequantizeLinear): "
                   "run in float (fake quantisation), not on the int8 cube")
        elif node.op_type == "QuantizeLinear" and params is not None:
            scale, zp, zdtype = params
            elem = _ELEM_TYPE[np.dtype(zdtype)]
            _, lo, hi = QUANT_TYPES[elem]
            e = Expansion(graph, node, nodes)
            v = e.make("Div", [node.input[0], e.const("scale", scale, np.float32)], "scaled")
            e.final("Cast", [on_grid(e, v, lo - zp, hi - zp, zp)], "quantized", to=elem)
            done.append(node.name)
            remark(f"node '{node.name}' (QuantizeLinear): rounded and saturated in float, "
                   f"cast to {QUANT_TYPES[elem][0]}")
        elif node.op_type == "DequantizeLinear" and params is not None:
            scale, zp, _ = params
            e = Expansion(graph, node, nodes)
            v = e.make("Cast", [node.input[0]], "float", to=1)
            if np.any(zp != 0):
                v = e.make("Sub", [v, e.const("zero_point", zp, np.float32)], "centred")
            e.final("Mul", [v, e.const("scale", scale, np.float32)], "dequantized")
            done.append(node.name)
            remark(f"node '{node.name}' (DequantizeLinear): run in float, not on the int8 cube")
        else:
            nodes.append(node)
    if done:
        del graph.node[:]
        graph.node.extend(nodes)
    return done


def on_grid(e, v: str, lo, hi, offset) -> str:
    """round(clip(v, lo, hi)) + offset in f32, rounding half to even as ONNX
    does; lo, hi and offset are integers, scalars or per-axis arrays.
    Clipping to integer bounds commutes with rounding, and keeps |v| < 2^22,
    where adding 1.5 * 2^23 rounds to an integer (the f32 spacing there is
    1); subtracting 1.5 * 2^23 - offset then is exact."""
    if np.ndim(lo):
        v = e.make("Max", [v, e.const("qlo", lo, np.float32)], "qlo_clip")
        v = e.make("Min", [v, e.const("qhi", hi, np.float32)], "bounded")
    else:
        v = e.make("Clip", [v, e.const("qlo", lo, np.float32), e.const("qhi", hi, np.float32)],
                   "bounded")
    v = e.make("Add", [v, e.const("magic", _MAGIC, np.float32)], "plus_magic")
    return e.make("Sub", [v, e.const("magic_less_offset", _MAGIC - np.asarray(offset, np.float32),
                                     np.float32)], "rounded")
