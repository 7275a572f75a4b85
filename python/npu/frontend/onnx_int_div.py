"""Division of 32-bit integers (truncated toward zero), exactly, without an
integer divide: an f32 estimate, one rounded f32 correction, one exact fix.

int64 and unsigned data run as i32 (`onnx_narrow`), so this covers them.
With u = 2^-24 (f32's unit roundoff) and any i32 a, b (b != 0; INT_MIN / -1
overflows, as in C):

1. q0 = trunc(f32(a) / f32(b)), clipped to [-2^31, 2^31 - 128] (f32 values
   an i32 cast takes). |f32(a)/f32(b) - a/b| <= 3.0001 u |a/b| <= 384.01.
2. r0 = a - q0 b in wrapping i32. q0 has the sign of a/b (or is 0): when
   |q0 b| <= |a|, r0 lies between 0 and a; otherwise |r0| = |q0 b| - |a| <=
   3.0001 u |a| <= 385. Either way the true r0 fits i32, so the wrapped
   arithmetic gives it exactly.
3. d = r0 / b = a/b - q0 has |d| < 386 (the clip moves q0 by < 128 only
   when |b| = 1); its f32 estimate d' is within 386 * 3.0001 u < 7e-5.
   q1 = q0 + round(d') (half away from zero, as trunc(d' + 0.5 sign d'), an
   add rounded by at most 2^-16) is within 0.5 + 7e-5 + 2^-16 < 1 of a/b.
4. r1 = a - q1 b: |r1| < |b|, exact as in 2. q1 is trunc(a/b) unless r1 is
   non-zero with the opposite sign to a (q1 one past it, away from zero):
   then q = q1 - sign(a) sign(b).

Every step is an i32 add/sub/mul (which wrap), a compare, a select, an f32
divide or a cast the vector unit has.
"""

from __future__ import annotations

import numpy as np

WIDE_INTS = (6, 7, 12, 13)  # INT32, INT64, UINT32, UINT64 (held as i32)
FLOAT, INT32 = 1, 6


def rewrite_int_divs(model, types: dict | None = None) -> list[str]:
    """Rewrite (in place) every Div of 32/64-bit integers; their names."""
    if not any(n.op_type == "Div" for n in model.graph.node):
        return []
    from npu.frontend.onnx_expansion import rewrite_nodes

    return rewrite_nodes(model, types, _expand_div)


def _expand_div(node, types: dict, expansion) -> bool:
    """Writes a Div of wide integers out by the method above."""
    elem = types.get(node.output[0], (None, 0))[1] if node.op_type == "Div" else 0
    if elem not in WIDE_INTS:
        return False
    ex = expansion()
    make, const = ex.make, ex.const

    a, b = node.input
    a32 = make("Cast", [a], "a32", to=INT32)     # a no-op once narrowed; broadcasts kept
    b32 = make("Cast", [b], "b32", to=INT32)
    bf = make("Cast", [b32], "bf", to=FLOAT)
    half, zero_f = const("half", 0.5, np.float32), const("zero_f", 0.0, np.float32)
    zero, one = const("zero", 0, np.int32), const("one", 1, np.int32)
    quotient = make("Div", [make("Cast", [a32], "af", to=FLOAT), bf], "qf")
    clipped = make("Clip", [quotient, const("lo", -2.0**31, np.float32),
                            const("hi", 2.0**31 - 128, np.float32)], "qc")
    q0 = make("Cast", [clipped], "q0", to=INT32)

    def remainder(q: str, tag: str) -> str:
        return make("Sub", [a32, make("Mul", [q, b32], f"{tag}b")], tag)

    d = make("Div", [make("Cast", [remainder(q0, "r0")], "r0f", to=FLOAT), bf], "d")
    away = make("Where", [make("Less", [d, zero_f], "dneg"), const("mhalf", -0.5, np.float32), half], "away")
    step = make("Cast", [make("Add", [d, away], "dr")], "step", to=INT32)
    q1 = make("Add", [q0, step], "q1")
    r1 = remainder(q1, "r1")
    a_neg = make("Less", [a32, zero], "aneg")
    past = make("And", [make("Not", [make("Equal", [r1, zero], "r1zero")], "r1nz"),
                        make("Xor", [make("Less", [r1, zero], "r1neg"), a_neg], "r1flip")], "past")
    toward = make("Where", [make("Xor", [a_neg, make("Less", [b32, zero], "bneg")], "qneg"),
                            one, const("mone", -1, np.int32)], "toward")
    fix = [q1, make("Where", [past, toward, zero], "fix")]
    if elem == INT32:
        ex.final("Add", fix, "q")
    else:
        ex.final("Cast", [make("Add", fix, "q")], "cast", to=elem)
    return True
