"""Max pools of dequantised int8 maps pool the integers, in f16.

`quantize_static` writes a max pool between two quantisations as
`MaxPool(DequantizeLinear(q))`. A DequantizeLinear with a positive scale is
monotonic, so the pool commutes with it:

    MaxPool((q - zp) * s) = (MaxPool(q - zp)) * s

and `q - zp` is an integer of at most 255 in magnitude, exact in f16. The
pool then runs on the f16 map in NC1HWC0 (as an f16 model's does: split
over cores, half the bytes of the f32 map) instead of on the f32
dequantised one, which the NC1HWC0 pool kernel does not take; the result is
the same floats. Runs before constant folding and the QDQ rewrites in
float, which would make the DequantizeLinear f32 arithmetic first.
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from npu.frontend.onnx_expansion import Expansion
from npu.frontend.onnx_qdq import _constants, int8_activation, producers_of, users_of


def rewrite_qdq_max_pools(model, remark) -> list[str]:
    """Rewrite (in place) each MaxPool of a DequantizeLinear of a run-time
    int8 tensor (one positive scale, one zero point); their names."""
    graph = model.graph
    if not any(n.op_type == "MaxPool" for n in graph.node):
        return []  # (reading every initializer took 0.3 s of BERT-12's import)
    consts, producers = _constants(model), producers_of(graph)
    done, nodes = [], []
    for node in graph.node:
        dq = producers.get(node.input[0]) if node.op_type == "MaxPool" else None
        params = int8_activation(dq, consts) if dq is not None and dq.op_type == "DequantizeLinear" \
            else None
        if params is None or params[1] <= 0 or len([o for o in node.output if o]) != 1:
            nodes.append(node)
            continue
        q, scale, zp = params
        name = node.name
        e = Expansion(graph, node, nodes)
        # q and q - zp are integers of magnitude <= 255: exact in f16 all the way.
        centred = e.make("Cast", [q], "q", to=TensorProto.FLOAT16)
        if zp:
            centred = e.make("Sub", [centred, e.const("zero_point", zp, np.float16)], "centred")
        pooled = e.make("MaxPool", [centred], "pooled",
                        **{a.name: helper.get_attribute_value(a) for a in node.attribute})
        e.final("Mul", [e.make("Cast", [pooled], "f32", to=TensorProto.FLOAT),
                        e.const("scale", scale, np.float32)], "dequantized")
        done.append(name)
        remark(f"node '{name}' (MaxPool) of '{dq.name}' (DequantizeLinear): pools the int8 "
               "values in f16, then dequantises (the same floats: the scale is positive)")
    if done:
        del graph.node[:]
        graph.node.extend(nodes)
        _drop_unread(graph)
    return done


def _drop_unread(graph) -> None:
    """DequantizeLinears nothing reads any more (their pool now reads q)."""
    outputs = {o.name for o in graph.output}
    while True:
        users = users_of(graph)
        dead = [n for n in graph.node if n.op_type == "DequantizeLinear"
                and not any(o in users or o in outputs for o in n.output)]
        if not dead:
            return
        for n in dead:
            graph.node.remove(n)
