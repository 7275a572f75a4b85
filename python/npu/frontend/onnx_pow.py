"""`Pow(x, y)` with a runtime exponent, written out before torch-mlir.

torch-mlir lowers a tensor exponent to `math.powf`, in f64 when the exponent
is an integer tensor; the vector unit has neither. For a floating-point base
the power is `exp(y * ln|x|)` in f32 with C's `pow` sign rules:

* y = 0 gives 1 (also for x = 0 or NaN);
* x < 0 and y an odd integer: the result is negative;
* x < 0 and y not an integer: NaN;
* x = 0: ln 0 = -inf, so y > 0 gives 0 and y < 0 gives +inf.

The magnitude's relative error is that of f32 exp and ln (a few ulps times
|y ln|x||), within the 1e-3 of ONNX's conformance cases. Whether y is an
odd integer is decided exactly: a float y by truncating y and y/2 (every f32
above 2^24 is an even integer, so y is clipped there first); an integer y by
its f32 value's parity corrected by the (small, exact) rounding remainder
`y - int(float(y))`, so (-1)^y is right for every i32 y.

An integer base needs an exact integer result, which exp/ln in f32 does not
give past 2^24: `onnx_int_pow` computes it in i32 (or refuses it).
"""

from __future__ import annotations

import numpy as np

_FLOATS = (1, 10)              # FLOAT, FLOAT16
_INTS = (2, 3, 4, 5, 6, 7, 12, 13)  # every ONNX integer type
# The largest f32 below 2^31 (a value an i32 cast takes without overflow).
_I32_SAFE = float(2**31 - 128)


def expand_tensor_pows(model, types: dict | None = None) -> list[str]:
    """Replace (in place) every Pow of `model` whose exponent is computed at
    run time and whose base is f32/f16 by its formula; the new nodes carry
    the Pow's name as a prefix (errors still point at it). The names of the
    Pows rewritten."""
    constants = {t.name for t in model.graph.initializer} | {
        o for n in model.graph.node if n.op_type == "Constant" for o in n.output}
    candidates = {n.name for n in model.graph.node if n.op_type == "Pow" and n.domain in ("", "ai.onnx")
                  and len(n.input) == 2 and n.input[1] not in constants}
    if not candidates:
        return []
    from npu.frontend.onnx_expansion import rewrite_nodes

    def expand(node, types: dict, expansion) -> bool:
        x_elem = types.get(node.input[0], (None, 0))[1] if node.name in candidates else 0
        y_elem = types.get(node.input[1], (None, 0))[1] if node.name in candidates else 0
        if x_elem not in _FLOATS or y_elem not in _FLOATS + _INTS:
            return False
        ex = expansion()
        make = ex.make

        def const(name: str, value) -> str:
            return ex.const(name, value, np.float32)

        def trunc(v: str, tag: str) -> str:  # toward zero, as f32 (|v| < 2^31)
            return make("Cast", [make("Cast", [v], f"{tag}_i", to=6)], f"{tag}_t", to=1)

        x, y = node.input
        xf = make("Cast", [x], "xf", to=1) if x_elem != 1 else x
        yf = make("Cast", [y], "yf", to=1) if y_elem != 1 else y
        zero, half, one = const("zero", 0.0), const("half", 0.5), const("one", 1.0)
        magnitude = make("Exp", [make("Mul", [yf, make("Log", [make("Abs", [xf], "absx")], "lnx")],
                                      "ylnx")], "mag")
        if y_elem in _FLOATS:
            yc = make("Clip", [yf, const("lo", -2.0**24), const("hi", 2.0**24)], "yc")
            integral = make("Equal", [trunc(yc, "yc"), yc], "integral")
            halves = make("Mul", [yc, half], "yh")
            odd = make("And", [integral, make("Not", [make("Equal", [trunc(halves, "yh"), halves],
                                                               "even")], "noteven")], "odd")
        else:
            ys = make("Clip", [yf, const("lo", -2.0**31), const("hi", _I32_SAFE)], "ys")
            near = make("Cast", [ys], "near", to=y_elem)           # exact: an integer of y's type
            rest = make("Cast", [make("Sub", [y, near], "rest")], "restf", to=1)  # |rest| <= 128
            parity = []
            for v, tag in ((ys, "a"), (rest, "b")):
                h = make("Mul", [v, half], f"{tag}h")
                parity.append(make("Not", [make("Equal", [trunc(h, f"{tag}h"), h], f"{tag}even")],
                                   f"{tag}odd"))
            odd = make("Xor", parity, "odd")
        negative = make("Less", [xf, zero], "neg")
        signed = make("Where", [make("And", [negative, odd], "negodd"), make("Neg", [magnitude], "negmag"),
                                magnitude], "signed")
        if y_elem in _FLOATS:
            bad = make("And", [negative, make("Not", [integral], "fraction")], "bad")
            signed = make("Where", [bad, const("nan", np.nan), signed], "real")
        where = [make("Equal", [yf, zero], "y0"), one, signed]
        if x_elem != 1:
            ex.final("Cast", [make("Where", where, "pow")], "cast", to=x_elem)
        else:
            ex.final("Where", where, "pow")
        return True

    return rewrite_nodes(model, types, expand)
