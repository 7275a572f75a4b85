"""The attention pattern as the frontend produces it, found by structure:
what `npu-fuse-attention` groups and `npu-lower-attention` checks and
lowers (the cost model is `npu.costmodel.attention.plan`). The pattern, per batch of heads H, seq S, head dim D (Nz operands f16):

    C1 = batch_matmul(Qf, Kf)            Qf Nz of Q [S x D], Kf Nz of K^T [D x S]
    S  = defractalize(C1)                [H, S, S] f32
    S' = muls(S, scale), add(S, masks)   optional, in any order
    P  = softmax(S') along keys          reduce_max, sub, exp, reduce_sum and
                                         div, or reciprocal and mul
    Pf = fractalize(cast(P -> f16))
    C2 = batch_matmul(Pf, Vf)            Vf Nz of V [S x D]
    O  = defractalize(C2)                [H, S, D] f32, leaves the group

Every tensor but Qf, Kf, Vf and O must be a GM temporary that only the
members touch: those are the ones that never go to GM once fused.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir

from npu import ir as nir
from npu.costmodel.attention.guard import match_guard
from npu.costmodel.attention.key_mask import KEY, SCORES, key_mask_operand

ATTENTION_ATTR = "npu.attention"
# The precision of the kernel's softmax (`softmax` in the attribute;
# npu-fuse-attention{softmax}, npu-lower{attention-softmax}): "f32" drains
# the scores in f32 and computes the row max and the scaled shift there,
# "f16" drains them rounded to f16 and does both in f16 (half the vector
# repeats, no cast of P; CANN's high-performance mode). The row sums and
# the context are f32 either way.
SOFTMAX_PRECISIONS = ("f16", "f32")
SOFTMAX_DEFAULT = "f16"


@dataclass
class Attention:
    """One matched attention: its members in program order and its operands."""

    members: list[ir.Operation]
    q: ir.Value
    k: ir.Value
    v: ir.Value
    out: ir.Value
    internal: list[ir.Value]  # roots that stay on chip
    heads: int
    seq: int
    head_dim: int
    scale: float
    reciprocal: bool = field(default=False)  # softmax ends with reciprocal + mul
    guard: bool = False  # P's NaN guard is a member (`npu.costmodel.attention.guard`)
    # Additive masks on the scores (`npu.costmodel.attention.key_mask`), added after the
    # scale (`*_scaled`) or before: a key mask, a mask of the scores (per head or shared).
    key_mask: ir.Value | None = None
    mask_scaled: bool = False
    scores_bias: ir.Value | None = None
    bias_scaled: bool = False
    bias_per_head: bool = False
    # The f32 ND tensors Q [H,S,D], K^T [H,D,S], V [H,S,D] when their casts to
    # f16 and fractalizes are members too (loaded, converted and laid out on
    # chip), or the f16 ND tensors when only the fractalizes are (laid out
    # by the loads); None: the kernel reads the f16 Nz operands.
    sources: tuple[ir.Value, ir.Value, ir.Value] | None = None
    prologue: list[ir.Operation] = field(default_factory=list)
    # The sources are the projections [S, H*D] before the head transposes
    # (which are members too): a head's rows are read with the row pitch H*D.
    interleaved: bool = False
    # `out` is the merged [S, H, D] context (the head-merging transpose is a member).
    merged: bool = False
    # `out` is the f16 Nz [H*D/16, S/16, 16, 16] of the merged context: its
    # cast and fractalize (a matmul's A operand, their only use) are members.
    nz_out: bool = False
    nz_round: str = "rint"  # the absorbed cast's round_mode
    nz_why: str = ""  # why not nz_out (for remarks)
    # K's own Nz [H, D/16, S/16, 16, 16] (its projection's f16 output), of
    # which a member transpose [0, 2, 1, 4, 3] makes K^T's Nz `k`: the
    # kernel loads K's tiles as they lie and reads them as K^T's Zn blocks,
    # as it does interleaved rows laid out in L1 (`passes/attention_nz.py`).
    k_rows: ir.Value | None = None

    @property
    def staged(self) -> bool:
        """The sources are f32 (cast to f16 on chip, through UB)."""
        return self.sources is not None and nir.memref_element(self.sources[0]) == "f32"

    @property
    def k_as_rows(self) -> bool:
        """K's L1 tile is K's own Nz [D/16, keys/16] (interleaved rows laid
        out, or `k_rows`), not K^T's."""
        return self.interleaved or self.k_rows is not None

    @property
    def mask_blocks(self) -> int:
        """Key blocks of the key mask the kernel keeps in UB (0: none)."""
        return self.seq_blocks if self.key_mask is not None else 0

    @property
    def scores_mask(self) -> bool:
        return self.scores_bias is not None

    @property
    def seq_blocks(self) -> int:
        return -(-self.seq // 16)

    @property
    def d_blocks(self) -> int:
        return self.head_dim // 16


_root = nir.view_root


def _distinct(ops: list[ir.Operation]) -> list[ir.Operation]:
    return list(dict.fromkeys(ops))  # an op reading a tensor twice is listed twice


def users_of(ops: list[ir.Operation]) -> dict:
    """root -> the ops of `ops` (not views or allocs) with an operand on it."""
    users: dict = {}
    for op in ops:
        if op.name in nir.VIEW_OPS or op.name in ("memref.alloc", "memref.dealloc"):
            continue
        for v in op.operands:
            if nir.is_memref(v.type):
                users.setdefault(_root(v), []).append(op)
    return users


def match(bm1: ir.Operation, users: dict, any_seq: bool = False) -> Attention | str:
    """The attention rooted at batch_matmul `bm1`, or why it is not one.
    `any_seq`: the prologue of Q, K, V joins at a seq of partial 16-row
    blocks too (the kernel computes them: no rows are read from GM)."""
    members = [bm1]

    def out(op):
        return _root(op.operands[-1])

    def arg(op, i):
        return _root(op.operands[i])

    def readers(root, writer):
        return [u for u in users.get(root, []) if u is not writer]

    def consume(root, writer, name: str, what: str):
        rs = readers(root, writer)
        if len(rs) != 1:
            return f"{what} is read by {len(rs)} ops (the fused kernel keeps it on chip: " \
                   f"exactly one consumer, '{name}')"
        if rs[0].name != name:
            return f"{what} is consumed by '{rs[0].name}', not '{name}'"
        members.append(rs[0])
        return rs[0]

    c1 = out(bm1)
    d1 = consume(c1, bm1, "ascend.defractalize", "the scores (batch_matmul result)")
    if isinstance(d1, str):
        return d1
    s = out(d1)
    scale = 1.0
    writer, scaled, masks = d1, False, {}  # masks: form -> (mask, scaled, per head)
    for _ in range(3):  # the scale and the two masks, in any order
        rs = readers(s, writer)
        if len(rs) != 1:
            break
        if rs[0].name == "ascend.muls" and not scaled:
            scale, scaled = nir.float_attr(rs[0], "scalar"), True
        elif rs[0].name == "ascend.add":
            m = key_mask_operand(rs[0], s, nir.memref_shape(d1.operands[-1]), _root)
            if isinstance(m, str) or m[1] in masks:
                return m if isinstance(m, str) else f"two {m[1]} masks on the scores"
            masks[m[1]] = (m[0], scaled, m[2])
        else:
            break
        members.append(rs[0])
        s, writer = out(rs[0]), rs[0]
    rs = readers(s, writer)
    names = sorted(r.name for r in rs)
    if names != ["ascend.reduce_max", "ascend.sub"]:
        return (f"the scores feed {', '.join(names) or 'no op'}, not a softmax "
                "(reduce_max and sub)")
    rmax = next(r for r in rs if r.name == "ascend.reduce_max")
    sub = next(r for r in rs if r.name == "ascend.sub")
    if not _last_axis(rmax):
        return "the row max is not taken along the keys (last axis)"
    mx = out(rmax)
    if arg(sub, 0) != s or arg(sub, 1) != mx or readers(mx, rmax) != [sub]:
        return "the softmax does not subtract its row max from the scores"
    members += [rmax, sub]
    ex = consume(out(sub), sub, "ascend.exp", "the shifted scores")
    if isinstance(ex, str):
        return ex
    e = out(ex)
    rs = readers(e, ex)
    rsum = next((r for r in rs if r.name == "ascend.reduce_sum"), None)
    norm = [r for r in rs if r is not rsum]
    if rsum is None or len(norm) != 1 or not _last_axis(rsum):
        return "the exponentials are not summed along the keys and normalised"
    members.append(rsum)
    sm, last = out(rsum), norm[0]
    reciprocal = False
    if last.name == "ascend.div":
        if arg(last, 0) != e or arg(last, 1) != sm or readers(sm, rsum) != [last]:
            return "the softmax does not divide the exponentials by their row sum"
    elif last.name == "ascend.mul":
        rec = readers(sm, rsum)
        if len(rec) != 1 or rec[0].name != "ascend.reciprocal":
            return "the softmax does not multiply by the reciprocal of its row sum"
        r = out(rec[0])
        if {arg(last, 0), arg(last, 1)} != {e, r} or readers(r, rec[0]) != [last]:
            return "the softmax does not multiply the exponentials by 1/sum"
        members.append(rec[0])
        reciprocal = True
    else:
        return f"the exponentials are normalised by '{last.name}'"
    members.append(last)
    guarded = match_guard(out(last), lambda r: _distinct(
        [u for u in users.get(r, []) if _root(u.operands[-1]) != r]), _root)
    if guarded is not None:  # sdpa's Where(IsNaN(P), 0, P)
        members += guarded
        last = guarded[1]
    cast = consume(out(last), last, "ascend.cast", "the probabilities")
    if isinstance(cast, str):
        return cast
    frac = consume(out(cast), cast, "ascend.fractalize", "the f16 probabilities")
    if isinstance(frac, str):
        return frac
    bm2 = consume(out(frac), frac, "ascend.batch_matmul", "the fractalized probabilities")
    if isinstance(bm2, str):
        return bm2
    if arg(bm2, 0) != out(frac):
        return "the probabilities are the B operand of the second batch_matmul, not A"
    d2 = consume(out(bm2), bm2, "ascend.defractalize", "the context (batch_matmul result)")
    if isinstance(d2, str):
        return d2
    internal = [out(m) for m in members[:-1]]
    for root in internal:
        owner = nir.defining_op(root)
        if owner is None or owner.name != "memref.alloc":
            return "an intermediate tensor is a function argument, not a temporary"
        if any(u not in members for u in users.get(root, [])):
            return "an intermediate tensor is used outside the attention"
    q, k, v, o = bm1.operands[0], bm1.operands[1], bm2.operands[1], d2.operands[-1]
    types = {"Q": (q, "f16"), "K": (k, "f16"), "V": (v, "f16"), "the context": (o, "f32"),
             "the scores": (d1.operands[-1], "f32")}
    for what, (value, elem) in types.items():
        if nir.memref_element(value) != elem:
            return f"{what} is {nir.memref_element(value)}, the fused kernel takes {elem}"
    if nir.memref_element(cast.operands[-1]) != "f16" or nir.memref_element(bm1.operands[-1]) != "f32":
        return "the scores are not accumulated in f32 and cast to f16 for P.V"
    qs, ks, vs = (nir.memref_shape(x) for x in (q, k, v))
    os_, ss = nir.memref_shape(o), nir.memref_shape(d1.operands[-1])
    if len(os_) != 3 or len(ss) != 3:
        return "the scores or the context are not [heads, rows, columns]"
    heads, seq, head_dim = os_
    s1, d1b = -(-seq // 16), head_dim // 16
    if head_dim % 16:
        return f"head dim {head_dim} is not a whole number of 16-element fractals"
    if not (qs == [heads, d1b, s1, 16, 16] and ks == [heads, s1, d1b, 16, 16]
            and vs == [heads, d1b, s1, 16, 16] and ss == [heads, seq, seq]):
        return "the operand shapes are not those of self-attention (Q, K, V of one seq)"
    if not nir.is_contiguous(o):
        return "the context is not a contiguous tensor"
    found = Attention(members, q, k, v, o, internal, heads, seq, head_dim, scale, reciprocal,
                      guard=guarded is not None)
    none = (None, False, False)
    found.key_mask, found.mask_scaled, _ = masks.get(KEY, none)
    found.scores_bias, found.bias_scaled, found.bias_per_head = masks.get(SCORES, none)
    _absorb_prologues(found, users, any_seq)
    if found.sources is None:
        _absorb_k_rows(found, users)
    _absorb_merge(found, users)
    return found


def _absorb_k_rows(a: Attention, users: dict) -> None:
    """K^T's Nz made by a transpose [0, 2, 1, 4, 3] of K's own f16 Nz (read
    only by the first batch_matmul): the transpose is a member and the
    kernel reads K's Nz (`k_rows`)."""
    root = _root(a.k)
    owner = nir.defining_op(root)
    readers = users.get(root, [])
    writers = [u for u in readers if _root(u.operands[-1]) == root]
    if owner is None or owner.name != "memref.alloc" or len(readers) != 2 or len(writers) != 1:
        return
    t = writers[0]
    src = t.operands[0]
    if (t.name != "ascend.transpose" or nir.int_array_attr(t, "permutation") != [0, 2, 1, 4, 3]
            or nir.memref_element(src) != "f16" or not nir.is_contiguous(src)
            or nir.memref_shape(src) != [a.heads, a.d_blocks, a.seq_blocks, 16, 16]
            or t.operands[-1] != a.k):
        return
    a.members.append(t)
    a.internal.append(root)
    a.prologue.append(t)
    a.k_rows = src


def _absorb_merge(a: Attention, users: dict) -> None:
    """The context [H, S, D] read only by the transpose that merges the heads
    ([H, S, D] -> [S, H, D]): the transpose is a member and the kernel writes
    each head's rows into the merged tensor (row pitch H*D)."""
    root = _root(a.out)
    owner = nir.defining_op(root)
    if owner is None or owner.name != "memref.alloc":
        return
    readers = [u for u in users.get(root, []) if _root(u.operands[-1]) != root]
    if len(readers) != 1 or readers[0].name != "ascend.transpose":
        return
    t = readers[0]
    src = nir.memref_shape(t.operands[0])
    lead = len(src) - 3
    perm = nir.int_array_attr(t, "permutation")
    if (src[:lead] != [1] * lead or src[lead:] != [a.heads, a.seq, a.head_dim]
            or perm != list(range(lead)) + [lead + 1, lead, lead + 2]
            or not nir.is_contiguous(t.operands[-1]) or _root(t.operands[0]) != root):
        return
    a.members.append(t)
    a.internal.append(root)
    a.out, a.merged = t.operands[-1], True


def _absorb_prologues(a: Attention, users: dict, any_seq: bool = False) -> None:
    """Q, K^T and V made by cast f32 -> f16 then fractalize, each read only by
    the next step, become members: the kernel loads the f32 rows and lays
    them out on chip. Without the casts (not among `users`, e.g. inside a
    group that left them out), the fractalizes alone: the kernel reads the
    f16 rows. All three or none; at a seq of partial 16-row blocks (`any_seq`
    aside: see `match`) only with the heads' transposes (K read as its own
    rows), or staged with K^T [H, D, S] in whole 32-byte rows: the last
    block's rows go through UB, its padding zeroed there (f16 rows too)."""
    found = []
    for nz, shape in ((a.q, [a.heads, a.seq, a.head_dim]), (a.k, [a.heads, a.head_dim, a.seq]),
                      (a.v, [a.heads, a.seq, a.head_dim])):
        root = _root(nz)
        owner = nir.defining_op(root)
        writers = [u for u in users.get(root, []) if _root(u.operands[-1]) == root]
        if owner is None or owner.name != "memref.alloc" or len(writers) != 1:
            return
        frac = writers[0]
        if frac.name != "ascend.fractalize" or len(users[root]) != 2:
            return
        half_view = frac.operands[0]
        if (nir.memref_element(half_view) != "f16" or nir.memref_shape(half_view) != shape
                or not nir.is_contiguous(half_view)):
            return
        half = _root(half_view)
        casts = [u for u in users.get(half, []) if u is not frac]
        cast = None
        if (nir.defining_op(half) is not None and nir.defining_op(half).name == "memref.alloc"
                and len(casts) == 1 and casts[0].name == "ascend.cast"
                and _root(casts[0].operands[-1]) == half):
            src = casts[0].operands[0]
            if (nir.memref_element(src) == "f32" and nir.memref_shape(src) == shape
                    and nir.is_contiguous(src)):
                cast = casts[0]
        found.append((cast, frac, half_view, half, root))
    if any(cast is None for cast, *_ in found):
        for _, frac, _, _, root in found:
            a.members.append(frac)
            a.internal.append(root)
            a.prologue.append(frac)
        a.sources = tuple(f[2] for f in found)
    else:
        for cast, frac, _, half, root in found:
            a.members += [cast, frac]
            a.internal += [half, root]
            a.prologue += [cast, frac]
        a.sources = tuple(f[0].operands[0] for f in found)
    heads = [_head_transpose(src, users, a, k_side) for src, k_side in
             zip(a.sources, (False, True, False))]
    if all(h is not None for h in heads):
        for transpose, _ in heads:
            a.members.append(transpose)
            a.internal.append(_root(transpose.operands[-1]))
            a.prologue.append(transpose)
        a.sources = tuple(base for _, base in heads)
        a.interleaved = True
    if a.seq % 16 and not any_seq and not (a.interleaved or (a.staged and a.seq % 8 == 0)):
        drop_prologues(a)


def _head_transpose(src: ir.Value, users: dict, a: Attention, k_side: bool):
    """(transpose, its input) when `src` is the head transpose of a [S, H, D]
    projection ([S, H, D] -> [H, S, D], or [H, D, S] for K^T) read only by
    its cast (f32), or by its fractalize (f16: the projection was cast, see
    `npu-hoist-casts`); else None."""
    root = _root(src)
    owner = nir.defining_op(root)
    readers = users.get(root, [])
    writers = [u for u in readers if _root(u.operands[-1]) == root]
    if owner is None or owner.name != "memref.alloc" or len(readers) != 2 or len(writers) != 1:
        return None
    t = writers[0]
    if t.name != "ascend.transpose":
        return None
    base = t.operands[0]
    shape = nir.memref_shape(base)
    lead = len(shape) - 3
    perm = nir.int_array_attr(t, "permutation")
    want = [lead + 1, lead + 2, lead] if k_side else [lead + 1, lead, lead + 2]
    if (shape[:lead] != [1] * lead or shape[lead:] != [a.seq, a.heads, a.head_dim]
            or perm != list(range(lead)) + want
            or nir.memref_element(base) != nir.memref_element(src)
            or not (nir.is_contiguous(base) or _heads_of(base))):
        return None
    return t, base


def _heads_of(base: ir.Value) -> bool:
    """A run of heads of a contiguous [.., S, H, D] projection (one core's,
    npu-split-cores): a subview cutting H only, rows a whole H x D apart."""
    op = nir.defining_op(base)
    if op is None or op.name != "memref.subview" or not nir.is_contiguous(op.operands[0]):
        return False
    whole, part = nir.memref_shape(op.operands[0]), nir.memref_shape(base)
    return len(whole) == len(part) and [w == p for w, p in zip(whole, part)].count(False) <= 1 \
        and whole[-1] == part[-1] and whole[-3] == part[-3]


def drop_casts(a: Attention) -> None:
    """Leave the casts (and head transposes) of Q, K, V out of the group
    again, keeping the fractalizes: the kernel reads the f16 rows."""
    fracs = [p for p in a.prologue if p.name == "ascend.fractalize"]
    dropped = [p for p in a.prologue if p not in fracs]
    a.members = [m for m in a.members if m not in dropped]
    gone = {nir.view_root(p.operands[-1]) for p in dropped}
    a.internal = [r for r in a.internal if r not in gone]
    a.prologue, a.interleaved = fracs, False
    a.sources = tuple(f.operands[0] for f in fracs)


def drop_prologues(a: Attention) -> None:
    """Leave the casts and fractalizes of Q, K, V out of the group again."""
    a.members = [m for m in a.members if m not in a.prologue]
    dropped = {nir.view_root(p.operands[-1]) for p in a.prologue}
    a.internal = [r for r in a.internal if r not in dropped]
    a.prologue, a.sources, a.interleaved, a.k_rows = [], None, False, None


def _last_axis(op: ir.Operation) -> bool:
    rank = len(nir.memref_shape(op.operands[0]))
    axis = nir.int_attr(op, "axis") if "axis" in op.attributes else -1
    return axis in (-1, rank - 1)
