"""MatMulInteger: on the int8 cube where it can run there, else exactly through the f16 cube.

The int8 cube (int8 x int8, i32 accumulation) takes a MatMulInteger whose
operands are int8, whose B is a constant with a zero B zero point (symmetric
weights, what quantisers make) and whose K is even (the run-time A operand
is laid out in byte pairs). A's zero point, one per tensor, is taken out of
the product: (a - a_zp) x b = a x b - a_zp * colsum(b), the column sums made
on the host, so the node becomes a zero-point-free MatMulInteger (lowered by
`passes/linalg_to_ascend/matmul_int8.py`) and one i32 subtraction.

Every other MatMulInteger goes through the f16 cube: (a - a_zp) and
(b - b_zp) are integers of magnitude <= 255, exact in f16, their products
exact, and the f32 accumulation exact while every partial sum stays below
2^24, which K * max|a - a_zp| * max|b - b_zp| < 2^24 guarantees. Beyond that
bound the node is refused with one line naming it. Zero points are
subtracted before the product (per row of a, per column of b), the cheapest
place while the operands are converted anyway.
"""

from __future__ import annotations

import numpy as np

from npu.frontend.onnx_qdq import _constants

INT_RANGES = {3: (-128, 127), 2: (0, 255)}  # int8, uint8


def constant_zero_points(node, consts: dict, fail, where: str) -> list[np.ndarray]:
    """The zero points of an integer product's two operands (inputs 2 and 3),
    which must be constants (zero when absent)."""
    zps = []
    for i in (2, 3):
        name = node.input[i] if i < len(node.input) else ""
        if name and name not in consts:
            raise fail(f"{where}: zero point '{name}' must be a constant")
        zps.append(consts[name].astype(np.int64) if name else np.zeros((), np.int64))
    return zps


def exact_in_f32(terms: int, zps: list[np.ndarray], types: tuple[int, int]) -> bool:
    """Whether `terms` products of the centred operands (x - zp) sum exactly in
    an f32 accumulator: at most terms * max|x - zp| * max|w - zp| < 2^24."""
    span = [max(abs(lo - int(z.min())), abs(hi - int(z.max())))
            for z, (lo, hi) in zip(zps, (INT_RANGES[t] for t in types))]
    return terms * span[0] * span[1] < 2**24


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
        if a_dims is None or b_t not in INT_RANGES or a_t not in INT_RANGES:
            raise fail(f"{where}: needs static shapes and int8/uint8 operands")
        zps = constant_zero_points(node, consts, fail, where)
        k = a_dims[-1]
        why_not = _not_on_int8_cube(node, a_t, b_t, zps, k, consts)
        if not why_not:
            _on_int8_cube(node, nodes, graph, consts[node.input[1]], int(zps[0].reshape(-1)[0]))
            done.append(node.name)
            remark(f"{where}: on the int8 cube")
            continue
        if not exact_in_f32(k, zps, (a_t, b_t)):
            raise fail(f"{where}: K = {k} with these zero points can exceed 2^24 in the f32 "
                       f"accumulator of the f16 cube, and the int8 cube cannot take this node: "
                       f"{why_not}")
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
               f"not on the int8 cube: {why_not}")
    del graph.node[:]
    graph.node.extend(nodes)
    return done


def _not_on_int8_cube(node, a_t: int, b_t: int, zps: list, k: int, consts: dict) -> str:
    """Why the node cannot run on the int8 cube ('' when it can)."""
    if (a_t, b_t) != (3, 3):
        return "its operands are not both int8"
    if node.input[1] not in consts:
        return "its B operand is computed at run time (the int8 cube takes constant weights)"
    if np.any(zps[1] != 0):
        return "B has a non-zero zero point"
    if zps[0].size != 1:
        return "A has a zero point per row"
    if k % 2:
        return f"K = {k} is odd (A is laid out in byte pairs)"
    return ""


def _on_int8_cube(node, nodes: list, graph, b: np.ndarray, a_zp: int) -> None:
    """The node without zero points, and a_zp * colsum(b) subtracted from it."""
    from npu.frontend.onnx_expansion import Expansion

    if not a_zp:
        del node.input[2:]
        nodes.append(node)
        return
    e = Expansion(graph, node, nodes)
    product = e.make("MatMulInteger", list(node.input[:2]), "int8_product")
    e.final("Sub", [product, e.const("a_zero_point_correction", zero_point_correction(a_zp, b),
                                     np.int32)], "a_zero_point_removed")


def zero_point_correction(a_zp: int, b: np.ndarray) -> np.ndarray:
    """a_zp * colsum(b) (int64, [.., 1, N]): (a - a_zp) x b = a x b - this."""
    return a_zp * b.astype(np.int64).sum(axis=-2, keepdims=True)
