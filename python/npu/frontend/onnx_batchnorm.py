"""BatchNormalization in inference mode, folded away before torch-mlir.

With constant scale, bias, mean and variance, BatchNormalization is the
per-channel affine map y = a * x + b, a = scale / sqrt(var + eps),
b = bias - mean * a (computed in f64, rounded once to the data type). So:
  * after a Conv with a constant weight whose output feeds nothing else, the
    map goes into the Conv: W'[o] = W[o] * a[o], B'[o] = B[o] * a[o] + b[o]
    (torchvision's conv-bn pairs; the Conv keeps its name, now writing the
    BatchNormalization's output);
  * anywhere else it becomes Mul(x, a) and Add(., b) on constants shaped
    [C, 1, ...] (the Mul carries the node's name, so errors still name it).
A BatchNormalization with a run-time parameter, in training mode or with
more than one output is left alone (and refused as an operator later).
"""

from __future__ import annotations

import numpy as np


def fold_batchnorms(model) -> list[str]:
    """Rewrite (in place) every foldable BatchNormalization; their names."""
    from npu.frontend.onnx_fold import (graph_uses, inferred_types, remove_dead_nodes,
                                        replace_nodes)

    graph = model.graph
    if not any(n.op_type == "BatchNormalization" for n in graph.node):
        return []
    types = inferred_types(model) or {}
    uses = graph_uses(graph)
    inits, producers, readers, outputs = uses.inits, uses.producers, uses.readers, uses.outputs
    done, nodes, new_inits = [], [], []
    for node in graph.node:
        affine = _affine(node, inits)
        if affine is None:
            nodes.append(node)
            continue
        a, b = affine
        conv = producers.get(node.input[0])
        if _foldable_conv(conv, inits, readers, outputs, len(a)):
            new_inits.extend(_fold_into_conv(conv, node, a, b, inits))
        else:
            made, made_inits = _as_mul_add(node, a, b, types)
            nodes.extend(made)
            new_inits.extend(made_inits)
        done.append(node.name)
    if done:  # the folded Convs were changed in place and kept in `nodes`
        graph.initializer.extend(new_inits)
        replace_nodes(graph, nodes)
        remove_dead_nodes(model)
    return done


def _attr(node, name: str, default):
    for a in node.attribute:
        if a.name == name:
            return a.f if a.type == a.FLOAT else a.i
    return default


def _affine(node, inits) -> tuple[np.ndarray, np.ndarray] | None:
    """(a, b) in f64 of a foldable BatchNormalization, else None."""
    from onnx import numpy_helper

    if node.op_type != "BatchNormalization" or node.domain not in ("", "ai.onnx"):
        return None
    if len(node.input) != 5 or len(node.output) != 1 or _attr(node, "training_mode", 0):
        return None
    if not all(name in inits for name in node.input[1:]):
        return None
    scale, bias, mean, var = (numpy_helper.to_array(inits[n]).astype(np.float64) for n in node.input[1:])
    eps = float(_attr(node, "epsilon", 1e-5))
    a = scale / np.sqrt(var + eps)
    return a, bias - mean * a


def _foldable_conv(conv, inits, readers, outputs, channels: int) -> bool:
    if conv is None or conv.op_type != "Conv" or conv.domain not in ("", "ai.onnx"):
        return False
    if len(conv.input) < 2 or conv.input[1] not in inits:
        return False
    if len(conv.input) > 2 and conv.input[2] and conv.input[2] not in inits:
        return False
    out = conv.output[0]
    return readers.get(out, 0) == 1 and out not in outputs and \
        list(inits[conv.input[1]].dims)[:1] == [channels]


def _fold_into_conv(conv, bn, a: np.ndarray, b: np.ndarray, inits) -> list:
    """Scale the Conv's weight and bias (new initializers); the Conv writes
    the BatchNormalization's output."""
    from onnx import numpy_helper

    weight = numpy_helper.to_array(inits[conv.input[1]])
    dtype = weight.dtype
    shape = (-1,) + (1,) * (weight.ndim - 1)
    new_w = (weight.astype(np.float64) * a.reshape(shape)).astype(dtype)
    bias = (numpy_helper.to_array(inits[conv.input[2]]).astype(np.float64)
            if len(conv.input) > 2 and conv.input[2] else np.zeros(len(a)))
    new_b = (bias * a + b).astype(dtype)
    w_name, b_name = f"{conv.name}/bn_folded_weight", f"{conv.name}/bn_folded_bias"
    del conv.input[1:]
    conv.input.extend([w_name, b_name])
    conv.output[0] = bn.output[0]
    return [numpy_helper.from_array(new_w, w_name), numpy_helper.from_array(new_b, b_name)]


def _as_mul_add(node, a: np.ndarray, b: np.ndarray, types) -> tuple[list, list]:
    from onnx import helper, numpy_helper

    dims, elem = types.get(node.input[0], (None, 1))
    rank = len(dims) if dims else 4
    dtype = {10: np.float16, 11: np.float64}.get(elem, np.float32)
    shape = (len(a),) + (1,) * max(rank - 2, 0)
    scale_name, shift_name = f"{node.name}/scale", f"{node.name}/shift"
    mid = f"{node.name}/scaled"
    made = [helper.make_node("Mul", [node.input[0], scale_name], [mid], name=node.name),
            helper.make_node("Add", [mid, shift_name], [node.output[0]], name=f"{node.name}/add")]
    return made, [numpy_helper.from_array(a.astype(dtype).reshape(shape), scale_name),
                  numpy_helper.from_array(b.astype(dtype).reshape(shape), shift_name)]
