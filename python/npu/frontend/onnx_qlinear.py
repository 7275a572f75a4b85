"""QLinearMatMul, and QDQ Gemms, as the QDQ MatMul graph `onnx_qdq_int8` takes.

    QLinearMatMul(a, s_a, zp_a, b, s_b, zp_b, s_y, zp_y)
        = QuantizeLinear(DequantizeLinear(a) x DequantizeLinear(b), s_y, zp_y)

Written out so, `onnx_qdq_int8` finds the int8-cube form in it (a run-time
int8 a, a constant int8 b with zero zero points) and requantises on the
drain with one multiplication by s_a * s_b / s_y, as onnxruntime does; the
rest goes the QDQ graph's other ways (the float fallback, or the one-line
refusal of a QuantizeLinear it cannot run). Runs first, before the QDQ
rewrites read the graph.
"""

from __future__ import annotations

import numpy as np

from npu.frontend.onnx_qdq import _constants


def expand_qlinear_matmuls(model, remark) -> list[str]:
    """Rewrite (in place) every QLinearMatMul into DequantizeLinear x 2,
    MatMul and QuantizeLinear; their names."""
    from onnx import helper

    graph = model.graph
    if not any(n.op_type == "QLinearMatMul" for n in graph.node):
        return []
    consts = _constants(model)
    nodes, done = [], []
    for node in graph.node:
        if node.op_type != "QLinearMatMul":
            nodes.append(node)
            continue
        a, s_a, zp_a, b, s_b, zp_b, s_y, zp_y = node.input
        name = node.name
        dequantized = []
        for tag, x, scale, zp in (("a", a, s_a, zp_a), ("b", b, s_b, zp_b)):
            per_column = scale in consts and consts[scale].size > 1
            nodes.append(helper.make_node(
                "DequantizeLinear", [x, scale, zp], [f"{name}/{tag}"],
                name=f"{name}/dequantize_{tag}", **({"axis": -1} if per_column else {})))
            dequantized.append(f"{name}/{tag}")
        nodes.append(helper.make_node("MatMul", dequantized, [f"{name}/product"], name=name))
        nodes.append(helper.make_node("QuantizeLinear", [f"{name}/product", s_y, zp_y],
                                      list(node.output), name=f"{name}/quantize"))
        done.append(name)
        remark(f"node '{name}' (QLinearMatMul): taken as DequantizeLinear -> MatMul -> "
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
    producers = {o: n for n in graph.node for o in n.output}
    nodes, done = [], []
    for node in graph.node:
        attrs = {a.name: (a.f if a.type == a.FLOAT else a.i) for a in node.attribute}
        dq_a, dq_b = (producers.get(i) for i in node.input[:2]) if node.op_type == "Gemm" \
            else (None, None)
        w = consts.get(dq_b.input[0]) if dq_b is not None else None
        if (dq_a is None or dq_a.op_type != "DequantizeLinear" or dq_b.op_type != "DequantizeLinear"
                or w is None or w.dtype != np.int8 or w.ndim != 2 or attrs.get("transA", 0)
                or attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0):
            nodes.append(node)
            continue
        name, b = node.name, node.input[1]
        if attrs.get("transB", 0):
            graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(w.T),
                                                             f"{name}/weight_kn"))
            axis = next((a.i for a in dq_b.attribute if a.name == "axis"), 1)
            dq_attrs = {"axis": 1 - axis % 2} if consts[dq_b.input[1]].size > 1 else {}
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
