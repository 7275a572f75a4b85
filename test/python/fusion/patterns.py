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

    def text(self) -> str:
        sig = ", ".join(f"{v}: {_t(s, e)}" for v, s, e in self.args)
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


def matmul_epilogue(m: int, n: int, k: int, steps: tuple[str, ...], out: str = "f32",
                    c_elem: str = "f32") -> str:
    """C = A x B (Nz fractals, f16 in, `c_elem` out: an M x K result of an
    N-long reduction), then the elementwise `steps` on C, each one of
    "bias" (+ a tensor shaped like C, as the frontend materialises a bias),
    "scale" (x 1/sqrt(64)), "gelu" (erf form: five ops), "residual"
    (+ another input tensor), "cast" (to f16, the last step); the result
    goes to %y with element type `out`. Operands and intermediates have C's
    element type."""
    f = 16
    a_s, b_s, c_s = (n // f, m // f, f, f), (k // f, n // f, f, f), (k // f, m // f, f, f)
    args = [("%a", a_s, "f16"), ("%b", b_s, "f16")]
    e = c_elem
    if "bias" in steps:
        args.append(("%bias", c_s, e))
    if "residual" in steps:
        args.append(("%r", c_s, e))
    args.append(("%y", c_s, out))
    p = _Program("matmul_epilogue", args)
    c = (p.alloc(c_s, c_elem), c_s, c_elem)
    p.op("matmul", [("%a", a_s, "f16"), ("%b", b_s, "f16"), c])
    v = c
    todo = list(steps)
    y = ("%y", c_s, out)

    def emit(name, ins, attrs="", last=False, elem=e):
        dst = y if last else (p.alloc(c_s, elem), c_s, elem)
        p.op(name, list(ins) + [dst], attrs)
        return dst

    for i, step in enumerate(todo):
        last = i == len(todo) - 1
        if step == "bias":
            v = emit("add", [v, ("%bias", c_s, e)], last=last)
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
    return p.text()
