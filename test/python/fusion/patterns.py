"""ascend programs of the fused patterns (softmax, layernorm with residual
add, GELU with bias) as text, for the fusion tests and bench/fusion.py."""

from __future__ import annotations

import math


def _t(shape, elem: str) -> str:
    return f'memref<{"x".join(map(str, shape))}x{elem}, "gm">'


class _Program:
    def __init__(self, name: str, args: list[tuple[str, tuple, str]]):
        self.name = name
        self.args = args
        self.lines: list[str] = []
        self.count = 0

    def alloc(self, shape, elem) -> str:
        self.count += 1
        v = f"%t{self.count}"
        self.lines.append(f"  {v} = memref.alloc() : {_t(shape, elem)}")
        return v

    def op(self, name: str, operands: list[tuple[str, tuple, str]], attrs: str = "") -> None:
        names = ", ".join(v for v, _, _ in operands)
        types = ", ".join(_t(s, e) for _, s, e in operands)
        attr = f" {{{attrs}}}" if attrs else ""
        self.lines.append(f'  "ascend.{name}"({names}){attr} : ({types}) -> ()')

    def line(self, text: str) -> str:
        """A value-producing line (a view, a constant): its new name."""
        v = f"%v{len(self.lines)}"
        self.lines.append(f"  {v} = {text}")
        return v

    def text(self) -> str:
        sig = ", ".join(f"{a[0]}: {_t(a[1], a[2])}" + (f" {{{a[3]}}}" if len(a) > 3 else "")
                        for a in self.args)
        return "\n".join([f"func.func @{self.name}({sig}) {{"] + self.lines
                         + ["  return", "}"]) + "\n"


def softmax(rows_shape: tuple, n: int, elem: str = "f32") -> str:
    full, col = rows_shape + (n,), rows_shape + (1,)
    p = _Program("softmax", [("%x", full, elem), ("%y", full, elem)])
    x, y = ("%x", full, elem), ("%y", full, elem)
    m = (p.alloc(col, elem), col, elem)
    p.op("reduce_max", [x, m])
    d = (p.alloc(full, elem), full, elem)
    p.op("sub", [x, m, d])
    e = (p.alloc(full, elem), full, elem)
    p.op("exp", [d, e])
    s = (p.alloc(col, elem), col, elem)
    p.op("reduce_sum", [e, s])
    p.op("div", [e, s, y])
    return p.text()


def layernorm(rows: int, n: int, elem: str = "f32", residual: bool = True,
              eps: float = 1e-5) -> str:
    """y = (a - mean) / sqrt(var + eps) * gamma + beta with a = x + r (or x)."""
    full, col, vec = (1, rows, n), (1, rows, 1), (n,)
    args = [("%x", full, elem)] + ([("%r", full, elem)] if residual else [])
    args += [("%g", vec, elem), ("%b", vec, elem), ("%y", full, elem)]
    p = _Program("layernorm", args)
    x = ("%x", full, elem)
    if residual:
        a = (p.alloc(full, elem), full, elem)
        p.op("add", [x, ("%r", full, elem), a])
    else:
        a = x

    def col_op(name, src, attrs=""):
        out = (p.alloc(col, elem), col, elem)
        p.op(name, [src, out], attrs)
        return out

    def full_op(name, ins, out=None):
        out = out or (p.alloc(full, elem), full, elem)
        p.op(name, list(ins) + [out])
        return out

    inv_n = f"scalar = {1.0 / n:.17e} : f64"
    mean = col_op("muls", col_op("reduce_sum", a), inv_n)
    d = full_op("sub", [a, mean])
    sq = full_op("mul", [d, d])
    var = col_op("muls", col_op("reduce_sum", sq), inv_n)
    rs = col_op("rsqrt", col_op("adds", var, f"scalar = {eps:.17e} : f64"))
    nrm = full_op("mul", [d, rs])
    sc = full_op("mul", [nrm, ("%g", vec, elem)])
    full_op("add", [sc, ("%b", vec, elem)], ("%y", full, elem))
    return p.text()


def gelu(rows: int, n: int, elem: str = "f32") -> str:
    """y = h * 0.5 * (1 + erf(h / sqrt(2))) with h = x + bias (ONNX's exact GELU)."""
    full, vec = (rows, n), (n,)
    p = _Program("gelu", [("%x", full, elem), ("%bias", vec, elem), ("%y", full, elem)])
    h = (p.alloc(full, elem), full, elem)
    p.op("add", [("%x", full, elem), ("%bias", vec, elem), h])
    steps = [("muls", f"scalar = {1 / math.sqrt(2):.17e} : f64"), ("erf", ""),
             ("adds", "scalar = 1.0 : f64"), ("muls", "scalar = 5.0e-01 : f64")]
    v = h
    for name, attrs in steps:
        out = (p.alloc(full, elem), full, elem)
        p.op(name, [v, out], attrs)
        v = out
    p.op("mul", [h, v, ("%y", full, elem)])
    return p.text()


def _nz_constant(m: int, k: int, elem: str, rows_repeat: bool) -> str:
    """The `npu.constant` attribute of an M x K matrix in Nz: random rows,
    or one random row repeated (a bias broadcast over the rows)."""
    import numpy as np

    f = 16
    rng = np.random.default_rng(7)
    full = rng.standard_normal((1 if rows_repeat else m, k)).astype(
        {"f32": np.float32, "f16": np.float16}[elem])
    nz = np.broadcast_to(full, (m, k)).reshape(m // f, f, k // f, f).transpose(2, 0, 1, 3)
    shape = "x".join(map(str, nz.shape))
    return (f'npu.constant = dense<"0x{np.ascontiguousarray(nz).tobytes().hex().upper()}"> : '
            f"tensor<{shape}x{elem}>")


def matmul_epilogue(m: int, n: int, k: int, steps: tuple[str, ...], out: str = "f32",
                    c_elem: str = "f32", nd: tuple[int, int] | None = None) -> str:
    """C = A x B (Nz fractals, f16 in, `c_elem` out: an M x K result of an
    N-long reduction, M and K rounded up to whole blocks), then the
    elementwise `steps` on C, each one of "bias" (+ a tensor shaped like C,
    as the frontend materialises a bias), "bias_row" (+ that bias as a host
    constant, `npu.constant`, every row the same: what the frontend makes of
    an ONNX bias), "bias_table" (+ a host constant whose rows differ),
    "scale" (x 1/sqrt(64)), "gelu" (erf form: five ops), "residual" (+
    another input tensor), "cast" (to f16, the last step); the result goes
    to %y with element type `out`, or with `nd` = (rows, cols) through a
    defractalize to %y of that shape. Operands and intermediates have C's
    element type."""
    f = 16
    m1, k1 = -(-m // f), -(-k // f)
    a_s, b_s, c_s = (n // f, m1, f, f), (k1, n // f, f, f), (k1, m1, f, f)
    args = [("%a", a_s, "f16"), ("%b", b_s, "f16")]
    e = c_elem
    if "bias" in steps:
        args.append(("%bias", c_s, e))
    for step in ("bias_row", "bias_table"):
        if step in steps:
            args.append((f"%{step}", c_s, e, _nz_constant(m, k, e, step == "bias_row")))
    if "residual" in steps:
        args.append(("%r", c_s, e))
    args.append(("%y", nd or c_s, out))
    p = _Program("matmul_epilogue", args)
    c = (p.alloc(c_s, c_elem), c_s, c_elem)
    p.op("matmul", [("%a", a_s, "f16"), ("%b", b_s, "f16"), c])
    v = c
    todo = list(steps)
    y = ("%y", c_s, out) if nd is None else (p.alloc(c_s, out), c_s, out) if steps else None

    def emit(name, ins, attrs="", last=False, elem=e):
        dst = y if last else (p.alloc(c_s, elem), c_s, elem)
        p.op(name, list(ins) + [dst], attrs)
        return dst

    for i, step in enumerate(todo):
        last = i == len(todo) - 1
        if step in ("bias", "bias_row", "bias_table"):
            v = emit("add", [v, (f"%{step}", c_s, e)], last=last)
        elif step == "residual":
            v = emit("add", [v, ("%r", c_s, e)], last=last)
        elif step == "scale":
            v = emit("muls", [v], "scalar = 1.25e-01 : f64", last=last)
        elif step == "cast":
            v = emit("cast", [v], 'round_mode = "rint"', last=last, elem="f16")
        elif step == "gelu":
            h = v
            for name, attrs in (("muls", f"scalar = {1 / math.sqrt(2):.17e} : f64"),
                                ("erf", ""), ("adds", "scalar = 1.0 : f64"),
                                ("muls", "scalar = 5.0e-01 : f64")):
                v = emit(name, [v], attrs)
            v = emit("mul", [h, v], last=last)
    if nd is not None:
        p.op("defractalize", [v if steps else c, ("%y", nd, out)])
    return p.text()


def nz_operand(rows: int, n: int, source: str = "layernorm", elem: str = "f16",
               nd_also: bool = False, matmul_n: int = 0) -> str:
    """A matmul's A operand made by a row kernel, then fractalized: `source`
    "layernorm" (the f32 layernorm y also leaves, then its cast to `elem`),
    "cast" (x f32 cast to f16 alone, as the input of q_proj) or "scale"
    (x * 0.5 in `elem`). The Nz tensor is the result %a ([n/16, rows/16, 16,
    16]); `nd_also`: the ND tensor is a result too (%nd); `matmul_n`: %a
    also feeds a matmul with a 16-row constant B of that many columns (%c)."""
    r1, c1 = -(-rows // 16), -(-n // 16)
    full, vec = (1, rows, n), (n,)
    nz_shape = (c1, r1, 16, 16)
    args = [("%x", full, "f32" if source != "scale" else elem)]
    if source == "layernorm":
        args += [("%g", vec, "f32"), ("%b", vec, "f32"), ("%y", full, "f32")]
    args += [("%a", nz_shape, elem)]
    if nd_also:
        args += [("%nd", (rows, n), elem)]
    if matmul_n:
        args += [("%w", (-(-matmul_n // 16), c1, 16, 16), "f16",
                  _nz_constant(n, matmul_n, "f16", False)),
                 ("%c", (-(-matmul_n // 16), r1, 16, 16), "f32")]
    p = _Program("nz_operand", args)
    if source == "layernorm":
        body = layernorm(rows, n, "f32", residual=False).split("\n")
        p.lines += [line.replace("%y", "%y") for line in body[1:-3]]
        p.count = 1000
        src, src_elem = "%y", "f32"
    else:
        src, src_elem = "%x", args[0][2]
    nd = "%nd" if nd_also else p.alloc((rows, n), elem)
    view = f"%flat{len(p.lines)}"
    p.lines.append(f"  {view} = memref.collapse_shape {src} [[0, 1], [2]] : "
                   f"{_t(full, src_elem)} into {_t((rows, n), src_elem)}")
    if source == "scale":
        p.op("muls", [(view, (rows, n), elem), (nd, (rows, n), elem)], "scalar = 5.0e-01 : f64")
    else:
        p.op("cast", [(view, (rows, n), "f32"), (nd, (rows, n), elem)], 'round_mode = "rint"')
    p.op("fractalize", [(nd, (rows, n), elem), ("%a", nz_shape, elem)])
    if matmul_n:
        w = (-(-matmul_n // 16), c1, 16, 16)
        p.op("matmul", [("%a", nz_shape, elem), ("%w", w, "f16"),
                        ("%c", (-(-matmul_n // 16), r1, 16, 16), "f32")])
    return p.text()


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
    p = _Program("attention", [(n, sh, "f32") for n, sh in names + biases] + [("%y",) + y_arg])

    def new(shape, elem):
        return (p.alloc(shape, elem), shape, elem)

    def heads_of(name: str, perm: tuple, shape: tuple) -> tuple:
        src = (name, ps, "f32")
        if biased:
            src = new(ps, "f32")
            p.op("add", [(name, ps, "f32"), ("%b" + name[1], ps, "f32"), src])
        out = new((1,) + shape, "f32")
        p.op("transpose", [src, out], f"permutation = array<i64: {', '.join(map(str, perm))}>")
        view = p.line(f"memref.collapse_shape {out[0]} [[0, 1], [2], [3]] : "
                      f"{_t((1,) + shape, 'f32')} into {_t(shape, 'f32')}")
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


def _softmax_context(p: _Program, qf: tuple, kf: tuple, v_nz, heads: int, seq: int,
                     head_dim: int, scale: float, normalise: str = "reciprocal") -> tuple:
    """scores = Q.K^T (f16 Nz operands, batch_matmul), defractalized,
    scaled (unless by 1), softmax along the keys (`normalise`: "reciprocal"
    then mul, or "div"), P cast and fractalized, context = P.V with V from
    `v_nz()` (made after P, as the frontend orders them): the context's
    [H, D1, S1, 16, 16] f32."""
    s1, d1 = -(-seq // 16), -(-head_dim // 16)
    ss, col = (heads, seq, seq), (heads, seq, 1)

    def new(shape, elem):
        return (p.alloc(shape, elem), shape, elem)

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


def _merge_heads(p: _Program, c2: tuple, heads: int, seq: int, head_dim: int, y_arg: tuple,
                 nz_out: bool) -> None:
    """The context `c2` defractalized into [H, S, D], the heads merged by a
    transpose into y [1, S, H, D] f32, or with `nz_out` that cast to f16 and
    fractalized into y [H*D/16, S1, 16, 16] (`y_arg`: y's shape and type)."""
    qs, ps = (heads, seq, head_dim), (1, seq, heads, head_dim)
    rows_cols = (seq, heads * head_dim)

    def new(shape, elem):
        return (p.alloc(shape, elem), shape, elem)

    ctx = new(qs, "f32")
    p.op("defractalize", [c2, ctx])
    view = p.line(f"memref.expand_shape {ctx[0]} [[0, 1], [2], [3]] output_shape "
                  f"[1, {heads}, {seq}, {head_dim}] : {_t(qs, 'f32')} into {_t((1,) + qs, 'f32')}")
    merged = new(ps, "f32")[0] if nz_out else "%y"
    p.op("transpose", [(view, (1,) + qs, "f32"), (merged, ps, "f32")],
         "permutation = array<i64: 0, 2, 1, 3>")
    if nz_out:
        flat = p.line(f"memref.collapse_shape {merged} [[0, 1], [2, 3]] : {_t(ps, 'f32')} into "
                      f"{_t(rows_cols, 'f32')}")
        half = new(rows_cols, "f16")
        p.op("cast", [(flat, rows_cols, "f32"), half], 'round_mode = "rint"')
        p.op("fractalize", [half, ("%y",) + y_arg])


def ffn_pair(m: int, n: int, f: int, act: str = "gelu") -> str:
    """A transformer FFN in Nz: x (m x n, f16) . W1 (n x f) + a host-constant
    bias row, `act` ("gelu": erf form, or "relu"), cast to f16, . W2 (f x n)
    -> %y (m x n, f32). The f16 intermediate is read only as the second
    matmul's A (a matmul chain, npu-fuse chains)."""
    b = 16
    m1, n1, f1 = -(-m // b), n // b, f // b
    h_s, y_s = (f1, m1, b, b), (n1, m1, b, b)
    p = _Program("ffn_pair", [("%x", (n1, m1, b, b), "f16"), ("%w1", (f1, n1, b, b), "f16"),
                              ("%bias", h_s, "f32", _nz_constant(m1 * b, f, "f32", True)),
                              ("%w2", (n1, f1, b, b), "f16"), ("%y", y_s, "f32")])

    def step(name: str, ins: list, attrs: str = "", elem: str = "f32"):
        out = (p.alloc(h_s, elem), h_s, elem)
        p.op(name, ins + [out], attrs)
        return out

    c = (p.alloc(h_s, "f32"), h_s, "f32")
    p.op("matmul", [("%x", (n1, m1, b, b), "f16"), ("%w1", (f1, n1, b, b), "f16"), c])
    h = v = step("add", [c, ("%bias", h_s, "f32")])
    if act == "relu":
        v = step("relu", [v])
    else:
        for name, attrs in (("muls", f"scalar = {1 / math.sqrt(2):.17e} : f64"), ("erf", ""),
                            ("adds", "scalar = 1.0 : f64"), ("muls", "scalar = 5.0e-01 : f64")):
            v = step(name, [v], attrs)
        v = step("mul", [h, v])
    t = step("cast", [v], 'round_mode = "rint"', "f16")
    p.op("matmul", [t, ("%w2", (n1, f1, b, b), "f16"), ("%y", y_s, "f32")])
    return p.text()


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
            ("%w", w_s, "f16", _nz_constant(hidden, 3 * width, "f16", False))]
    if bias:
        args.append(("%b", c_s, "f32", _nz_constant(s1 * 16, 3 * width, "f32", True)))
    y_arg = ((w1, s1, 16, 16), "f16") if nz_out else ((1, seq, heads, head_dim), "f32")
    args.append(("%y",) + y_arg)
    p = _Program("qkv_attention", args)

    def new(shape, elem):
        return (p.alloc(shape, elem), shape, elem)

    c = new(c_s, "f32")
    p.op("matmul", [("%x", (n1, s1, 16, 16), "f16"), ("%w", w_s, "f16"), c])
    if bias:
        cb = new(c_s, "f32")
        p.op("add", [c, ("%b", c_s, "f32"), cb])
        c = cb
    piece = w1 * s1 * 512
    raw = p.line(f'memref.alloc() : memref<{3 * piece}xi8, "gm">')
    half = p.line(f'memref.view {raw}[%c0][] : memref<{3 * piece}xi8, "gm"> to {_t(c_s, "f16")}')
    p.lines.insert(0, "  %c0 = arith.constant 0 : index")
    p.op("cast", [c, (half, c_s, "f16")], 'round_mode = "rint"')
    qs, ks = (heads, seq, head_dim), (heads, head_dim, seq)
    nzs = {}
    for i, (name, perm, shape) in enumerate((("q", (0, 2, 1, 3), qs), ("k", (0, 2, 3, 1), ks),
                                             ("v", (0, 2, 1, 3), qs))):
        shift = p.line(f"arith.constant {i * piece} : index")
        cols = p.line(f'memref.view {raw}[{shift}][] : memref<{3 * piece}xi8, "gm"> to '
                    f'{_t((w1, s1, 16, 16), "f16")}')
        rows = new((seq, width), "f16")
        p.op("defractalize", [(cols, (w1, s1, 16, 16), "f16"), rows])
        split = p.line(f"memref.expand_shape {rows[0]} [[0, 1], [2, 3]] output_shape "
                     f"[1, {seq}, {heads}, {head_dim}] : {_t((seq, width), 'f16')} into "
                     f"{_t((1, seq, heads, head_dim), 'f16')}")
        t = new((1,) + shape, "f16")
        p.op("transpose", [(split, (1, seq, heads, head_dim), "f16"), t],
             f"permutation = array<i64: {', '.join(map(str, perm))}>")
        flat = p.line(f"memref.collapse_shape {t[0]} [[0, 1], [2], [3]] : "
                    f"{_t((1,) + shape, 'f16')} into {_t(shape, 'f16')}")
        r, cl = shape[1], shape[2]
        nz = new((heads, -(-cl // 16), -(-r // 16), 16, 16), "f16")
        p.op("fractalize", [(flat, shape, "f16"), nz])
        nzs[name] = nz
    c2 = _softmax_context(p, nzs["q"], nzs["k"], lambda: nzs["v"], heads, seq, head_dim,
                          1 / math.sqrt(head_dim))
    _merge_heads(p, c2, heads, seq, head_dim, y_arg, nz_out)
    return p.text()


def matmul_layernorm(m: int, n: int, k: int, elem: str = "f32", residual: bool = True,
                     bias: bool = True, nz_out: bool = False, eps: float = 1e-5) -> str:
    """BERT's out-projection and its layernorm: C = A x B (f16 Nz in, `elem`
    out, M x K of an N-long reduction; M and K whole blocks), plus a
    row-broadcast host-constant bias when `bias`, stored row-major (a
    defractalize to %h, M x K), then y = layernorm(h + r) (or of h) over its
    rows with gamma %g and beta %be; with `nz_out` y is also cast to f16 (or
    taken as is in f16) and fractalized into %ynz, the next matmul's A."""
    f = 16
    m1, k1 = m // f, k // f
    a_s, b_s, c_s = (n // f, m1, f, f), (k1, n // f, f, f), (k1, m1, f, f)
    full, col, vec = (m, k), (m, 1), (k,)
    args = [("%a", a_s, "f16"), ("%bw", b_s, "f16")]
    if bias:
        args.append(("%bias", c_s, elem, _nz_constant(m, k, elem, True)))
    if residual:
        args.append(("%r", full, elem))
    args += [("%g", vec, elem), ("%be", vec, elem), ("%y", full, elem)]
    if nz_out:
        args.append(("%ynz", c_s, "f16"))
    p = _Program("matmul_layernorm", args)
    c = (p.alloc(c_s, elem), c_s, elem)
    p.op("matmul", [("%a", a_s, "f16"), ("%bw", b_s, "f16"), c])
    if bias:
        biased = (p.alloc(c_s, elem), c_s, elem)
        p.op("add", [c, ("%bias", c_s, elem), biased])
        c = biased
    h = (p.alloc(full, elem), full, elem)
    p.op("defractalize", [c, h])
    if residual:
        a = (p.alloc(full, elem), full, elem)
        p.op("add", [h, ("%r", full, elem), a])
    else:
        a = h

    def op(name, ins, shape, attrs="", out=None):
        out = out or (p.alloc(shape, elem), shape, elem)
        p.op(name, list(ins) + [out], attrs)
        return out

    inv_n = f"scalar = {1.0 / k:.17e} : f64"
    mean = op("muls", [op("reduce_sum", [a], col)], col, inv_n)
    d = op("sub", [a, mean], full)
    var = op("muls", [op("reduce_sum", [op("mul", [d, d], full)], col)], col, inv_n)
    rs = op("rsqrt", [op("adds", [var], col, f"scalar = {eps:.17e} : f64")], col)
    sc = op("mul", [op("mul", [d, rs], full), ("%g", vec, elem)], full)
    y = op("add", [sc, ("%be", vec, elem)], full, out=("%y", full, elem))
    if nz_out:
        src = y
        if elem != "f16":
            src = (p.alloc(full, "f16"), full, "f16")
            p.op("cast", [y, src], 'round_mode = "rint"')
        p.op("fractalize", [src, ("%ynz", c_s, "f16")])
    return p.text()
