"""ascend programs of the matmul patterns with a fused tail (an
elementwise epilogue, a transformer FFN's two matmuls, the out-projection
and its layernorm) as text, for the fusion tests and the benches."""

from __future__ import annotations

from ascend_program import ERF_GELU_STEPS, Program, layernorm_rows, nz_constant


def matmul_epilogue(m: int, n: int, k: int, steps: tuple[str, ...], out: str = "f32",
                    c_elem: str = "f32", nd: tuple[int, int] | None = None) -> str:
    """C = A x B (Nz fractals, f16 in, `c_elem` out: an M x K result of an
    N-long reduction, M and K rounded up to whole blocks), then the
    elementwise `steps` on C, each one of "bias" (+ a tensor shaped like C,
    as the frontend materialises a bias), "bias_row" (+ that bias as a host
    constant, `npu.constant`, every row the same: what the frontend makes of
    an ONNX bias), "bias_table" (+ a host constant whose rows differ),
    "scale" (x 1/sqrt(64)), "gelu" (erf form: five ops), "gelu_tanh" (the
    tanh form: nine ops), "residual" (+
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
            args.append((f"%{step}", c_s, e, nz_constant(m, k, e, step == "bias_row")))
    if "residual" in steps:
        args.append(("%r", c_s, e))
    args.append(("%y", nd or c_s, out))
    p = Program("matmul_epilogue", args)
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
            for name, attrs in ERF_GELU_STEPS:
                v = emit(name, [v], attrs)
            v = emit("mul", [h, v], last=last)
        elif step == "gelu_tanh":  # 0.5 x (1 + tanh(s (x + c x^3))), GPT-2's gelu_new
            h = v
            cube = emit("mul", [h, emit("mul", [h, h])])
            v = emit("add", [h, emit("muls", [cube], "scalar = 4.4715e-02 : f64")])
            for name, attrs in (("muls", "scalar = 0.7978845608028654 : f64"), ("tanh", ""),
                                ("adds", "scalar = 1.0 : f64"), ("muls", "scalar = 0.5 : f64")):
                v = emit(name, [v], attrs)
            v = emit("mul", [h, v], last=last)
    if nd is not None:
        p.op("defractalize", [v if steps else c, ("%y", nd, out)])
    return p.text()


def ffn_pair(m: int, n: int, f: int, act: str = "gelu") -> str:
    """A transformer FFN in Nz: x (m x n, f16) . W1 (n x f) + a host-constant
    bias row, `act` ("gelu": erf form, or "relu"), cast to f16, . W2 (f x n)
    -> %y (m x n, f32). The f16 intermediate is read only as the second
    matmul's A (a matmul chain, npu-fuse chains)."""
    b = 16
    m1, n1, f1 = -(-m // b), n // b, f // b
    h_s, y_s = (f1, m1, b, b), (n1, m1, b, b)
    p = Program("ffn_pair", [("%x", (n1, m1, b, b), "f16"), ("%w1", (f1, n1, b, b), "f16"),
                              ("%bias", h_s, "f32", nz_constant(m1 * b, f, "f32", True)),
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
        for name, attrs in ERF_GELU_STEPS:
            v = step(name, [v], attrs)
        v = step("mul", [h, v])
    t = step("cast", [v], 'round_mode = "rint"', "f16")
    p.op("matmul", [t, ("%w2", (n1, f1, b, b), "f16"), ("%y", y_s, "f32")])
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
        args.append(("%bias", c_s, elem, nz_constant(m, k, elem, True)))
    if residual:
        args.append(("%r", full, elem))
    args += [("%g", vec, elem), ("%be", vec, elem), ("%y", full, elem)]
    if nz_out:
        args.append(("%ynz", c_s, "f16"))
    p = Program("matmul_layernorm", args)
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
    y = layernorm_rows(p, a, col, ("%g", vec, elem), ("%be", vec, elem), ("%y", full, elem), eps)
    if nz_out:
        src = y
        if elem != "f16":
            src = (p.alloc(full, "f16"), full, "f16")
            p.op("cast", [y, src], 'round_mode = "rint"')
        p.op("fractalize", [src, ("%ynz", c_s, "f16")])
    return p.text()


def bias_epilogue_inputs(module, m: int, n: int, k: int, seed: int):
    """Random A (m x n) and B (n x k, scaled so the f16 sums stay in range),
    the compiled program's host-constant bias (argument 2) and its operands
    in the program's layouts, for a `matmul_epilogue(..., ("bias_row", ...),
    nd=(m, k))` program: (a, b, bias, operands)."""
    import numpy as np

    from npu.ir import arg_attrs, constant_data, functions, memref_shape
    from npu.reference import fractalize

    func = functions(module)[0]
    a_s, b_s, bias_s, y_s = [memref_shape(v.type) for v in func.regions[0].blocks[0].arguments]
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, n)).astype(np.float16)
    b = (rng.standard_normal((n, k)) / 16).astype(np.float16)
    bias = constant_data(arg_attrs(func, 2)["npu.constant"], bias_s, "f32")
    return a, b, bias, [fractalize(a, tuple(a_s)), fractalize(b, tuple(b_s)), bias,
                        np.zeros(y_s, np.float16)]
