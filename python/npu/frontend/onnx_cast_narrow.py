"""Casts to a type the NPU does not hold, computed exactly in the type that
holds it (`onnx_wide_types.WIDE`), with the vector unit's f32 arithmetic.

To INT4, UINT4, INT2, UINT2 (held in i8), ONNX's reference is numpy's
`astype` into ml_dtypes' type: truncation toward zero, then the low bits
(two's complement wrap), 0 for NaN and +-inf (checked against ml_dtypes over
every f16 and 2^20 f32 bit patterns, `test_onnx_cast_narrow.py`). With
m = 2^bits, in f32 (trunc is a Cast to i32 and back):

    x' = Clip(x, -2^30, 2^30), NaN -> 0  # past 2^27 every f32 is a multiple of 16
    q  = trunc(x' / m)                   # exact: m is a power of two
    r  = x' - m q                        # exact: |r| < m, a multiple of ulp(x')
    t  = trunc(r)                        # trunc(x) = m q + t (q, r share x's sign)
    u  = t + m + m/2 (signed) or t + m   # in [1, 2m + m/2): small integers
    w  = u - m trunc(u / m) - m/2 (signed) or the same without m/2

To FLOAT8E4M3FN/FNUZ, FLOAT8E5M2/FNUZ, FLOAT4E2M1 (held in f16) and
BFLOAT16 (in f32), the reference is ml_dtypes' round-to-nearest-even to the
format's p = m + 1 significant bits, with `saturate` (float8 only, ONNX's
default) clipping to +-max first. In f32:

* normal range: Veltkamp's split, c = x (2^(23-m) + 1), hi = c - (c - x):
  x rounded to p bits, ties to even (against ml_dtypes: every f16, 2^26
  random f32 and every midpoint of each format, no difference);
* below the smallest normal 2^emin the quantum is fixed, 2^(emin - m):
  (x + C) - C with C = 1.5 2^23 2^(emin - m) rounds to it, ties to even;
* past max: +-max when saturating (and always for FLOAT4E2M1, which has
  neither inf nor NaN: ml_dtypes saturates it, NaN to 0), else inf (E5M2)
  or NaN (E4M3FN and the FNUZ types); NaN stays NaN. |x| is clipped to
  2^20 first (every float8 overflows there; the split must not overflow f32);
  bfloat16's range is f32's, so it rounds x 2^-64 past 2^64 and scales back
  (an overflow to 2^128 is inf, as ml_dtypes').

To FLOAT8E8M0 (held in f32; powers of two 2^-127..2^127 and NaN), onnx's
`to_float8e8m0` takes |x|'s exponent field and rounds it by `round_mode`:
"up" to the next power when any fraction bit is set, "nearest" when the
top fraction bit is (for a normal |x|: |x| >= 1.5 P), "down" never; a
zero or an f32 subnormal has field 0 (2^-127; "up" takes any nonzero to
2^-126, "nearest" one above 2^-127). P = 2^floor(log2 |x|) is found by a
binary search of the exponent with multiplies and compares (steps 2^127,
2^64, ..., 2: their sums reach every exponent -126..128); inf and NaN are
NaN, and past 2^127 `saturate` keeps 2^127, else NaN.

The source must be one whose every value f32 holds (an int32 above 2^24
would round before its low bits are taken).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FLOAT, INT8, INT32 = 1, 3, 6
# ONNX type -> (bits, signed) of the sub-byte integers.
SUB_BYTE_INTS = {22: (4, True), 21: (4, False), 26: (2, True), 25: (2, False)}
_CLIP = 2.0 ** 30
FLOAT16 = 10
# Types whose every value f32 holds: float, float16, the 8/16-bit integers,
# bool and the narrow types of `onnx_wide_types.WIDE` (not double).
IN_F32 = frozenset({FLOAT, FLOAT16, INT8, 2, 4, 5, 9, *range(16, 27)})


@dataclass(frozen=True)
class FloatFormat:
    mantissa: int      # stored significand bits
    emin: int          # exponent of the smallest normal
    max: float
    overflow: str      # unsaturated overflow: "inf", "nan" or "max" (always saturates)
    wide: int          # the type that holds it


FLOAT_FORMATS = {
    17: FloatFormat(3, -6, 448.0, "nan", FLOAT16), 18: FloatFormat(3, -7, 240.0, "nan", FLOAT16),
    19: FloatFormat(2, -14, 57344.0, "inf", FLOAT16), 20: FloatFormat(2, -15, 57344.0, "nan", FLOAT16),
    23: FloatFormat(1, 0, 6.0, "max", FLOAT16),
    16: FloatFormat(7, -126, float(np.finfo(np.float32).max) * (1 - 2.0 ** -8), "inf", FLOAT),
}
_FLOAT8 = (17, 18, 19, 20)
FLOAT8E8M0 = 24


def expand_cast(node, src: int | None, to: int, ex) -> bool:
    """Write the Cast `node` (from `src` to the narrow type `to`) out as ops
    that compute it exactly in `to`'s wide type; False when there are none."""
    if src not in IN_F32:
        return False
    if to in SUB_BYTE_INTS:
        _sub_byte_int(node, src, ex, *SUB_BYTE_INTS[to])
        return True
    if to == FLOAT8E8M0:
        attrs = {a.name: a for a in node.attribute}
        saturate = attrs["saturate"].i != 0 if "saturate" in attrs else True
        mode = attrs["round_mode"].s.decode() if "round_mode" in attrs else "up"
        if mode not in ("up", "down", "nearest"):
            return False
        _e8m0(node, src, ex, saturate, mode)
        return True
    if to in FLOAT_FORMATS:
        saturate = next((a.i for a in node.attribute if a.name == "saturate"), 1) != 0
        _float_format(node, src, ex, FLOAT_FORMATS[to], saturate or to not in _FLOAT8)
        return True
    return False


def why_not(src: int | None, to: int) -> str:
    """The refusal's reason for a Cast `expand_cast` does not take."""
    if src not in IN_F32:
        return "f32 does not hold every value of the source, so the result's low bits are not exact"
    return "the NPU has no conversion to it, and its rounding is not emulated"


def _sub_byte_int(node, src: int, ex, bits: int, signed: bool) -> None:
    m = float(2 ** bits)
    half = m / 2 if signed else 0.0

    def const(tag: str, value: float) -> str:
        return ex.const(tag, value, np.float32)

    def trunc(x: str, tag: str) -> str:
        return ex.make("Cast", [ex.make("Cast", [x], f"{tag}_i", to=INT32)], tag, to=FLOAT)

    x = node.input[0] if src == FLOAT else ex.make("Cast", [node.input[0]], "f32", to=FLOAT)
    finite = ex.make("Where", [ex.make("IsNaN", [x], "nan"), const("zero", 0.0), x], "num")
    x = ex.make("Clip", [finite, const("lo", -_CLIP), const("hi", _CLIP)], "clip")
    q = trunc(ex.make("Mul", [x, const("inv_m", 1 / m)], "x_m"), "q")
    r = ex.make("Sub", [x, ex.make("Mul", [q, const("m", m)], "mq")], "r")
    u = ex.make("Add", [trunc(r, "t"), const("shift", m + half)], "u")
    k = trunc(ex.make("Mul", [u, const("inv_m2", 1 / m)], "u_m"), "k")
    w = ex.make("Sub", [u, ex.make("Mul", [k, const("m2", m)], "mk")], "w")
    if signed:
        w = ex.make("Sub", [w, const("half", half)], "wrapped")
    ex.final("Cast", [w], "cast", to=INT8)


def _float_format(node, src: int, ex, fmt: FloatFormat, saturate: bool) -> None:
    def const(tag: str, value: float) -> str:
        return ex.const(tag, value, np.float32)

    def split(x: str, tag: str) -> str:
        c = ex.make("Mul", [x, const(f"{tag}_k", 2.0 ** (23 - fmt.mantissa) + 1)], f"{tag}_c")
        return ex.make("Sub", [c, ex.make("Sub", [c, x], f"{tag}_cx")], tag)

    x = node.input[0] if src == FLOAT else ex.make("Cast", [node.input[0]], "f32", to=FLOAT)
    nan = ex.make("IsNaN", [x], "nan")
    finite = ex.make("Where", [nan, const("zero", 0.0), x], "num")
    bf16 = fmt.wide == FLOAT
    top = float(np.finfo(np.float32).max) if bf16 else 2.0 ** 20
    x = ex.make("Clip", [finite, const("lo", -top), const("hi", top)], "clip")
    magnitude = ex.make("Abs", [x], "abs")
    normal = split(x, "split")
    if bf16:  # past 2^64 the split's product would overflow: scaled down and back
        scaled = ex.make("Mul", [split(ex.make("Mul", [x, const("down", 2.0 ** -64)], "x_s"), "split_s"),
                                 const("up", 2.0 ** 64)], "hi_big")
        normal = ex.make("Where", [ex.make("Less", [magnitude, const("big", 2.0 ** 64)], "small"),
                                   normal, scaled], "hi_all")
    magic = const("magic", 1.5 * 2.0 ** (23 + fmt.emin - fmt.mantissa))
    sub = ex.make("Sub", [ex.make("Add", [x, magic], "x_magic"), magic], "sub")
    r = ex.make("Where", [ex.make("Less", [magnitude, const("min_normal", 2.0 ** fmt.emin)], "tiny"),
                          sub, normal], "rounded")
    if not bf16 and (saturate or fmt.overflow == "max"):
        r = ex.make("Clip", [r, const("min", -fmt.max), const("max", fmt.max)], "saturated")
    elif not bf16:
        over = ex.make("Greater", [ex.make("Abs", [r], "r_abs"), const("max", fmt.max)], "over")
        big = (ex.make("Mul", [r, const("inf", np.inf)], "r_inf") if fmt.overflow == "inf"
               else const("overflow_nan", np.nan))
        r = ex.make("Where", [over, big, r], "overflowed")
    if fmt.overflow != "max":  # FLOAT4E2M1 has no NaN: ml_dtypes makes it 0
        r = ex.make("Where", [nan, const("nan_value", np.nan), r], "with_nan")
    ex.final("Cast", [r], "cast", to=fmt.wide)


def _e8m0(node, src: int, ex, saturate: bool, mode: str) -> None:
    def const(tag: str, value: float) -> str:
        return ex.const(tag, value, np.float32)

    x = node.input[0] if src == FLOAT else ex.make("Cast", [node.input[0]], "f32", to=FLOAT)
    a = ex.make("Abs", [x], "abs")
    power = const("p0", 2.0 ** -126)
    for k in (127, 64, 32, 16, 8, 4, 2, 1):
        step = ex.make("Mul", [power, const(f"step{k}", 2.0 ** k)], f"p_x{k}")
        power = ex.make("Where", [ex.make("GreaterOrEqual", [a, step], f"ge{k}"), step, power], f"p{k}")
    twice = ex.make("Mul", [power, const("two", 2.0)], "twice")
    if mode == "down":
        normal = power
    else:
        bound = power if mode == "up" else ex.make("Mul", [power, const("three_halves", 1.5)], "p15")
        cmp = "Greater" if mode == "up" else "GreaterOrEqual"
        normal = ex.make("Where", [ex.make(cmp, [a, bound], "round_up"), twice, power], "rounded")
    least = const("least", 2.0 ** -127)
    if mode == "down":
        tiny = least
    else:
        edge = const("zero", 0.0) if mode == "up" else least
        tiny = ex.make("Where", [ex.make("Greater", [a, edge], "tiny_up"), const("p0_", 2.0 ** -126), least], "tiny")
    r = ex.make("Where", [ex.make("Less", [a, const("min_normal", 2.0 ** -126)], "is_tiny"), tiny, normal], "r")
    over = ex.make("Greater", [r, const("max", 2.0 ** 127)], "over")  # 2^128 overflowed to inf
    r = ex.make("Where", [over, const("over_value", 2.0 ** 127 if saturate else np.nan), r], "r_sat")
    special = ex.make("Or", [ex.make("IsNaN", [x], "nan"), ex.make("IsInf", [x], "inf")], "special")
    ex.final("Where", [special, const("nan_value", np.nan), r], "e8m0")
