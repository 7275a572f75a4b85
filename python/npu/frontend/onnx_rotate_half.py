"""The rotary embedding's `rotate_half` folded into the projection it
rotates, before torch-mlir.

LLaMA, Qwen2, Mistral, Gemma and Phi-3 rotate each head's queries and keys
as `x * cos + rotate_half(x) * sin`, where `rotate_half(x)` is
`Concat(-x[..., D/2:], x[..., :D/2])` along the head dim D. As two Slices,
a Neg and a Concat those are four kernels, each a round trip of the whole
tensor through GM. The same values are `x @ R` with R [D, D] holding one -1
or 1 a column (R[j + D/2, j] = -1, R[j - D/2, j] = 1). When x is a
projection split into heads, `Transpose(Reshape(x_in @ W [+ b]))` with the
head dim last, R goes into the weight: `x_in @ (W R_h) [+ b R_h]` (R_h: R
on each head's columns, exact on the host), reshaped and transposed as x
is. That matmul reads the input the Q, K, V projections read, and
npu-fuse-horizontal computes them as one where it pays (a tiny LLaMA, one
core: 84,701 -> 60,596 cycles; at hidden 512 and seq 128 807,329 against
842,492 on one core, 174,028 against 173,836 on 32). Its operands are f16,
as the projection's. Qwen3's per-head RMSNorm between the projection and
the rotation, `g * P * s` (s constant along the head dim), is gone through:
`((P * g) @ R) * s`, g into the weight too. Other rotate_halves (GPT-NeoX's
partial rotary) are left as exported.
"""

from __future__ import annotations

import numpy as np


def rotate_halves_as_matmuls(model, types: dict | None = None) -> list[str]:
    """Rewrite (in place) every Concat(Neg(Slice(x, D/2:)), Slice(x, :D/2))
    along the last axis of a static float x that is a projection split into
    heads; the names of the Concats rewritten (the Slices and Negs nothing
    else reads are removed)."""
    if not any(n.op_type == "Concat" for n in model.graph.node):
        return []
    from onnx import helper

    from npu.frontend.onnx_expansion import constants, rewrite_nodes
    from npu.frontend.onnx_fold import remove_dead_nodes

    producer = {o: n for n in model.graph.node for o in n.output}
    constant = constants(model)

    def last_axis_slice(name: str, rank: int):
        """(source, start, end) of a unit-step Slice of the last axis, else None."""
        node = producer.get(name)
        if node is None or node.op_type != "Slice" or node.domain not in ("", "ai.onnx") or len(node.input) < 3:
            return None
        parts = [constant(i) if i else None for i in list(node.input[1:5]) + [""] * (5 - len(node.input))]
        starts, ends, axes, steps = parts
        if starts is None or ends is None or starts.size != 1 or ends.size != 1:
            return None
        if len(node.input) > 3 and node.input[3] and (axes is None or int(axes.ravel()[0]) % rank != rank - 1):
            return None
        if not (len(node.input) > 3 and node.input[3]) and rank != 1:
            return None  # no axes: the first axis
        if len(node.input) > 4 and node.input[4] and (steps is None or int(steps.ravel()[0]) != 1):
            return None
        return node.input[0], int(starts.ravel()[0]), int(ends.ravel()[0])

    def expand(node, types: dict, expansion) -> bool:
        if node.op_type != "Concat" or len(node.input) != 2:
            return False
        dims, elem = types.get(node.output[0], (None, 0))
        if dims is None or elem not in (1, 10) or not all(isinstance(d, int) and d > 0 for d in dims):
            return False
        rank, width = len(dims), dims[-1]
        axis = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "axis"), None)
        neg = producer.get(node.input[0])
        if axis is None or axis % rank != rank - 1 or width % 2 or neg is None or neg.op_type != "Neg":
            return False
        half = width // 2
        upper, lower = last_axis_slice(neg.input[0], rank), last_axis_slice(node.input[1], rank)
        if upper is None or lower is None or upper[0] != lower[0]:
            return False
        if types.get(upper[0], (None, 0))[0] != dims:
            return False
        (_, u_start, u_end), (_, l_start, l_end) = upper, lower
        if (u_start % width, min(u_end, width) if u_end >= 0 else u_end % width) != (half, width) \
                or (l_start % width, l_end if l_end >= 0 else l_end % width) != (0, half):
            return False
        r = np.zeros((width, width), np.float32 if elem == 1 else np.float16)
        for j in range(half):
            r[j + half, j] = -1
            r[j, j + half] = 1
        # The rotated part of a head (Phi, StableLM, GPT-NeoX rotate its first
        # columns; GPT-NeoX's fused QKV takes q from a head's 3D): Slices of
        # the last axis, each window inside the one before.
        source, offset = upper[0], 0
        while (cut := last_axis_slice(source, rank)) is not None:
            inner, start, end = cut
            n = (types.get(inner, (None, 0))[0] or [0])[-1]
            start, end = (min(max(v + n if v < 0 else v, 0), n) for v in (start, end))
            if n <= 0 or offset + width > end - start:
                return False
            source, offset = inner, offset + start
        # Only folded into a projection: a matmul of x by R of its own cost
        # more than the slices on 32 cores (a LLaMA of hidden 512, 8 heads of
        # 64, seq 128: 218,060 cycles against 173,836 as exported).
        return _from_projection(expansion(), source, r, offset, producer, constant, types, last_axis_slice)

    done = rewrite_nodes(model, types, expand)
    if done:
        remove_dead_nodes(model)
    return done


def _from_projection(ex, source: str, r: np.ndarray, offset: int, producer: dict, constant,
                     types: dict, last_axis_slice) -> bool:
    """Writes `source @ r` as the projection that makes `source` with `r`
    folded into its weight (and bias), when `source` is
    Transpose(Reshape(MatMul(x, W) [+ b])) keeping the head dim last, or
    Transpose(g * (Reshape(...) * s)) with a constant gain g over the head
    dim and s constant along it (Qwen3's per-head RMSNorm: (g * P * s) @ R =
    ((P * g) @ R) * s); False (nothing written) otherwise. `offset`: the
    first of the head's columns `r` rotates (a part of the head: the
    projection then computes only those columns). A Slice of the
    projection's columns before the Reshape (Phi-3's fused QKV) takes the
    weight's and bias's columns."""
    transpose = producer.get(source)
    if transpose is None or transpose.op_type != "Transpose":
        return False
    perm = next((list(a.ints) for a in transpose.attribute if a.name == "perm"), None)
    if perm is None or perm[-1] != len(perm) - 1:
        return False
    reshape_out = transpose.input[0]
    split = types.get(reshape_out, (None, 0))[0]
    if split is None or offset + r.shape[0] > split[-1]:
        return False
    width, part = split[-1], r.shape[0]
    gain, row_scale, inner = _head_norm(reshape_out, width, producer, constant, types)
    reshape = producer.get(inner)
    if reshape is None or reshape.op_type != "Reshape" or types.get(inner, (None, 0))[0] != split:
        return False
    node = producer.get(reshape.input[0])
    columns = None
    cut = last_axis_slice(reshape.input[0], len(types.get(reshape.input[0], (None, 0))[0] or [0]))
    if cut is not None:
        n = (types.get(cut[0], (None, 0))[0] or [0])[-1]
        columns = slice(*(min(max(v + n if v < 0 else v, 0), n) for v in cut[1:]))
        node = producer.get(cut[0])
    bias = None
    if node is not None and node.op_type == "Add":
        values = [constant(i) for i in node.input]
        at = next((i for i, v in enumerate(values) if v is not None), None)
        if at is None:
            return False
        bias, node = values[at], producer.get(node.input[1 - at])
    if node is None or node.op_type != "MatMul" or split is None:
        return False
    weight = constant(node.input[1])
    if weight is not None and columns is not None:
        if weight.ndim != 2 or (bias is not None and bias.shape != (weight.shape[1],)):
            return False
        weight, bias = weight[:, columns], bias[columns] if bias is not None else None
    if weight is None or weight.ndim != 2 or weight.shape[1] % width or split[-1] != width \
            or types.get(reshape.input[0], (None, 0))[0][-1:] != [weight.shape[1]]:
        return False
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != weight.shape[1]):
        return False
    heads = weight.shape[1] // width
    turn = np.zeros((width, part))
    turn[offset:offset + part] = r  # the part's columns of the head, rotated
    if gain is not None:
        turn = gain.astype(np.float64)[:, None] * turn  # diag(g) R
    rotated = np.einsum("khd,de->khe", weight.reshape(weight.shape[0], heads, width).astype(np.float64),
                        turn).reshape(weight.shape[0], heads * part).astype(weight.dtype)
    value = ex.make("MatMul", [node.input[0], ex.const("rotated_weight", rotated, weight.dtype)], "projection")
    if bias is not None:
        b = (bias.reshape(heads, width).astype(np.float64) @ turn).reshape(-1).astype(bias.dtype)
        value = ex.make("Add", [value, ex.const("rotated_bias", b, bias.dtype)], "bias")
    shape = reshape.input[1] if part == width else ex.const("part_shape", split[:-1] + [part], np.int64)
    value = ex.make("Reshape", [value, shape], "heads")
    if row_scale is not None:
        value = ex.make("Mul", [value, row_scale], "row_scale")
    ex.final("Transpose", [value], "rotate", perm=perm)
    return True


def _head_norm(name: str, width: int, producer: dict, constant, types: dict):
    """(g, s, P) when `name` is g * (P * s) (Casts to the same type between)
    with g a constant of the head dim's `width` values and s of last dim 1;
    else (None, None, name)."""
    def through_casts(value: str) -> str:
        node = producer.get(value)
        while node is not None and node.op_type == "Cast" and \
                types.get(node.input[0], (None, 0))[1] == types.get(value, (None, 0))[1]:
            value = node.input[0]
            node = producer.get(value)
        return value

    node = producer.get(name)
    if node is None or node.op_type != "Mul":
        return None, None, name
    values = [constant(i) for i in node.input]
    at = next((i for i, v in enumerate(values) if v is not None), None)
    if at is None or values[at].shape != (width,):
        return None, None, name
    scaled = producer.get(through_casts(node.input[1 - at]))
    if scaled is None or scaled.op_type != "Mul":
        return None, None, name
    dims = [types.get(i, (None, 0))[0] for i in scaled.input]
    for k in (0, 1):
        if dims[k] is not None and dims[k][-1:] == [1] and dims[1 - k] is not None and dims[1 - k][-1:] == [width]:
            return values[at], scaled.input[k], through_casts(scaled.input[1 - k])
    return None, None, name
