"""torch's packed `nn.MultiheadAttention` written as HuggingFace's attention.

torch exports `nn.MultiheadAttention` (torchvision's ViT, `nn.Transformer
EncoderLayer`) on [S, B, E] rows: one projection by the packed in-weight
[E, 3E] (+ bias [3E]), taken apart by a Reshape to [S, B, 3, E], an
Unsqueeze, a 5-D Transpose (3, 1, 2, 0, 4), a Squeeze and three Gathers
(Slice + Reshape once folded); each of q, k, v then goes to heads by a
Reshape [S, B*H, D], a Transpose (1, 0, 2) and a Reshape [B, H, S, D]; q and
k^T are each scaled by d^-1/4, and the merged context [S*B, E] goes through
a Gemm (out_proj) and back to [S, B, E] (and a Transpose to [B, S, E] when
batch-first). None of it is the form npu-fuse-attention and its projection
take: on the device each split was a copy, a one-core cast and a transpose
(ViT-B/16 on 32 cores 1,782,023 cycles against HF ViT-base's 76,680).

The same values are HF's: q, k, v = x W_i + b_i with W_i the i-th E columns
of the packed weight (sliced on the host), each Reshape [B, S, H, D] and
Transpose (0, 2, 1, 3) (k: (0, 2, 3, 1)), the scores scaled once by the
product of the two scales, the context Transpose (0, 2, 1, 3), Reshape
[B, S, E] and MatMul by out_proj's weight (+ bias), on x as [B, S, E] (the
batch-first Transpose's input, or a Transpose (1, 0, 2) of the [S, B, E]
rows: a Reshape at batch 1). What lies between the scores and the context
(a mask, the Softmax) is kept. Every op, perm, axis, shape and constant is
checked; an intermediate value read elsewhere leaves the attention as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FLOATS = (1, 10)  # f32, f16


@dataclass
class _Split:
    """The packed projection and its split into [3, S, B, E]."""
    matmul: object           # the packed projection x [S, B, E] @ W
    weight: np.ndarray       # [E, 3E]
    bias: np.ndarray | None  # [3E]
    dims: tuple[int, int, int]  # S, B, E
    values: list[str]        # the intermediate values, each read once


@dataclass
class _Heads:
    """One of q, k, v: which E columns of the packed split, as [B, H, S, D]."""
    split: str               # the Squeeze's [3, S, B, E] value it is taken from
    index: int
    dims: list[int]          # B, H, S, D
    flat: bool               # as [B*H, S, D] (K: [B*H, D, S]), not [B, H, S, D]
    values: list[str]


@dataclass
class _Out:
    """The merged context through out_proj back to the layer's rows."""
    last: object             # the node whose output the rewrite writes
    projection: object       # the Gemm (or MatMul) of out_proj
    weight: np.ndarray       # [E, N]
    bias: np.ndarray | None  # [N]
    batch_first: bool        # `last` writes [B, S, N] (else [S, B, N])
    values: list[str]


@dataclass
class _Match:
    q: _Heads
    k: _Heads
    v: _Heads
    split: _Split
    scale: float
    context: object
    out: _Out


class _Graph:
    """Producers, readers, constants and static float shapes of a graph."""

    def __init__(self, model, types: dict) -> None:
        from onnx import numpy_helper

        graph = model.graph
        self.types, self._np = types, numpy_helper
        self.inits = {t.name: t for t in graph.initializer}
        self.producers = {o: n for n in graph.node for o in n.output}
        self.readers: dict[str, list] = {}
        for n in graph.node:
            for i in set(n.input):
                self.readers.setdefault(i, []).append(n)
        self.outputs = {v.name for v in graph.output}

    def node(self, value: str, op: str):
        node = self.producers.get(value)
        ok = node is not None and node.op_type == op and node.domain in ("", "ai.onnx")
        return node if ok else None

    def reader(self, value: str, op: str):
        """The one node reading `value` (not a graph output), when it is an `op`."""
        readers = self.readers.get(value, [])
        if len(readers) != 1 or value in self.outputs or readers[0].op_type != op \
                or readers[0].domain not in ("", "ai.onnx"):
            return None
        return readers[0]

    def dims(self, value: str) -> list[int] | None:
        dims, elem = self.types.get(value, (None, 0))
        ok = dims is not None and elem in FLOATS and all(isinstance(d, int) and d > 0 for d in dims)
        return list(dims) if ok else None

    def constant(self, value: str) -> np.ndarray | None:
        if value in self.inits:
            return self._np.to_array(self.inits[value])
        node = self.node(value, "Constant")
        if node is not None and len(node.attribute) == 1 and node.attribute[0].name == "value":
            return self._np.to_array(node.attribute[0].t)
        return None

    def ints(self, node, name: str, slot: int) -> list[int] | None:
        """An int list given as attribute `name` or as constant input `slot`."""
        for a in node.attribute:
            if a.name == name:
                return list(a.ints) if a.type == a.INTS else [a.i]
        value = self.constant(node.input[slot]) if len(node.input) > slot and node.input[slot] else None
        return None if value is None else [int(v) for v in value.ravel()]

    def attr(self, node, name: str, default):
        from onnx import helper

        return next((helper.get_attribute_value(a) for a in node.attribute if a.name == name), default)

    def once(self, value: str) -> bool:
        return len(self.readers.get(value, [])) == 1 and value not in self.outputs


def unpack_attentions(model, types: dict | None) -> list[str]:
    """Rewrite (in place) each packed multi-head attention; the names of their
    scores MatMuls. `types` (`onnx_fold.inferred_types`) learns the new values."""
    if types is None or not any(n.op_type == "Squeeze" for n in model.graph.node):
        return []
    from npu.frontend.onnx_fold import remove_dead_nodes, replace_nodes

    g = _Graph(model, types)
    matches = {}
    for node in model.graph.node:
        if node.op_type == "MatMul" and node.domain in ("", "ai.onnx"):
            found = _match(g, node)
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


def _match(g: _Graph, scores) -> _Match | None:
    """The packed attention whose Q.K^T `scores` is, or None."""
    q_value, q_scale = _scaled(g, scores.input[0])
    kt_value, k_scale = _scaled(g, scores.input[1])
    kt, inner = g.node(kt_value, "Transpose"), 1.0
    if kt is None or not g.once(kt_value):
        return None
    if g.attr(kt, "perm", None) == [0, 1, 3, 2]:  # K^T of [B, H, S, D] heads
        k_value, inner = _scaled(g, kt.input[0])
        k = _heads(g, k_value)
    elif g.attr(kt, "perm", None) == [1, 2, 0]:  # [S, B*H, D] -> [B*H, D, S]
        k = _rows(g, kt.input[0], flat=True)
    else:
        return None
    q = _heads(g, q_value)
    context = _context(g, scores.output[0])
    if q is None or k is None or context is None or not g.once(q_value):
        return None
    v = _heads(g, context.input[1])
    if v is None or len({q.split, k.split, v.split}) != 1 or not (q.dims == k.dims == v.dims) \
            or not q.flat == k.flat == v.flat:
        return None
    split = _packed(g, q.split)
    if split is None or len(g.readers.get(q.split, [])) != 3 or q.split in g.outputs:
        return None
    s, b, e = split.dims
    if q.dims[0] != b or q.dims[2] != s or q.dims[1] * q.dims[3] != e:
        return None
    out = _output(g, context.output[0], q.dims, q.flat)
    if out is None or not all(g.once(x) for x in q.values + k.values + v.values + split.values):
        return None
    return _Match(q, k, v, split, q_scale * k_scale * inner, context, out)


def _scaled(g: _Graph, value: str) -> tuple[str, float]:
    """(x, c) when `value` is x * c, c a scalar constant; else (value, 1)."""
    mul = g.node(value, "Mul")
    if mul is not None and len(mul.input) == 2:
        for k in (0, 1):
            c = g.constant(mul.input[1 - k])
            if c is not None and c.size == 1 and c.ndim <= 1 and g.once(mul.input[k]) \
                    and g.dims(mul.input[k]) == g.dims(value):
                return mul.input[k], float(c.ravel()[0])
    return value, 1.0


def _context(g: _Graph, scores: str):
    """The MatMul(P, V) reading the Softmax that the scores reach through
    nodes each reading the one before (a mask's Add); else None."""
    value = scores
    for _ in range(4):
        readers = g.readers.get(value, [])
        if len(readers) != 1 or value in g.outputs:
            return None
        node = readers[0]
        if node.op_type == "Softmax":
            axis = g.attr(node, "axis", -1)
            after = g.readers.get(node.output[0], [])
            if axis not in (-1, 3) or len(after) != 1 or after[0].op_type != "MatMul" \
                    or after[0].input[0] != node.output[0] or after[0].input[1] == node.output[0]:
                return None
            return after[0]
        value = node.output[0]
    return None


def _heads(g: _Graph, value: str) -> _Heads | None:
    """q or v as heads: [B, H, S, D] as Reshape(Transpose(rows, (1, 0, 2))),
    or [B*H, S, D] as Transpose(rows, (1, 0, 2)) (`flat`), of `_rows`."""
    dims = g.dims(value)
    to4 = g.node(value, "Reshape")
    if dims is not None and len(dims) == 4 and to4 is not None:
        b, h, s, d = dims
        swap = g.node(to4.input[0], "Transpose")
        if swap is None or g.attr(swap, "perm", None) != [1, 0, 2] or g.dims(to4.input[0]) != [b * h, s, d]:
            return None
        found = _rows(g, swap.input[0], flat=False)
        ok = found is not None and found.dims == dims
        return _Heads(found.split, found.index, dims, False, [value, to4.input[0]] + found.values) if ok else None
    swap = g.node(value, "Transpose")
    if dims is None or len(dims) != 3 or swap is None or g.attr(swap, "perm", None) != [1, 0, 2]:
        return None
    found = _rows(g, swap.input[0], flat=True)
    ok = found is not None and [found.dims[0] * found.dims[1]] + found.dims[2:] == dims
    return _Heads(found.split, found.index, found.dims, True, [value] + found.values) if ok else None


def _rows(g: _Graph, value: str, flat: bool) -> _Heads | None:
    """`value` [S, B*H, D] as Reshape(taken [S, B, E]) of a packed index."""
    to3 = g.node(value, "Reshape")
    dims = g.dims(value)
    if to3 is None or dims is None or len(dims) != 3:
        return None
    s, bh, d = dims
    taken = to3.input[0]
    rows = g.dims(taken)
    if rows is None or len(rows) != 3 or rows[0] != s or bh % rows[1] or rows[2] != bh // rows[1] * d:
        return None
    b, h = rows[1], bh // rows[1]
    found = _taken(g, taken)
    if found is None or g.dims(found[0]) != [3, s, b, h * d]:
        return None
    return _Heads(found[0], found[1], [b, h, s, d], flat, [value, taken] + found[2])


def _taken(g: _Graph, value: str) -> tuple[str, int, list[str]] | None:
    """(data, i, values) when `value` is data[i] along axis 0: a Gather by
    a constant scalar, or a Reshape of the Slice [i, i+1) (as folded)."""
    gather = g.node(value, "Gather")
    if gather is not None:
        index = g.constant(gather.input[1])
        if g.attr(gather, "axis", 0) != 0 or index is None or index.ndim != 0:
            return None
        return gather.input[0], int(index) % 3, []
    reshape = g.node(value, "Reshape")
    cut = g.node(reshape.input[0], "Slice") if reshape is not None else None
    if cut is None or len(cut.input) < 3:
        return None
    starts, ends = g.ints(cut, "starts", 1), g.ints(cut, "ends", 2)
    axes = g.ints(cut, "axes", 3) if len(cut.input) > 3 and cut.input[3] else [0]
    steps = g.ints(cut, "steps", 4) if len(cut.input) > 4 and cut.input[4] else [1]
    if starts is None or ends is None or len(starts) != 1 or axes not in ([0], [-4]) or steps != [1]:
        return None
    start = starts[0] % 3 if -3 <= starts[0] < 3 else None
    if start is None or ends[0] != start + 1 or g.dims(cut.output[0]) is None \
            or g.dims(cut.output[0])[0] != 1:
        return None
    return cut.input[0], start, [cut.output[0]]


def _packed(g: _Graph, data: str) -> _Split | None:
    """The packed projection of which `data` is Squeeze(Transpose(Unsqueeze(
    Reshape(x W [+ b], [S, B, 3, E]), 0), (3, 1, 2, 0, 4)), 3)."""
    dims = g.dims(data)
    squeeze = g.node(data, "Squeeze")
    if dims is None or len(dims) != 4 or squeeze is None:
        return None
    _, s, b, e = dims
    turn = g.node(squeeze.input[0], "Transpose")
    if [a % 5 for a in g.ints(squeeze, "axes", 1) or [0]] != [3] or turn is None \
            or g.attr(turn, "perm", None) != [3, 1, 2, 0, 4] or g.dims(squeeze.input[0]) != [3, s, b, 1, e]:
        return None
    unsqueeze = g.node(turn.input[0], "Unsqueeze")
    if unsqueeze is None or [a % 5 for a in g.ints(unsqueeze, "axes", 1) or [1]] != [0] \
            or g.dims(turn.input[0]) != [1, s, b, 3, e]:
        return None
    reshape = g.node(unsqueeze.input[0], "Reshape")
    if reshape is None or g.dims(unsqueeze.input[0]) != [s, b, 3, e] or g.dims(reshape.input[0]) != [s, b, 3 * e]:
        return None
    values = [squeeze.input[0], turn.input[0], unsqueeze.input[0], reshape.input[0]]
    projected, bias = reshape.input[0], None
    add = g.node(projected, "Add")
    if add is not None:
        consts = [g.constant(i) for i in add.input]
        at = next((i for i, c in enumerate(consts) if c is not None), None)
        if at is None or consts[at].shape != (3 * e,):
            return None
        bias, projected = consts[at], add.input[1 - at]
        values.append(projected)
    matmul = g.node(projected, "MatMul")
    weight = g.constant(matmul.input[1]) if matmul is not None else None
    if weight is None or weight.shape != (e, 3 * e) or g.dims(matmul.input[0]) != [s, b, e] \
            or weight.dtype != (bias.dtype if bias is not None else weight.dtype):
        return None
    return _Split(matmul, weight, bias, (s, b, e), values)


def _output(g: _Graph, context: str, heads: list[int], flat: bool) -> _Out | None:
    """The context [B, H, S, D] through Transpose (2, 0, 1, 3) (`flat`:
    [B*H, S, D] through (1, 0, 2)), Reshape [S*B, E], out_proj (Gemm, or
    MatMul [+ Add]), Reshape [S, B, N] and, batch-first, Transpose (1, 0, 2)."""
    b, h, s, d = heads
    e = h * d
    merge = g.reader(context, "Transpose")
    if merge is None or g.attr(merge, "perm", None) != ([1, 0, 2] if flat else [2, 0, 1, 3]):
        return None
    rows = g.reader(merge.output[0], "Reshape")
    if rows is None or g.dims(rows.output[0]) != [s * b, e]:
        return None
    values = [context, merge.output[0], rows.output[0]]
    found = _out_proj(g, rows.output[0], e)
    if found is None:
        return None
    projection, weight, bias, projected, more = found
    values += more
    n = weight.shape[1]
    back = g.reader(projected, "Reshape")
    if back is None or g.dims(back.output[0]) != [s, b, n] or g.dims(projected) != [s * b, n]:
        return None
    values.append(projected)
    turn = g.reader(back.output[0], "Transpose")
    if turn is not None and g.attr(turn, "perm", None) == [1, 0, 2]:
        return _Out(turn, projection, weight, bias, True, values + [back.output[0]])
    return _Out(back, projection, weight, bias, False, values)


def _out_proj(g: _Graph, rows: str, e: int):
    """(node, W [E, N], b [N] or None, its output, values) of out_proj on `rows`."""
    gemm = g.reader(rows, "Gemm")
    if gemm is not None:
        weight = g.constant(gemm.input[1])
        bias = g.constant(gemm.input[2]) if len(gemm.input) > 2 and gemm.input[2] else None
        if gemm.input[0] != rows or weight is None or weight.ndim != 2 or g.attr(gemm, "transA", 0) \
                or g.attr(gemm, "alpha", 1.0) != 1.0 or g.attr(gemm, "beta", 1.0) != 1.0:
            return None
        weight = weight.T if g.attr(gemm, "transB", 0) else weight
        if len(gemm.input) > 2 and gemm.input[2] and (bias is None or bias.size != weight.shape[1]
                                                      or bias.ndim > 2):
            return None
        if weight.shape[0] != e:
            return None
        return gemm, weight, None if bias is None else bias.reshape(-1), gemm.output[0], []
    matmul = g.reader(rows, "MatMul")
    weight = g.constant(matmul.input[1]) if matmul is not None and matmul.input[0] == rows else None
    if weight is None or weight.ndim != 2 or weight.shape[0] != e:
        return None
    add = g.reader(matmul.output[0], "Add")
    if add is None:
        return matmul, weight, None, matmul.output[0], []
    other = add.input[1] if add.input[0] == matmul.output[0] else add.input[0]
    bias = g.constant(other)
    if bias is None or bias.shape != (weight.shape[1],):
        return matmul, weight, None, matmul.output[0], []
    return matmul, weight, bias, add.output[0], [matmul.output[0]]


class _Writer:
    """New nodes named `<prefix>/<tag>`, their constants and their types."""

    def __init__(self, g: _Graph, prefix: str, elem: int, inits: list) -> None:
        self.g, self.prefix, self.elem, self.inits, self.nodes = g, prefix, elem, inits, []

    def const(self, tag: str, value: np.ndarray) -> str:
        name = f"{self.prefix}/{tag}"
        tensor = self.g._np.from_array(np.ascontiguousarray(value), name)
        self.inits.append(tensor)
        return name

    def node(self, op: str, inputs: list[str], tag: str, dims: list[int], out: str | None = None,
             name: str | None = None, **attrs) -> str:
        """`out` (default `<prefix>/<tag>`) by `name` (default the same)."""
        from onnx import helper

        out = out or f"{self.prefix}/{tag}"
        self.nodes.append(helper.make_node(op, inputs, [out], name=name or f"{self.prefix}/{tag}", **attrs))
        self.g.types[out] = (list(dims), self.elem)
        return out


def _front(g: _Graph, scores, m: _Match, inits: list) -> list:
    """Q, K, V as three projections split into heads as HF does, and the
    scores scaled once, in place of the scores MatMul."""
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


def _back(g: _Graph, m: _Match, inits: list) -> list:
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
