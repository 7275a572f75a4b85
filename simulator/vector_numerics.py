"""What the vector unit computes, lane by lane: the numpy functions of its
ops and the rounding of multiply-adds and vconv.

Arithmetic is done in the operands' type: fp16 operands are computed with
numpy's float16 ufuncs, which evaluate in float32 and round once to fp16 (for
+ - * / max min this equals the correctly rounded fp16 result); exp, ln,
sqrt, rsqrt and 1/x are evaluated in float32 and rounded to fp16. vcadd sums
a repeat's active lanes in float32 and rounds once.

Multiply-adds (vmadd dst = src0*dst + src1, vmla dst = src0*src1 + dst,
vaxpy dst = scalar*src + dst) round once, like a fused multiply-add: the
result is the exact a*b + c rounded to the operand type (nearest-even).
f16: a*b + c is exact in float64 (22-bit products, exponents within 53 bits)
and is rounded once. f32: the float64 sum of the exact product and c is
corrected by its TwoSum error where rounding it to f32 would tie, so double
rounding never happens (`fma_round`). The CCE intrinsic reference gives the
formulas but not the rounding; one rounding is the model here, and vmul
then vadd (two roundings) differ from it by at most an ulp per step.
"""

from __future__ import annotations

import numpy as np

from npu.simulator.instruction import np_dtype

BINARY = {"cce.vadd": np.add, "cce.vsub": np.subtract, "cce.vmul": np.multiply,
          "cce.vdiv": np.divide, "cce.vmax": np.maximum, "cce.vmin": np.minimum}
SCALAR = {"cce.vadds": np.add, "cce.vmuls": np.multiply, "cce.vmaxs": np.maximum,
          "cce.vmins": np.minimum}


def _f32(fn):
    """Evaluate in float32 and round back to the operand type."""
    def run(x: np.ndarray) -> np.ndarray:
        return fn(x.astype(np.float32)).astype(x.dtype)
    return run


UNARY = {
    "cce.vrelu": lambda x: np.maximum(x, x.dtype.type(0)),
    "cce.vabs": np.abs,
    "cce.vexp": _f32(np.exp),
    "cce.vln": _f32(np.log),
    "cce.vsqrt": _f32(np.sqrt),
    "cce.vrsqrt": _f32(lambda x: np.float32(1) / np.sqrt(x)),
    "cce.vrec": _f32(lambda x: np.float32(1) / x),
}


def fma_round(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """a*b + c rounded once to the type of `c` (f16 or f32), nearest-even."""
    dt = c.dtype
    with np.errstate(all="ignore"):
        p = a.astype(np.float64) * b.astype(np.float64)  # exact for f16/f32 inputs
        c64 = c.astype(np.float64)
        s = p + c64
        if dt == np.float16:
            return s.astype(dt)  # exact sum: one rounding
        r = s.astype(dt)
        # TwoSum: s + err == p + c exactly (finite values).
        bb = s - p
        err = (p - (s - bb)) + (c64 - bb)
        r64 = r.astype(np.float64)
        toward = np.where(s > r64, np.inf, -np.inf).astype(dt)
        other = np.nextafter(r, toward)
        tie = (s != r64) & np.isfinite(s) & (other.astype(np.float64) - s == s - r64)
        # On a tie of s, the exact value lies on err's side of s.
        fix = tie & (err != 0) & ((err > 0) == (other.astype(np.float64) > s))
        return np.where(fix, other, r)
ROUND_MODES = ("rint", "floor", "ceil", "trunc", "round", "none")


# ----------------------------------------------------------------------------
# vconv
# ----------------------------------------------------------------------------


def _round_float(x: np.ndarray, mode: str) -> np.ndarray:
    """Round to integral values (float64) with the named mode."""
    x = x.astype(np.float64)
    if mode in ("rint", "none"):
        return np.rint(x)
    if mode == "floor":
        return np.floor(x)
    if mode == "ceil":
        return np.ceil(x)
    if mode == "trunc":
        return np.trunc(x)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)  # "round": half away from zero


def _narrow_to_f16(x: np.ndarray, mode: str) -> np.ndarray:
    """f32 -> f16 with a directed rounding mode (nearest-even for rint/none)."""
    y = x.astype(np.float16)
    if mode in ("rint", "none"):
        return y
    yf = y.astype(np.float32)
    if mode == "floor":
        fix = yf > x
        toward = np.float16(-np.inf)
    elif mode == "ceil":
        fix = yf < x
        toward = np.float16(np.inf)
    elif mode == "trunc":
        fix = np.abs(yf) > np.abs(x)
        toward = np.float16(0)
    else:  # "round": nearest, ties away from zero
        other = np.nextafter(y, np.where(yf < x, np.float16(np.inf), np.float16(-np.inf)))
        tie = (yf != x) & (np.abs(other.astype(np.float64) - x) == np.abs(yf.astype(np.float64) - x))
        fix = tie & (np.abs(other) > np.abs(y))
        return np.where(fix, other, y)
    return np.where(fix, np.nextafter(y, toward), y)


def converter(src: str, dst: str, mode: str):
    dst_np = np_dtype(dst)
    if dst in ("i32", "i8"):
        info = np.iinfo(dst_np)

        def to_int(x: np.ndarray) -> np.ndarray:
            r = _round_float(x, mode)
            r = np.where(np.isnan(r), 0, r)  # NaN converts to 0
            return np.clip(r, info.min, info.max).astype(dst_np)
        return to_int
    if src == "f32" and dst == "f16":
        return lambda x: _narrow_to_f16(x, mode)
    return lambda x: x.astype(dst_np)  # widening: exact


def run_steps(steps, x: np.ndarray) -> np.ndarray:
    """A vector recipe (`npu.costmodel.vector.recipes.Step`s) on the lanes `x` (f16 or
    f32), each step computed as the simulator computes its instruction:
    scalars and constants rounded to the lanes' type, multiply-adds rounded
    once. For measuring a recipe's accuracy on every input without a kernel."""
    dt = x.dtype.type
    regs = {"x": x, "y": x.copy()}

    def val(s):
        return np.full_like(x, dt(s)) if isinstance(s, float) else regs[s]

    with np.errstate(all="ignore"):
        for st in steps:
            ins = [val(s) for s in st.srcs]
            if st.op == "cce.vmadd":
                out = fma_round(ins[0], regs[st.dst], val(float(st.scalar)))
            elif st.op == "cce.vmla":
                out = fma_round(ins[0], ins[1], regs[st.dst])
            elif st.op in BINARY:
                out = BINARY[st.op](ins[0], ins[1])
            elif st.op in SCALAR:
                out = SCALAR[st.op](ins[0], dt(st.scalar))
            else:
                out = UNARY[st.op](ins[0])
            regs[st.dst] = out.astype(x.dtype)
    return regs["y"]
