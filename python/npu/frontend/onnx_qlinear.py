"""QLinearMatMul, QLinearConv and QDQ Gemms as the QDQ graphs they stand for.

    QLinearMatMul(a, s_a, zp_a, b, s_b, zp_b, s_y, zp_y)
        = QuantizeLinear(DequantizeLinear(a) x DequantizeLinear(b), s_y, zp_y)

and QLinearConv likewise, its int32 bias dequantised with scale s_a * s_b
(computed on the host in f32 when both are constants, so that the int8
conv adds the int32 bias itself before requantising).

Written out so, `onnx_qdq_int8` finds the int8-cube form in it (a run-time
int8 a, a constant int8 b with zero zero points; for a QLinearConv the
conditions of `onnx_qdq_conv`) and requantises on the drain with one
multiplication by s_a * s_b / s_y, as onnxruntime does; the rest goes the
QDQ graph's other ways (the float fallback, or the one-line refusal of a
QuantizeLinear it cannot run). Runs first, before the QDQ rewrites read the
graph.
"""

from __future__ import annotations

import numpy as np

from npu.frontend.onnx_qdq import _constants, producers_of, quant_axis


def expand_qlinear_ops(model, remark) -> list[str]:
    """Rewrite (in place) every QLinearMatMul and QLinearConv into
    DequantizeLinears, the float op and a QuantizeLinear; their names."""
    from onnx import helper, numpy_helper

    graph = model.graph
    if not any(n.op_type in ("QLinearMatMul", "QLinearConv") for n in graph.node):
        return []
    consts = _constants(model)
    nodes, done = [], []
    for node in graph.node:
        if node.op_type not in ("QLinearMatMul", "QLinearConv"):
            nodes.append(node)
            continue
        a, s_a, zp_a, b, s_b, zp_b, s_y, zp_y = node.input[:8]
        name, conv = node.name, node.op_type == "QLinearConv"
        # A per-channel weight scale runs along a conv's output channels (axis
        # 0 of [Cout, Cin, kh, kw]), along a matmul's columns (its last axis).
        weight_axis = 0 if conv else -1
        operands = [(a, s_a, zp_a, None), (b, s_b, zp_b, weight_axis)]
        bias = node.input[8] if conv and len(node.input) > 8 and node.input[8] else ""
        if bias:  # int32, scale s_a * s_b (per channel with s_b), zero point 0
            if s_a in consts and s_b in consts:  # on the host, as onnxruntime's f32 product
                graph.initializer.append(numpy_helper.from_array(
                    np.float32(consts[s_a].reshape(())) * consts[s_b].astype(np.float32),
                    f"{name}/bias_scale"))
            else:
                nodes.append(helper.make_node("Mul", [s_a, s_b], [f"{name}/bias_scale"],
                                              name=f"{name}/bias_scale"))
            operands.append((bias, f"{name}/bias_scale", "", 0))
        dequantized = []
        for (x, scale, zp, axis), tag in zip(operands, ("a", "b", "bias")):
            per_channel = axis is not None and (scale not in consts or consts[scale].size > 1)
            nodes.append(helper.make_node(
                "DequantizeLinear", [x, scale] + ([zp] if zp else []), [f"{name}/{tag}"],
                name=f"{name}/dequantize_{tag}", **({"axis": axis} if per_channel else {})))
            dequantized.append(f"{name}/{tag}")
        op = "Conv" if conv else "MatMul"
        nodes.append(helper.make_node(op, dequantized, [f"{name}/product"], name=name))
        if conv:
            nodes[-1].attribute.extend(node.attribute)
        nodes.append(helper.make_node("QuantizeLinear", [f"{name}/product", s_y, zp_y],
                                      list(node.output), name=f"{name}/quantize"))
        done.append(name)
        remark(f"node '{name}' ({node.op_type}): taken as DequantizeLinear -> {op} -> "
               "QuantizeLinear")
    del graph.node[:]
    graph.node.extend(nodes)
    return done


def gemms_as_matmuls(model, remark) -> list[str]:
    """Rewrite (in place) every Gemm(DequantizeLinear(a), DequantizeLinear(W_q), C)
    of a constant int8 W_q, alpha = beta = 1 and A not transposed (torch's
    Linear, quantised) as MatMul(DQ(a), DQ(W_q as [K, N])) + C: a transposed
    W_q is transposed on the host, its per-channel axis with it. Their names."""
    from onnx import helper, numpy_helper

    graph = model.graph
    if not any(n.op_type == "Gemm" for n in graph.node):
        return []
    consts = _constants(model)
    producers = producers_of(graph)
    nodes, done = [], []
    for node in graph.node:
        if node.op_type != "Gemm" or not _int8_weight_gemm(node, producers, consts):
            nodes.append(node)
            continue
        dq_b = producers[node.input[1]]
        name, b = node.name, node.input[1]
        if any(a.name == "transB" and a.i for a in node.attribute):
            w, scale = consts[dq_b.input[0]], consts.get(dq_b.input[1])
            graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(w.T),
                                                             f"{name}/weight_kn"))
            # (a run-time scale may be per channel: its axis moves with it)
            dq_attrs = {"axis": 1 - quant_axis(dq_b) % 2} if scale is None or scale.size > 1 else {}
            b = f"{name}/weight"
            nodes.append(helper.make_node("DequantizeLinear", [f"{name}/weight_kn", *dq_b.input[1:]],
                                          [b], name=f"{name}/dequantize_weight", **dq_attrs))
        bias = node.input[2] if len(node.input) > 2 and node.input[2] else ""
        product = f"{name}/product" if bias else node.output[0]
        nodes.append(helper.make_node("MatMul", [node.input[0], b], [product], name=name))
        if bias:
            nodes.append(helper.make_node("Add", [product, bias], list(node.output),
                                          name=f"{name}/bias"))
        done.append(name)
        remark(f"node '{name}' (Gemm): taken as MatMul{' + Add' if bias else ''} of its "
               "dequantised operands")
    if done:
        del graph.node[:]
        graph.node.extend(nodes)
    return done


def _int8_weight_gemm(node, producers: dict, consts: dict) -> bool:
    """A Gemm of two DequantizeLinears, the second of a constant 2-D int8
    weight, with alpha = beta = 1 and A not transposed."""
    dq_a, dq_b = (producers.get(i) for i in node.input[:2])
    if not (dq_a and dq_b and dq_a.op_type == dq_b.op_type == "DequantizeLinear"):
        return False
    w = consts.get(dq_b.input[0])
    attrs = {a.name: (a.f if a.type == a.FLOAT else a.i) for a in node.attribute}
    return w is not None and w.dtype == np.int8 and w.ndim == 2 and not attrs.get("transA", 0) \
        and attrs.get("alpha", 1.0) == 1.0 and attrs.get("beta", 1.0) == 1.0
