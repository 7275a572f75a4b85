"""Recognising torch's packed `nn.MultiheadAttention` export (for
`onnx_packed_attention`, which writes it as HF's attention).

torch exports it on [S, B, E] rows: one projection by the packed in-weight
[E, 3E] (+ bias [3E]), taken apart by a Reshape to [S, B, 3, E], an
Unsqueeze, a 5-D Transpose (3, 1, 2, 0, 4), a Squeeze and three Gathers
(Slice + Reshape once folded); q, k and v go to heads by a Reshape
[S, B*H, D], a Transpose (1, 0, 2) and a Reshape [B, H, S, D] (K^T: a
Transpose (0, 1, 3, 2); the dynamo exporter: a Transpose (0, 2, 1) before
the Reshape), q and K^T each scaled by d^-1/4; the context through a
Transpose (2, 0, 1, 3), a Reshape [S*B, E], out_proj's Gemm, a Reshape
[S, B, N] and, batch-first, a Transpose (1, 0, 2). With need_weights=True
the heads stay [B*H, S, D] (K^T by one Transpose (1, 2, 0)) and only q is
scaled (`flat`). Every op, perm, axis, shape and constant is checked, and
every intermediate value must have no other reader.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FLOATS = (1, 10)  # f32, f16


@dataclass
class Split:
    """The packed projection and its split into [3, S, B, E]."""
    matmul: object           # the packed projection x [S, B, E] @ W
    weight: np.ndarray       # [E, 3E]
    bias: np.ndarray | None  # [3E]
    dims: tuple[int, int, int]  # S, B, E
    values: list[str]        # the intermediate values, each read once


@dataclass
class Heads:
    """One of q, k, v: which E columns of the packed split, as [B, H, S, D]."""
    split: str               # the Squeeze's [3, S, B, E] value it is taken from
    index: int
    dims: list[int]          # B, H, S, D
    flat: bool               # as [B*H, S, D] (K: [B*H, D, S]), not [B, H, S, D]
    values: list[str]


@dataclass
class OutProj:
    """The merged context through out_proj back to the layer's rows."""
    last: object             # the node whose output the rewrite writes
    projection: object       # out_proj's Gemm
    weight: np.ndarray       # [E, N]
    bias: np.ndarray | None  # [N]
    batch_first: bool        # `last` writes [B, S, N] (else [S, B, N])


@dataclass
class Match:
    """A packed attention: its parts, the product of its scales, P.V's MatMul."""
    q: Heads
    k: Heads
    v: Heads
    split: Split
    scale: float
    context: object
    out: OutProj


class Graph:
    """Producers, readers, constants and static float shapes of a graph."""

    def __init__(self, model, types: dict) -> None:
        graph = model.graph
        self.types = types
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
        from onnx import numpy_helper

        if value in self.inits:
            return numpy_helper.to_array(self.inits[value])
        node = self.node(value, "Constant")
        if node is not None and len(node.attribute) == 1 and node.attribute[0].name == "value":
            return numpy_helper.to_array(node.attribute[0].t)
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


def match(g: Graph, scores) -> Match | None:
    """The packed attention whose Q.K^T `scores` is, or None."""
    q_value, q_scale = _scaled(g, scores.input[0])
    kt_value, k_scale = _scaled(g, scores.input[1])
    k, inner = _keys(g, kt_value)
    if k is None:
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
    return Match(q, k, v, split, q_scale * k_scale * inner, context, out)


def _keys(g: Graph, value: str) -> tuple[Heads | None, float]:
    """(K, a scale inside) when `value` is K^T: Transpose (0, 1, 3, 2) of
    [B, H, S, D] heads (x c), Transpose (1, 2, 0) of the [S, B*H, D] rows
    (flat), or (dynamo) Reshape [B, H, D, S] of Transpose (0, 2, 1) of the
    rows' Transpose (1, 0, 2)."""
    kt, perm = g.node(value, "Transpose"), None
    if not g.once(value):
        return None, 1.0
    if kt is not None:
        perm = g.attr(kt, "perm", None)
    if perm == [0, 1, 3, 2]:
        k_value, inner = _scaled(g, kt.input[0])
        return _heads(g, k_value), inner
    if perm == [1, 2, 0]:
        return _rows(g, kt.input[0], flat=True), 1.0
    to4, dims = g.node(value, "Reshape"), g.dims(value)
    turn = g.node(to4.input[0], "Transpose") if to4 is not None and dims and len(dims) == 4 else None
    swap = g.node(turn.input[0], "Transpose") if turn is not None else None
    if swap is None or g.attr(turn, "perm", None) != [0, 2, 1] or g.attr(swap, "perm", None) != [1, 0, 2]:
        return None, 1.0
    k = _rows(g, swap.input[0], flat=False)
    b, h, d, s = dims
    if k is None or k.dims != [b, h, s, d] or g.dims(turn.input[0]) != [b * h, s, d] \
            or not g.once(to4.input[0]) or not g.once(turn.input[0]):
        return None, 1.0
    return k, 1.0


def _scaled(g: Graph, value: str) -> tuple[str, float]:
    """(x, c) when `value` is x * c, c a scalar constant; else (value, 1)."""
    mul = g.node(value, "Mul")
    if mul is not None and len(mul.input) == 2:
        for k in (0, 1):
            c = g.constant(mul.input[1 - k])
            if c is not None and c.size == 1 and c.ndim <= 1 and g.once(mul.input[k]) \
                    and g.dims(mul.input[k]) == g.dims(value):
                return mul.input[k], float(c.ravel()[0])
    return value, 1.0


def _context(g: Graph, scores: str):
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


def _heads(g: Graph, value: str) -> Heads | None:
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
        if found is None or found.dims != dims:
            return None
        return Heads(found.split, found.index, dims, False, [value, to4.input[0]] + found.values)
    swap = g.node(value, "Transpose")
    if dims is None or len(dims) != 3 or swap is None or g.attr(swap, "perm", None) != [1, 0, 2]:
        return None
    found = _rows(g, swap.input[0], flat=True)
    ok = found is not None and [found.dims[0] * found.dims[1]] + found.dims[2:] == dims
    return Heads(found.split, found.index, found.dims, True, [value] + found.values) if ok else None


def _rows(g: Graph, value: str, flat: bool) -> Heads | None:
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
    return Heads(found[0], found[1], [b, h, s, d], flat, [value, taken] + found[2])


def _taken(g: Graph, value: str) -> tuple[str, int, list[str]] | None:
    """(data, i, values) when `value` is data[i] along axis 0: a Gather by
    a constant scalar, or a Reshape of the Slice [i, i+1) (as folded)."""
    gather = g.node(value, "Gather")
    if gather is not None:
        index = g.constant(gather.input[1])
        if g.attr(gather, "axis", 0) != 0 or index is None or index.ndim != 0 or not -3 <= int(index) < 3:
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


def _packed(g: Graph, data: str) -> Split | None:
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
    if reshape is None or g.dims(unsqueeze.input[0]) != [s, b, 3, e] \
            or g.dims(reshape.input[0]) != [s, b, 3 * e]:
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
    return Split(matmul, weight, bias, (s, b, e), values)


def _output(g: Graph, context: str, heads: list[int], flat: bool) -> OutProj | None:
    """The context [B, H, S, D] through Transpose (2, 0, 1, 3) (`flat`:
    [B*H, S, D] through (1, 0, 2)), Reshape [S*B, E], out_proj's Gemm,
    Reshape [S, B, N] and, batch-first, Transpose (1, 0, 2), each the one
    reader of the value before."""
    b, h, s, d = heads
    e = h * d
    merge = g.reader(context, "Transpose")
    if merge is None or g.attr(merge, "perm", None) != ([1, 0, 2] if flat else [2, 0, 1, 3]):
        return None
    rows = g.reader(merge.output[0], "Reshape")
    if rows is None or g.dims(rows.output[0]) != [s * b, e]:
        return None
    found = _out_proj(g, rows.output[0], e)
    if found is None:
        return None
    projection, weight, bias = found
    projected, n = projection.output[0], weight.shape[1]
    back = g.reader(projected, "Reshape")
    if back is None or g.dims(back.output[0]) != [s, b, n] or g.dims(projected) != [s * b, n]:
        return None
    turn = g.reader(back.output[0], "Transpose")
    if turn is not None and g.attr(turn, "perm", None) == [1, 0, 2]:
        return OutProj(turn, projection, weight, bias, True)
    return OutProj(back, projection, weight, bias, False)


def _out_proj(g: Graph, rows: str, e: int):
    """(the Gemm, W [E, N], b [N] or None) of out_proj on `rows` (torch
    exports a Linear of 2-D rows as a Gemm)."""
    gemm = g.reader(rows, "Gemm")
    weight = g.constant(gemm.input[1]) if gemm is not None and gemm.input[0] == rows else None
    if weight is None or weight.ndim != 2 or g.attr(gemm, "transA", 0) \
            or g.attr(gemm, "alpha", 1.0) != 1.0 or g.attr(gemm, "beta", 1.0) != 1.0:
        return None
    weight = weight.T if g.attr(gemm, "transB", 0) else weight
    has_bias = len(gemm.input) > 2 and bool(gemm.input[2])
    bias = g.constant(gemm.input[2]) if has_bias else None
    if weight.shape[0] != e or (has_bias and (bias is None or bias.shape not in (
            (weight.shape[1],), (1, weight.shape[1])))):
        return None
    return gemm, weight, None if bias is None else bias.reshape(-1)
