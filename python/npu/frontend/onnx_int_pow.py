"""`Pow` of an integer base by an integer exponent, exactly, in i32.

The result must be the exact integer (wrapped to 32 bits like numpy's int32
power); exp(y ln x) in f32 is not exact past 2^24. Square-and-multiply is:
i32 multiplication wraps, so every product is the true one modulo 2^32.

The exponent's 31 bits are read without integer division or shifts: y (a
non-negative i32) is split exactly as t 2^24 + r (t from f32, then one
correction each way checked in i32), and r < 2^24 and t < 128 are exact in
f32, where halving and truncating peel off one bit at a time.

An int8 base wraps to 8 bits (like numpy's int8 power). Types held as i32
(`onnx_narrow`: int64, int16, unsigned) follow its convention: computed in
i32, a result outside the model's type an error at the output.

A negative exponent has no integer result except for a base of +-1: the
result is trunc(1 / x^|y|), so 1 for x = 1, +-1 for x = -1 by y's parity, and
0 otherwise (numpy refuses it; C's integer semantics). An integer base with a
float exponent is refused: trunc(x^y) for a fractional y has no exact method.
"""

from __future__ import annotations

import numpy as np

INTS = (2, 3, 4, 5, 6, 7, 12, 13)
FLOAT, INT32, INT8 = 1, 6, 3


def expand_integer_pows(model, fail, types: dict | None = None) -> list[str]:
    """Rewrite (in place) every Pow of an integer base by an integer tensor
    exponent; its names. `fail(message)` makes the error for an integer base
    with a float exponent."""
    if not any(n.op_type == "Pow" for n in model.graph.node):
        return []
    from npu.frontend.onnx_expansion import rewrite_nodes

    def expand(node, types: dict, expansion) -> bool:
        x_elem = types.get(node.input[0], (None, 0))[1] if node.op_type == "Pow" else 0
        y_elem = types.get(node.input[1], (None, 0))[1] if node.op_type == "Pow" else 0
        if node.domain not in ("", "ai.onnx") or x_elem not in INTS:
            return False
        if y_elem not in INTS:
            raise fail(f"node '{node.name}' (Pow): an integer base with a non-integer exponent has no "
                       "exact method on the vector unit (trunc(x^y) from exp(y ln x) in f32 is inexact "
                       "past 2^24)")
        ex = expansion()
        make, const = ex.make, ex.const
        i32 = lambda tag, v: const(tag, v, np.int32)  # noqa: E731
        f32 = lambda tag, v: const(tag, v, np.float32)  # noqa: E731
        x = make("Cast", [node.input[0]], "x32", to=INT32)
        y = make("Cast", [node.input[1]], "y32", to=INT32)
        zero, one, two24 = i32("zero", 0), i32("one", 1), i32("two24", 2**24)
        half = f32("half", 0.5)
        y_pos = make("Max", [y, zero], "ypos")
        t = make("Cast", [make("Mul", [make("Cast", [y_pos], "yf", to=FLOAT), f32("inv24", 2.0**-24)],
                               "yt")], "t0", to=INT32)
        r = make("Sub", [y_pos, make("Mul", [t, two24], "t0s")], "r0")
        for tag, cond, sign in (("lo", make("Less", [r, zero], "rneg"), -1),
                                ("hi", make("Greater", [r, i32("top24", 2**24 - 1)], "rbig"), 1)):
            step = make("Where", [cond, i32(f"{tag}_d", sign), zero], f"{tag}_step")
            t = make("Add", [t, step], f"t_{tag}")
            r = make("Sub", [r, make("Mul", [step, two24], f"{tag}_s")], f"r_{tag}")

        def bits(value: str, count: int, tag: str) -> list[str]:
            h, out = make("Cast", [value], f"{tag}f", to=FLOAT), []
            for k in range(count):
                halves = make("Mul", [h, half], f"{tag}h{k}")
                h = make("Cast", [make("Cast", [halves], f"{tag}i{k}", to=INT32)], f"{tag}t{k}", to=FLOAT)
                out.append(make("Not", [make("Equal", [halves, h], f"{tag}e{k}")], f"{tag}b{k}"))
            return out

        result, base = one, x
        for k, bit in enumerate(bits(r, 24, "r") + bits(t, 7, "t")):
            result = make("Where", [bit, make("Mul", [result, base], f"m{k}"), result], f"p{k}")
            if k < 30:
                base = make("Mul", [base, base], f"s{k}")
        # y's parity: that of y - 2k for k = trunc(f32(y) / 2), a small exact i32.
        k = make("Cast", [make("Mul", [make("Cast", [y], "yf_all", to=FLOAT), half], "yhalf")], "k", to=INT32)
        odd = bits(make("Sub", [y, make("Add", [k, k], "k2")], "ydiff"), 1, "n")[0]
        unit = make("Where", [make("Equal", [x, one], "x1"), one,
                              make("Where", [make("Equal", [x, make("Neg", [one], "mone")], "xm1"),
                                             make("Where", [odd, i32("minus1", -1), one], "pm1"), zero],
                                   "um")], "unit")
        choice = [make("Less", [y, zero], "yneg"), unit, result]
        if x_elem == INT32:
            ex.final("Where", choice, "pow")
            return True
        value = make("Where", choice, "pow")
        if x_elem == INT8:  # the device's i32 -> i8 cast saturates: wrap first
            # v - 256 k for k = trunc(f32(v) / 256) is v mod 256 up to a few 256s (exact i32),
            # small enough for f32: shifted non-negative, its multiple of 256 taken off.
            k = make("Cast", [make("Mul", [make("Cast", [value], "vf", to=FLOAT), f32("inv256", 1 / 256)],
                                   "v256")], "vk", to=INT32)
            near = make("Cast", [make("Sub", [value, make("Mul", [k, i32("c256", 256)], "vk256")], "vd")],
                        "vdf", to=FLOAT)
            shifted = make("Add", [near, f32("shift", 4 * 256 + 128)], "vs")
            turns = make("Cast", [make("Cast", [make("Mul", [shifted, f32("inv256f", 1 / 256)], "vs256")],
                                       "vsk", to=INT32)], "vskf", to=FLOAT)
            wrapped = make("Sub", [shifted, make("Mul", [turns, f32("c256f", 256.0)], "vskt")], "vw")
            value = make("Cast", [make("Add", [wrapped, f32("lo", -128.0)], "vlo")], "vi", to=INT32)
        ex.final("Cast", [value], "cast", to=x_elem)
        return True

    return rewrite_nodes(model, types, expand)
