"""A packed Q, K, V projection taken apart by a transpose, as three projections.

torchvision's Swin computes its window attention's Q, K and V as one
projection `x @ W + b` (W [C, 3C]), reshapes it to [B, S, 3, H, D],
transposes it to [3, B, H, S, D] (perm 2, 0, 3, 1, 4) and takes part i with
a Gather (folded: a Slice and a Reshape). On the device the transpose moves
the whole projection in runs of D elements, one core's share thousands of
small bursts (Swin-T's first stage: 47k cycles a block on 32 cores), and
npu-fuse-attention sees Q, K and V as slices of one tensor. Part i is the
projection by W's and b's columns i*C .. (i+1)*C, reshaped to [B, S, H, D]
and transposed (0, 2, 1, 3): the separate projections HuggingFace exports,
whose head transposes the fused attention reads. The same arithmetic on the
same weights; npu-fuse-horizontal may compute the three as one again.
"""

from __future__ import annotations

import math

import numpy as np


def split_packed_projections(model, types: dict | None) -> list[str]:
    """Rewrite (in place) each part taken from a transposed packed
    projection as its own projection; the names of the nodes rewritten
    (the packed nodes nothing else reads are removed)."""
    if types is None or not any(n.op_type == "Transpose" for n in model.graph.node):
        return []
    from npu.frontend.onnx_expansion import constants, readers_of, rewrite_nodes
    from npu.frontend.onnx_fold import remove_dead_nodes

    graph = model.graph
    producer = {o: n for n in graph.node for o in n.output}
    readers = readers_of(graph)
    outputs = {o.name for o in graph.output}

    constant = constants(model)

    def part_of(node) -> tuple | None:
        """(the transpose, the part's index) when `node` takes one part of a
        packed transpose along its first axis: Gather(t, i, axis 0), or a
        Reshape / Squeeze dropping that axis from Slice(t, i, i + 1, axis 0)."""
        if node.op_type == "Gather":
            index = constant(node.input[1])
            axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
            if index is None or index.ndim != 0 or axis != 0:
                return None
            return producer.get(node.input[0]), int(index)
        if node.op_type not in ("Reshape", "Squeeze"):
            return None
        piece = producer.get(node.input[0])
        if piece is None or piece.op_type != "Slice" or len(readers.get(piece.output[0], [])) != 1:
            return None
        bounds = [constant(i) if i else None for i in list(piece.input[1:]) + [""] * (5 - len(piece.input))]
        starts, ends, axes, steps = bounds
        if any(b is None or b.size != 1 for b in (starts, ends)) or (axes is not None and int(axes.flat[0]) != 0) \
                or (steps is not None and int(steps.flat[0]) != 1):
            return None
        whole = types.get(piece.input[0], (None, 0))[0]
        if whole is None or types.get(node.output[0], (None, 0))[0] != whole[1:]:
            return None
        start = int(starts.flat[0])
        return (producer.get(piece.input[0]), start) if int(ends.flat[0]) == start + 1 else None

    def packed(transpose) -> tuple | None:
        """(x, W, b, the reshape's shape, the packed axis, the part's perm)
        of Transpose(Reshape(x @ W [+ b])) whose first axis is the packed
        one, split off the projection's columns; None otherwise."""
        if transpose is None or transpose.op_type != "Transpose":
            return None
        perm = next((list(a.ints) for a in transpose.attribute if a.name == "perm"), None)
        reshape = producer.get(transpose.input[0])
        if perm is None or reshape is None or reshape.op_type != "Reshape":
            return None
        shape = types.get(reshape.output[0], (None, 0))[0]
        node = producer.get(reshape.input[0])
        bias = None
        if node is not None and node.op_type == "Add":
            at = next((i for i, v in enumerate(node.input) if constant(v) is not None), None)
            if at is None:
                return None
            bias, node = constant(node.input[at]), producer.get(node.input[1 - at])
        if node is None or node.op_type != "MatMul" or shape is None:
            return None
        weight, rows = constant(node.input[1]), types.get(node.output[0], (None, 0))[0]
        axis = perm[0]
        if weight is None or weight.ndim != 2 or rows is None or shape[:axis] != rows[:-1] \
                or math.prod(shape[axis:]) != weight.shape[1] or axis == len(shape) - 1:
            return None
        if bias is not None and bias.shape != (weight.shape[1],):
            return None
        chain = [node.output[0], reshape.input[0], reshape.output[0], transpose.output[0]]
        if any(len(readers.get(v, [])) != 1 or v in outputs for v in dict.fromkeys(chain[:3])) \
                or chain[3] in outputs:
            return None
        if not all(part_of(r) is not None and part_of(r)[0] is transpose
                   for piece in readers.get(transpose.output[0], [])
                   for r in (readers.get(piece.output[0], []) if piece.op_type == "Slice" else [piece])):
            return None
        part_perm = [a - (a > axis) for a in perm[1:]]
        return node.input[0], weight, bias, shape[:axis] + shape[axis + 1:], shape[axis], part_perm

    def expand(node, types: dict, expansion) -> bool:
        found = part_of(node)
        if found is None or (source := packed(found[0])) is None:
            return False
        x, weight, bias, part_shape, parts, perm = source
        index = found[1]
        if not 0 <= index < parts:
            return False
        width = weight.shape[1] // parts
        columns = slice(index * width, (index + 1) * width)
        ex = expansion()
        rows, elem = types[x][0][:-1], types[x][1]
        w = ex.const("weight", weight[:, columns], weight.dtype)
        value = ex.make("MatMul", [x, w], "projected")
        types.update({w: ([weight.shape[0], width], elem), value: (rows + [width], elem)})
        if bias is not None:
            b = ex.const("bias", bias[columns], bias.dtype)
            value = ex.make("Add", [value, b], "biased")
            types.update({b: ([width], elem), value: (rows + [width], elem)})
        shape = ex.const("heads_shape", np.array(part_shape, np.int64), np.int64)
        if perm == sorted(perm):
            ex.final("Reshape", [value, shape], "split_heads")
            return True
        value = ex.make("Reshape", [value, shape], "split_heads")
        types[value] = (list(part_shape), elem)
        ex.final("Transpose", [value], "heads_first", perm=perm)
        return True

    done = rewrite_nodes(model, types, expand)
    if done:
        remove_dead_nodes(model)
    return done
