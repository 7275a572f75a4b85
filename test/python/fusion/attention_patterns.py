"""ascend programs of self-attention (as the frontend emits it, and BERT's
with its Q, K, V projection fused) as text, for the fusion tests and the
benches."""

from __future__ import annotations

import math

from ascend_program import Program, gm_type, nz_constant


def attention(heads: int, seq: int, head_dim: int, normalise: str = "reciprocal",
              scale: float | None = None, projections: bool = False,
              nz_out: bool = False, biased: bool = False) -> str:
    """Self-attention as the frontend emits it: f32 Q [H,S,D], K^T [H,D,S] and
    V [H,S,D] cast to f16 and fractalized, scores = Q.K^T (batch_matmul, f32),
    defractalized, scaled, softmax along the keys (`normalise`: "reciprocal"
    then mul, or "div"), P cast and fractalized, context = P.V, defractalized
    into y [H,S,D] f32. `projections`: the inputs are the projections
    q, k, v [1,S,H,D] (= [S, H*D]) and the heads come from transposes, and
    the heads are merged back by a transpose into y [1,S,H,D]; with
    `nz_out` the merged context is then cast to f16 and fractalized into y
    [H*D/16, S/16, 16, 16] f16 (the out-projection's A operand). `biased`
    (with `projections`): each projection is computed first, q + bq (bias
    arguments bq, bk, bv of the same shape after v), as a projection's bias
    add in BERT."""
    s1 = -(-seq // 16)
    qs, ks, ps = (heads, seq, head_dim), (heads, head_dim, seq), (1, seq, heads, head_dim)
    names = [("%q", ps if projections else qs), ("%kt", ps if projections else ks),
             ("%v", ps if projections else qs)]
    biases = [("%bq", ps), ("%bk", ps), ("%bv", ps)] if projections and biased else []
    y_arg = ((heads * head_dim // 16, s1, 16, 16), "f16") if nz_out else (
        ps if projections else qs, "f32")
    p = Program("attention", [(n, sh, "f32") for n, sh in names + biases] + [("%y",) + y_arg])
    new = p.new

    def heads_of(name: str, perm: tuple, shape: tuple) -> tuple:
        src = (name, ps, "f32")
        if biased:
            src = new(ps, "f32")
            p.op("add", [(name, ps, "f32"), ("%b" + name[1], ps, "f32"), src])
        out = new((1,) + shape, "f32")
        p.op("transpose", [src, out], f"permutation = array<i64: {', '.join(map(str, perm))}>")
        view = p.line(f"memref.collapse_shape {out[0]} [[0, 1], [2], [3]] : "
                      f"{gm_type((1,) + shape, 'f32')} into {gm_type(shape, 'f32')}")
        return (view, shape, "f32")

    def nz(src, rows_cols):
        half = new(src[1], "f16")
        p.op("cast", [src, half], 'round_mode = "rint"')
        r, c = rows_cols
        out = new((heads, -(-c // 16), -(-r // 16), 16, 16), "f16")
        p.op("fractalize", [half, out])
        return out

    q_in, k_in, v_in = ("%q", qs, "f32"), ("%kt", ks, "f32"), ("%v", qs, "f32")
    if projections:
        q_in, k_in = heads_of("%q", (0, 2, 1, 3), qs), heads_of("%kt", (0, 2, 3, 1), ks)
        v_in = heads_of("%v", (0, 2, 1, 3), qs)
    qf = nz(q_in, (seq, head_dim))
    kf = nz(k_in, (head_dim, seq))
    c2 = _softmax_context(p, qf, kf, lambda: nz(v_in, (seq, head_dim)), heads, seq, head_dim,
                          1 / math.sqrt(head_dim) if scale is None else scale, normalise)
    if not projections:
        p.op("defractalize", [c2, ("%y", qs, "f32")])
        return p.text()
    _merge_heads(p, c2, heads, seq, head_dim, y_arg, nz_out)
    return p.text()


def _softmax_context(p: Program, qf: tuple, kf: tuple, v_nz, heads: int, seq: int,
                     head_dim: int, scale: float, normalise: str = "reciprocal") -> tuple:
    """scores = Q.K^T (f16 Nz operands, batch_matmul), defractalized,
    scaled (unless by 1), softmax along the keys (`normalise`: "reciprocal"
    then mul, or "div"), P cast and fractalized, context = P.V with V from
    `v_nz()` (made after P, as the frontend orders them): the context's
    [H, D1, S1, 16, 16] f32."""
    s1, d1 = -(-seq // 16), -(-head_dim // 16)
    ss, col = (heads, seq, seq), (heads, seq, 1)
    new = p.new

    c1 = new((heads, s1, s1, 16, 16), "f32")
    p.op("batch_matmul", [qf, kf, c1])
    s = new(ss, "f32")
    p.op("defractalize", [c1, s])
    if scale != 1.0:
        scaled = new(ss, "f32")
        p.op("muls", [s, scaled], f"scalar = {scale:.17e} : f64")
        s = scaled
    m = new(col, "f32")
    p.op("reduce_max", [s, m])
    t = new(ss, "f32")
    p.op("sub", [s, m, t])
    e = new(ss, "f32")
    p.op("exp", [t, e])
    total = new(col, "f32")
    p.op("reduce_sum", [e, total])
    probs = new(ss, "f32")
    if normalise == "div":
        p.op("div", [e, total, probs])
    else:
        r = new(col, "f32")
        p.op("reciprocal", [total, r])
        p.op("mul", [e, r, probs])
    half = new(ss, "f16")
    p.op("cast", [probs, half], 'round_mode = "rint"')
    pf = new((heads, s1, s1, 16, 16), "f16")
    p.op("fractalize", [half, pf])
    vf = v_nz()
    c2 = new((heads, d1, s1, 16, 16), "f32")
    p.op("batch_matmul", [pf, vf, c2])
    return c2


def _merge_heads(p: Program, c2: tuple, heads: int, seq: int, head_dim: int, y_arg: tuple,
                 nz_out: bool) -> None:
    """The context `c2` defractalized into [H, S, D], the heads merged by a
    transpose into y [1, S, H, D] f32, or with `nz_out` that cast to f16 and
    fractalized into y [H*D/16, S1, 16, 16] (`y_arg`: y's shape and type)."""
    qs, ps = (heads, seq, head_dim), (1, seq, heads, head_dim)
    rows_cols = (seq, heads * head_dim)
    new = p.new

    ctx = new(qs, "f32")
    p.op("defractalize", [c2, ctx])
    view = p.line(f"memref.expand_shape {ctx[0]} [[0, 1], [2], [3]] output_shape "
                  f"[1, {heads}, {seq}, {head_dim}] : {gm_type(qs, 'f32')} into {gm_type((1,) + qs, 'f32')}")
    merged = new(ps, "f32")[0] if nz_out else "%y"
    p.op("transpose", [(view, (1,) + qs, "f32"), (merged, ps, "f32")],
         "permutation = array<i64: 0, 2, 1, 3>")
    if nz_out:
        flat = p.line(f"memref.collapse_shape {merged} [[0, 1], [2, 3]] : {gm_type(ps, 'f32')} into "
                      f"{gm_type(rows_cols, 'f32')}")
        half = new(rows_cols, "f16")
        p.op("cast", [(flat, rows_cols, "f32"), half], 'round_mode = "rint"')
        p.op("fractalize", [half, ("%y",) + y_arg])


def qkv_attention(heads: int, seq: int, head_dim: int, hidden: int, bias: bool = True,
                  nz_out: bool = False) -> str:
    """BERT's self-attention as npu-fuse-horizontal and npu-hoist-casts leave
    it (the form npu-fuse-attention-projection takes): x (f16 Nz A operand,
    [hidden/16, S1, 16, 16]) . W (a host constant, the Q, K, V columns side
    by side) + a host-constant bias row (`bias`), cast to f16 and stored
    row-major as three [S, H*D] tensors (views of one buffer), each split
    into heads by a transpose and fractalized; softmax(q k^T / sqrt(D)) v
    per head, the heads merged into y [1, S, H, D] f32 (with `nz_out`: cast
    to f16 and fractalized into y [H*D/16, S1, 16, 16], an out-projection's
    A operand). Any seq: the Nz tensors have S1 = ceil(S/16) row blocks."""
    s1, n1 = -(-seq // 16), hidden // 16
    width = heads * head_dim
    w1 = width // 16
    c_s, w_s = (3 * w1, s1, 16, 16), (3 * w1, n1, 16, 16)
    args = [("%x", (n1, s1, 16, 16), "f16"),
            ("%w", w_s, "f16", nz_constant(hidden, 3 * width, "f16", False))]
    if bias:
        args.append(("%b", c_s, "f32", nz_constant(s1 * 16, 3 * width, "f32", True)))
    y_arg = ((w1, s1, 16, 16), "f16") if nz_out else ((1, seq, heads, head_dim), "f32")
    args.append(("%y",) + y_arg)
    p = Program("qkv_attention", args)
    new = p.new

    c = new(c_s, "f32")
    p.op("matmul", [("%x", (n1, s1, 16, 16), "f16"), ("%w", w_s, "f16"), c])
    if bias:
        cb = new(c_s, "f32")
        p.op("add", [c, ("%b", c_s, "f32"), cb])
        c = cb
    piece = w1 * s1 * 512
    raw = p.line(f'memref.alloc() : memref<{3 * piece}xi8, "gm">')
    half = p.line(f'memref.view {raw}[%c0][] : memref<{3 * piece}xi8, "gm"> to {gm_type(c_s, "f16")}')
    p.lines.insert(0, "  %c0 = arith.constant 0 : index")
    p.op("cast", [c, (half, c_s, "f16")], 'round_mode = "rint"')
    qs, ks = (heads, seq, head_dim), (heads, head_dim, seq)
    nzs = {}
    for i, (name, perm, shape) in enumerate((("q", (0, 2, 1, 3), qs), ("k", (0, 2, 3, 1), ks),
                                             ("v", (0, 2, 1, 3), qs))):
        shift = p.line(f"arith.constant {i * piece} : index")
        cols = p.line(f'memref.view {raw}[{shift}][] : memref<{3 * piece}xi8, "gm"> to '
                    f'{gm_type((w1, s1, 16, 16), "f16")}')
        rows = new((seq, width), "f16")
        p.op("defractalize", [(cols, (w1, s1, 16, 16), "f16"), rows])
        split = p.line(f"memref.expand_shape {rows[0]} [[0, 1], [2, 3]] output_shape "
                     f"[1, {seq}, {heads}, {head_dim}] : {gm_type((seq, width), 'f16')} into "
                     f"{gm_type((1, seq, heads, head_dim), 'f16')}")
        t = new((1,) + shape, "f16")
        p.op("transpose", [(split, (1, seq, heads, head_dim), "f16"), t],
             f"permutation = array<i64: {', '.join(map(str, perm))}>")
        flat = p.line(f"memref.collapse_shape {t[0]} [[0, 1], [2], [3]] : "
                    f"{gm_type((1,) + shape, 'f16')} into {gm_type(shape, 'f16')}")
        r, cl = shape[1], shape[2]
        nz = new((heads, -(-cl // 16), -(-r // 16), 16, 16), "f16")
        p.op("fractalize", [(flat, shape, "f16"), nz])
        nzs[name] = nz
    c2 = _softmax_context(p, nzs["q"], nzs["k"], lambda: nzs["v"], heads, seq, head_dim,
                          1 / math.sqrt(head_dim))
    _merge_heads(p, c2, heads, seq, head_dim, y_arg, nz_out)
    return p.text()
