"""torch's packed `nn.MultiheadAttention` written as HuggingFace's attention.

torchvision's ViT and `nn.TransformerEncoderLayer` export their attention
with Q, K and V packed in one projection and taken apart by Reshapes, a
5-D Transpose, a Squeeze and Gathers (`onnx_packed_attention_match` says
exactly what is recognised). None of it is the form npu-fuse-attention and
its projection take: on the device each split was a copy, a one-core cast
and a transpose (ViT-B/16 on 32 cores: 1,782,023 cycles, ~145k a layer).

The same values are HF's: q, k, v = x W_i + b_i with W_i the i-th E columns
of the packed weight (sliced on the host), each Reshape [B, S, H, D] and
Transpose (0, 2, 1, 3) (k: (0, 2, 3, 1)), the scores scaled once by the
product of the scales, the context Transpose (0, 2, 1, 3), Reshape [B, S, E]
and MatMul by out_proj's weight (+ bias), on x as [B, S, E] (the
batch-first Transpose's input, or a Transpose (1, 0, 2) of the [S, B, E]
rows: a Reshape at batch 1). The need_weights=True spelling keeps its
[B*H, S, D] heads (a Reshape of HF's) and its scale on q: npu-fuse-attention
takes 3-D scores only unscaled. What lies between the scores and the
context (a mask, the Softmax) is kept (ViT-B/16: 801,861 cycles).
"""

from __future__ import annotations

import numpy as np

from npu.frontend.onnx_packed_attention_match import Graph, Match, match


def unpack_attentions(model, types: dict | None) -> list[str]:
    """Rewrite (in place) each packed multi-head attention; the names of their
    scores MatMuls. `types` (`onnx_fold.inferred_types`) learns the new values."""
    if types is None or not any(n.op_type == "Squeeze" for n in model.graph.node):
        return []
    from npu.frontend.onnx_fold import remove_dead_nodes, replace_nodes

    g = Graph(model, types)
    matches = {}
    for node in model.graph.node:
        if node.op_type == "MatMul" and node.domain in ("", "ai.onnx"):
            found = match(g, node)
            if found is not None:
                matches[id(node)] = found
    if not matches:
        return []
    by_last = {id(m.out.last): m for m in matches.values()}
    nodes, inits, done = [], [], []
    for node in model.graph.node:
        if id(node) in matches:
            nodes += _front(g, node, matches[id(node)], inits)
            done.append(node.name)
        elif id(node) in by_last:
            nodes += _back(g, by_last[id(node)], inits)
        else:
            nodes.append(node)
    model.graph.initializer.extend(inits)
    replace_nodes(model.graph, nodes)
    remove_dead_nodes(model)
    return done


class _Writer:
    """New nodes named `<prefix>/<tag>`, their constants and their types."""

    def __init__(self, g: Graph, prefix: str, elem: int, inits: list) -> None:
        self.g, self.prefix, self.elem, self.inits, self.nodes = g, prefix, elem, inits, []

    def const(self, tag: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        name = f"{self.prefix}/{tag}"
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(self, op: str, inputs: list[str], tag: str, dims: list[int], out: str | None = None,
             name: str | None = None, **attrs) -> str:
        """`out` (default `<prefix>/<tag>`) by `name` (default the same)."""
        from onnx import helper

        out = out or f"{self.prefix}/{tag}"
        self.nodes.append(helper.make_node(op, inputs, [out], name=name or f"{self.prefix}/{tag}", **attrs))
        self.g.types[out] = (list(dims), self.elem)
        return out


def _front(g: Graph, scores, m: Match, inits: list) -> list:
    """Q, K, V as three projections split into heads as HF does and the
    scores scaled once, in place of the scores MatMul; P.V reads the new V."""
    s, b, e = m.split.dims
    _, h, _, d = m.q.dims
    x = m.split.matmul.input[0]
    elem = g.types[x][1]
    w = _Writer(g, m.split.matmul.name, elem, inits)
    turn = g.node(x, "Transpose")
    if turn is not None and g.attr(turn, "perm", None) == [1, 0, 2] and g.dims(turn.input[0]) == [b, s, e]:
        x = turn.input[0]
    else:
        x = w.node("Transpose", [x], "batch_first", [b, s, e], perm=[1, 0, 2])
    split = w.const("heads_shape", np.array([b, s, h, d], np.int64))
    made = {}
    for tag, heads, perm in (("q", m.q, [0, 2, 1, 3]), ("k", m.k, [0, 2, 3, 1]), ("v", m.v, [0, 2, 1, 3])):
        cols = slice(heads.index * e, (heads.index + 1) * e)
        value = w.node("MatMul", [x, w.const(f"{tag}_weight", m.split.weight[:, cols])], f"{tag}_proj",
                       [b, s, e])
        if m.split.bias is not None:
            value = w.node("Add", [value, w.const(f"{tag}_bias", m.split.bias[cols])], f"{tag}_add",
                           [b, s, e])
        value = w.node("Reshape", [value, split], f"{tag}_split", [b, s, h, d])
        dims = [[b, s, h, d][p] for p in perm]
        made[tag] = w.node("Transpose", [value], f"{tag}_heads", dims, perm=perm)
        if m.q.flat:  # the attention's [B*H, S, D] (K^T: [B*H, D, S])
            dims = [b * h] + dims[2:]
            made[tag] = w.node("Reshape", [made[tag], w.const(f"{tag}_flat_shape", np.array(dims, np.int64))],
                               f"{tag}_flat", dims)
    w.prefix = scores.name
    if m.scale != 1.0:
        scale = w.const("scale", np.array(m.scale, np.float16 if elem == 10 else np.float32))
    if m.scale == 1.0:
        dims = [b * h, s, s] if m.q.flat else [b, h, s, s]
        w.node("MatMul", [made["q"], made["k"]], "scores", dims, out=scores.output[0], name=scores.name)
    elif m.q.flat:  # as exported: npu-fuse-attention takes [B*H, S, S] scores unscaled
        q = w.node("Mul", [made["q"], scale], "q_scaled", [b * h, s, d])
        w.node("MatMul", [q, made["k"]], "scores", [b * h, s, s], out=scores.output[0], name=scores.name)
    else:
        raw = w.node("MatMul", [made["q"], made["k"]], "unscaled", [b, h, s, s], name=scores.name)
        w.node("Mul", [raw, scale], "scaled", [b, h, s, s], out=scores.output[0])
    m.context.input[1] = made["v"]
    return w.nodes


def _back(g: Graph, m: Match, inits: list) -> list:
    """The context merged as HF does and out_proj as a MatMul (+ Add) on
    [B, S, E], in place of the output chain's last node."""
    b, h, s, d = m.q.dims
    n = m.out.weight.shape[1]
    w = _Writer(g, m.out.projection.name, g.types[m.context.output[0]][1], inits)
    value = m.context.output[0]
    if m.q.flat:
        value = w.node("Reshape", [value, w.const("heads_shape", np.array([b, h, s, d], np.int64))],
                       "heads", [b, h, s, d])
    value = w.node("Transpose", [value], "merge_heads", [b, s, h, d], perm=[0, 2, 1, 3])
    value = w.node("Reshape", [value, w.const("rows_shape", np.array([b, s, h * d], np.int64))],
                   "merge", [b, s, h * d])
    last = m.out.last.output[0]
    final = last if m.out.batch_first else None
    weight, name = w.const("weight", m.out.weight), m.out.projection.name
    if m.out.bias is None:
        value = w.node("MatMul", [value, weight], "out_proj", [b, s, n], out=final, name=name)
    else:
        value = w.node("MatMul", [value, weight], "out_proj", [b, s, n], name=name)
        value = w.node("Add", [value, w.const("bias", m.out.bias)], "out_bias", [b, s, n], out=final)
    if not m.out.batch_first:
        w.node("Transpose", [value], "seq_first", [s, b, n], out=last, perm=[1, 0, 2])
    return w.nodes
