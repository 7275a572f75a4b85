"""MatMulInteger through the f16 cube, exactly, until the int8 cube lowering exists.

(a - a_zp) and (b - b_zp) are integers of magnitude <= 255: exact in f16,
their products exact, and the f32 accumulation exact while every partial sum
stays below 2^24, which K * max|a - a_zp| * max|b - b_zp| < 2^24 guarantees.
A MatMulInteger beyond that bound is refused with one line naming the node
(the int8 cube's i32 accumulator will lift it). Zero points are subtracted
before the product (per row of a, per column of b), the cheapest place while
the operands are converted anyway.
"""

from __future__ import annotations

import numpy as np

from npu.frontend.onnx_qdq import _constants

_RANGES = {3: (-128, 127), 2: (0, 255)}  # int8, uint8


def rewrite_matmul_integers(model, types: dict | None, fail, remark) -> list[str]:
    """Rewrite (in place) every MatMulInteger into Cast/Sub/MatMul/Cast; their names."""
    from npu.frontend.onnx_expansion import Expansion

    graph = model.graph
    if not any(n.op_type == "MatMulInteger" for n in graph.node):
        return []
    consts = _constants(model)
    types = types or {}
    nodes, done = [], []
    for node in graph.node:
        if node.op_type != "MatMulInteger":
            nodes.append(node)
            continue
        where = f"node '{node.name}' (MatMulInteger)"
        a_dims, a_t = types.get(node.input[0], (None, 0))
        b_dims, b_t = types.get(node.input[1], (None, 0))
        if a_dims is None or b_t not in _RANGES or a_t not in _RANGES:
            raise fail(f"{where}: needs static shapes and int8/uint8 operands")
        zps = []
        for i, t in ((2, a_t), (3, b_t)):
            name = node.input[i] if i < len(node.input) else ""
            if name and name not in consts:
                raise fail(f"{where}: zero point '{name}' must be a constant")
            zps.append(consts[name].astype(np.int64) if name else np.zeros((), np.int64))
        span = [max(abs(lo - int(z.min())), abs(hi - int(z.max()))) for z, (lo, hi) in
                zip(zps, (_RANGES[a_t], _RANGES[b_t]))]
        k = a_dims[-1]
        if k * span[0] * span[1] >= 2**24:
            raise fail(f"{where}: K = {k} with these zero points can exceed 2^24 in the f32 "
                       "accumulator; exact integer matmul this large needs the int8 cube "
                       "lowering (not built yet)")
        e = Expansion(graph, node, nodes)
        sides = []
        for tag, x, zp, per in (("a", node.input[0], zps[0], -1), ("b", node.input[1], zps[1], 0)):
            v = e.make("Cast", [x], f"{tag}_float", to=1)
            if np.any(zp != 0):
                # a's zero point is per row (shape [M] -> [M, 1]); b's per column ([N]).
                z = zp.astype(np.float32)
                z = z.reshape(-1, 1) if (tag == "a" and z.ndim == 1) else z
                v = e.make("Sub", [v, e.const(f"{tag}_zero_point", z, np.float32)], f"{tag}_centred")
            sides.append(v)
        product = e.make("MatMul", sides, "product")
        e.final("Cast", [product], "to_int32", to=6)
        done.append(node.name)
        remark(f"{where}: run on the f16 cube with exact f32 accumulation (K = {k}), "
               "not yet on the int8 cube")
    del graph.node[:]
    graph.node.extend(nodes)
    return done
