"""ascend programs of the fused row patterns (softmax, layernorm with
residual add, GELU with bias, a row kernel's result fractalized into a
matmul operand) as text, for the fusion tests and bench/fusion.py."""

from __future__ import annotations

from ascend_program import ERF_GELU_STEPS, Program, gm_type, layernorm_rows, nz_constant


def softmax(rows_shape: tuple, n: int, elem: str = "f32") -> str:
    full, col = rows_shape + (n,), rows_shape + (1,)
    p = Program("softmax", [("%x", full, elem), ("%y", full, elem)])
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
    p = Program("layernorm", args)
    x = ("%x", full, elem)
    if residual:
        a = (p.alloc(full, elem), full, elem)
        p.op("add", [x, ("%r", full, elem), a])
    else:
        a = x
    layernorm_rows(p, a, col, ("%g", vec, elem), ("%b", vec, elem), ("%y", full, elem), eps)
    return p.text()


def gelu(rows: int, n: int, elem: str = "f32") -> str:
    """y = h * 0.5 * (1 + erf(h / sqrt(2))) with h = x + bias (ONNX's exact GELU)."""
    full, vec = (rows, n), (n,)
    p = Program("gelu", [("%x", full, elem), ("%bias", vec, elem), ("%y", full, elem)])
    h = (p.alloc(full, elem), full, elem)
    p.op("add", [("%x", full, elem), ("%bias", vec, elem), h])
    v = h
    for name, attrs in ERF_GELU_STEPS:
        out = (p.alloc(full, elem), full, elem)
        p.op(name, [v, out], attrs)
        v = out
    p.op("mul", [h, v, ("%y", full, elem)])
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
                  nz_constant(n, matmul_n, "f16", False)),
                 ("%c", (-(-matmul_n // 16), r1, 16, 16), "f32")]
    p = Program("nz_operand", args)
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
                   f"{gm_type(full, src_elem)} into {gm_type((rows, n), src_elem)}")
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
