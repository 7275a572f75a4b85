"""The text builder the fusion test patterns share (row_patterns,
matmul_patterns, attention_patterns): an ascend `func.func` written op by
op, host constants in Nz, and the op chains more than one pattern emits."""

from __future__ import annotations

import math

# ONNX's exact GELU after its input h: h / sqrt(2), erf, + 1, x 0.5 (the
# pattern then multiplies by h).
ERF_GELU_STEPS = (("muls", f"scalar = {1 / math.sqrt(2):.17e} : f64"), ("erf", ""),
                  ("adds", "scalar = 1.0 : f64"), ("muls", "scalar = 5.0e-01 : f64"))


def gm_type(shape, elem: str) -> str:
    return f'memref<{"x".join(map(str, shape))}x{elem}, "gm">'


class Program:
    def __init__(self, name: str, args: list[tuple[str, tuple, str]]):
        self.name = name
        self.args = args
        self.lines: list[str] = []
        self.count = 0

    def alloc(self, shape, elem) -> str:
        self.count += 1
        v = f"%t{self.count}"
        self.lines.append(f"  {v} = memref.alloc() : {gm_type(shape, elem)}")
        return v

    def new(self, shape, elem) -> tuple:
        """A new buffer as an operand: (name, shape, elem)."""
        return (self.alloc(shape, elem), shape, elem)

    def op(self, name: str, operands: list[tuple[str, tuple, str]], attrs: str = "") -> None:
        names = ", ".join(v for v, _, _ in operands)
        types = ", ".join(gm_type(s, e) for _, s, e in operands)
        attr = f" {{{attrs}}}" if attrs else ""
        self.lines.append(f'  "ascend.{name}"({names}){attr} : ({types}) -> ()')

    def line(self, text: str) -> str:
        """A value-producing line (a view, a constant): its new name."""
        v = f"%v{len(self.lines)}"
        self.lines.append(f"  {v} = {text}")
        return v

    def text(self) -> str:
        sig = ", ".join(f"{a[0]}: {gm_type(a[1], a[2])}" + (f" {{{a[3]}}}" if len(a) > 3 else "")
                        for a in self.args)
        return "\n".join([f"func.func @{self.name}({sig}) {{"] + self.lines
                         + ["  return", "}"]) + "\n"


def nz_constant(m: int, k: int, elem: str, rows_repeat: bool) -> str:
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


def layernorm_rows(p: Program, a: tuple, col: tuple, gamma: tuple, beta: tuple, y: tuple,
                   eps: float) -> tuple:
    """y = (a - mean) / sqrt(var + eps) * gamma + beta over the rows of `a`
    (`col`: the shape of one value a row; the row length is a's last
    dimension), the chain layernorm and matmul_layernorm both end with: y."""
    full, elem = a[1], a[2]

    def op(name, ins, shape, attrs="", out=None):
        out = out or p.new(shape, elem)
        p.op(name, list(ins) + [out], attrs)
        return out

    inv_n = f"scalar = {1.0 / full[-1]:.17e} : f64"
    mean = op("muls", [op("reduce_sum", [a], col)], col, inv_n)
    d = op("sub", [a, mean], full)
    var = op("muls", [op("reduce_sum", [op("mul", [d, d], full)], col)], col, inv_n)
    rs = op("rsqrt", [op("adds", [var], col, f"scalar = {eps:.17e} : f64")], col)
    sc = op("mul", [op("mul", [d, rs], full), gamma], full)
    return op("add", [sc, beta], full, out=y)
