"""What one elementwise ascend op computes per vector instruction: the cce
instruction (or recipe of instructions) `npu-lower-elementwise` and the
fused kernels emit on UB views, whatever the tiling around it. The cost
models count these recipes; `npu.kernels.vector_compute` emits them.

Operations the vector unit lacks are composed. Unary recipes run in place
in the output (or a temporary) buffer:
  neg(x)     = vmuls(x, -1)                          exact
  sigmoid(x) = vrec(vadds(vexp(vmuls(x, -1)), 1))   exp(-x) overflows to inf
               for x < -88.7 (f32) giving 0 where the true value is < 3e-39
  tanh(x)    = 1 - 2 / (exp(2x) + 1)                saturates to +-1 exactly;
               near 0 the subtraction cancels: the error is a few f32 ulps
               of 1 (~3e-7) absolute, not relative to x.
  erf(x)     Abramowitz & Stegun 7.1.26 on |x| with the sign restored:
               t = 1 / (1 + p|x|),
               erf(|x|) = 1 - t(a1 + t(a2 + t(a3 + t(a4 + t a5)))) exp(-x^2),
               sign(x) = min(max(x * 1e30, -1), 1) (exact except for
               |x| < 1e-30, where erf(x) is below 1.2e-30 anyway).
               The formula's own error is <= 1.5e-7 absolute; in f32 with
               rounded steps 1 - t P e cancels near 0: on 2e6 uniform
               samples of [-6, 6] the largest error is 5.3e-7 absolute
               (5.8e-7 before the polynomial was evaluated monic in a
               scaled t, `_erf_recipe`; bench/vector_recipes.py)
               (test/python/vector/test_frontend_ops.py checks 4e-7 against
               math.erf on its sample). Absolute, not relative: erf(1e-6)
               comes out within that of 1.13e-6. inf/-inf give +-1, NaN
               stays NaN.
For f16 data the composed recipes run in f32 (vconv in, the recipe, one
vconv back with round-to-nearest), so the result is the f32 value rounded
once: within one f16 ulp (plus the absolute errors above), where f16
rounding after every step would be several ulps off. It costs f32
temporaries (the FlatLowering sizes its chunks by `Compute.temps`).

Casts without a direct vconv are chained through f16/f32/i32 (`CAST_CHAINS`),
with `round_mode` applied at the one step that rounds to an integer or
narrows a float, so every chain rounds once, as a direct conversion would:
  f32 -> i8   f32 -i32(mode)-> f32 -> f16 -> i8   (saturates at the i8 range)
  i32 -> i8   i32 -> f32 -> f16 -> i8             (saturates)
  i32 -> f16  i32 -> f32 -f16(mode)->             (exact below 2^24 >> 65504)
  i8 -> f32   i8 -> f16 -> f32                    (exact)
  i8 -> i32   i8 -> f16 -> i32                    (exact)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from mlir import ir

from npu import ir as nir
from npu.diagnostics import PassError
from npu.dialects.cce import vector_class
from npu.dialects.opspec import CAST_PAIRS
from npu.target import Target

BINARY = {"ascend.add": "cce.vadd", "ascend.sub": "cce.vsub", "ascend.mul": "cce.vmul",
          "ascend.div": "cce.vdiv", "ascend.max": "cce.vmax", "ascend.min": "cce.vmin"}
SCALAR = {"ascend.adds": "cce.vadds", "ascend.muls": "cce.vmuls",
          "ascend.maxs": "cce.vmaxs", "ascend.mins": "cce.vmins"}


@dataclass(frozen=True)
class Step:
    """One vector instruction of a recipe. `dst` and `srcs` name registers:
    "x" the input, "y" the output, "t0", "t1", ... temporaries; by default
    the step works in place on "y". "x" and "y" may be one buffer (in-place
    lowering, widened f16), so a recipe reads "x" only before writing "y".

    Multiply-adds read `dst` too: vmadd dst = srcs[0] * dst + src1, where
    src1 is the constant `scalar` (a broadcast block,
    `npu.kernels.vector_compute.Constants`) and
    srcs[0] a register or, as a float, a constant too (dst = c * dst + d:
    a scale and shift in one instruction); vmla dst = srcs[0] * srcs[1] + dst."""

    op: str
    scalar: float | None = None
    dst: str = "y"
    srcs: tuple[str | float, ...] = ("y",)


def _inplace(*steps: Step) -> tuple[Step, ...]:
    """A chain of in-place steps whose first one reads the input."""
    first, *rest = steps
    return (Step(first.op, first.scalar, "y", ("x",)),) + tuple(rest)


# Abramowitz & Stegun 7.1.26 (Handbook of Mathematical Functions, 1964).
ERF_P = 0.3275911
ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
ERF_SIGN_SCALE = 1e30


def _monic(q: Sequence[float]) -> tuple[float, tuple[float, ...]]:
    """For Q(v) = q[1] v + ... + q[n] v^n (q[0] == 0): m and (c0, .., c[n-2])
    with Q(v) = w (c0 + c1 w + ... + w^(n-1)), w = m v, m^n = q[n] (odd n:
    any sign). Evaluating in w drops the Horner chain's leading multiply;
    m folds into the constants that produce v."""
    n = len(q) - 1
    m = math.copysign(abs(q[n]) ** (1 / n), q[n])
    return m, tuple(float(q[k] / m ** k) for k in range(1, n))


def _monic_horner(q: str, w: str, coefs: Sequence[float]) -> list[Step]:
    """q = w (c[0] + w (c[1] + ... + w (c[-1] + w))): one vadds, one vmadd
    (q = w q + c) per further coefficient, then * w."""
    *outer, inner = coefs
    steps = [Step("cce.vadds", inner, q, (w,))]
    steps += [Step("cce.vmadd", c, q, (w,)) for c in reversed(outer)]
    return steps + [Step("cce.vmul", None, q, (q, w))]


def _erf_recipe() -> tuple[Step, ...]:
    """erf(x) = s (1 + Q(t) exp(-a^2)), a = |x|, s the sign of x, Q(t) =
    -t (a1 + ... + a5 t^4) evaluated monic in T = m t (`_monic`), t = 1 /
    (1 + p a) as T = 1 / ((1 + p a) / m) (one vmadd with constant factor
    and addend, one vrec), then y = s q + s (one vmla): 16 instructions, 22
    cycles per repeat (24 with the leading Horner multiply and p a + 1 as
    vmuls + vadds)."""
    m, coefs = _monic([0.0] + [-c for c in ERF_A])
    a, arg, q = "t0", "t1", "t2"
    steps = [Step("cce.vabs", None, a, ("x",)),
             Step("cce.vmuls", -1.0, arg, (a,)), Step("cce.vmul", None, arg, (arg, a)),
             Step("cce.vmadd", 1 / m, a, (ERF_P / m,)), Step("cce.vrec", None, a, (a,))]
    steps += _monic_horner(q, a, coefs)
    steps += [Step("cce.vexp", None, arg, (arg,)), Step("cce.vmul", None, q, (q, arg)),
              Step("cce.vmuls", ERF_SIGN_SCALE, "y", ("x",)), Step("cce.vmaxs", -1.0, "y", ("y",)),
              Step("cce.vmins", 1.0, "y", ("y",)), Step("cce.vmla", None, "y", (q, "y"))]
    return tuple(steps)


# GELU as one recipe (`gelu_compute`; `npu.costmodel.fusion.gelu` finds the chains the
# frontend emits). Erf form, x * 0.5 * (1 + erf(s x)), for s = 1/sqrt(2):
#   GELU(x) = relu(x) - a Phi(-a),  a = |x|,  Phi(-a) = exp(H(a))
# (no 1 + erf(x) cancelling for negative x; no division), H a degree-8
# polynomial fitted to ln Phi(-a) on [0, GELU_ERFC_CLAMP]
# (bench/gelu_log_phi_fit.py, weighted by what an error in H does to GELU).
# For another s, H(sqrt(2) s a): the coefficients scale by (sqrt(2) s)^k.
# a is clamped at GELU_ERFC_CLAMP (over sqrt(2) s), where a Phi(-a) is
# below 1e-22, so +-inf and huge inputs give +-inf / ~0 instead of inf * 0.
# On the simulator: max |error| 2.7e-7 against float64 and max |error| / |x|
# 1.8e-7 on [-10, 10], where A&S 7.1.26 as erfc (t = 1 / (1 + p s a) by
# vrec, t P(t) exp(-s^2 a^2) |x|: 23 cycles per repeat) gave 3.3e-7 / 2.9e-7
# (bench/vector_recipes.py).
GELU_ERFC_CLAMP = 10.0
GELU_TANH_CLAMP = 20.0
GELU_LOG_PHI = (-0.6931470718040081, -0.7978903918165823, -0.31825469806449247,
                -0.036531190656350486, 0.005116913144660776, -0.00027263137100094444,
                -5.262434262793344e-05, 1.0740430176246025e-05, -5.531861499054254e-07)


def gelu_erf_recipe(scale: float) -> tuple[Step, ...]:
    """13 instructions, 18 cycles per repeat with the multiply-adds (Horner
    of H in a: vmuls, vadds, seven vmadds); without constant blocks each
    vmadd is two instructions (25)."""
    z = math.sqrt(2) * scale
    return gelu_log_phi_steps([c * z ** k for k, c in enumerate(GELU_LOG_PHI)],
                               GELU_ERFC_CLAMP / z)


# The erf form in f16 (epilogues computed in f16, `npu-fuse` epilogue-f16):
# the same relu(x) - a exp(H(a)) with 128 lanes a repeat, H of degree 5 on
# [0, GELU_F16_CLAMP], fitted for f16 and its coefficients searched among
# neighbouring f16 values (bench/gelu_f16_fit.py). a is clamped where
# a Phi(-a) rounds to -0 in f16 (below half the smallest subnormal), so
# GELU(-inf) = -0 and exp never sees an argument below ln of the smallest
# f16. Every intermediate is an f16 normal or an exact 0 (|H| <= 20.7,
# exp(H) >= 1e-9 rounds to f16 subnormals only where the result is one).
# Measured on all 65,536 f16 inputs against float64 GELU of the same
# input (test/python/vector/test_gelu_f16.py), in ulps of the result: mean
# 0.24; at most 2.15 for x >= -1, 7.0 on [-3, -1) (|GELU| >= 4e-3,
# absolute 3.2e-4), 15.3 on [-4.5, -3) (|GELU| < 4e-3, absolute 1.5e-5),
# 2.9 below; there the rounding of the exp argument H (up to |H| ~ 10 in
# f16, half an ulp of H each step) dominates whatever the degree. The
# largest absolute error is the result's own rounding (1.03e-3 at x ~ 2).
GELU_F16_CLAMP = 5.8
GELU_LOG_PHI_F16 = (-0.693359375, -0.796875, -0.3212890625, -0.033660888671875,
                    0.0041046142578125, -0.00022935867309570312)


def gelu_erf_recipe_f16(scale: float) -> tuple[Step, ...]:
    """`gelu_erf_recipe` for f16 lanes with `GELU_LOG_PHI_F16`: 12
    instructions (vabs, vmins, vmuls, vadds, four vmadds, vexp, vmul,
    vrelu, vsub) on 128 lanes."""
    z = math.sqrt(2) * scale
    return gelu_log_phi_steps([c * z ** k for k, c in enumerate(GELU_LOG_PHI_F16)],
                               GELU_F16_CLAMP / z)


def gelu_log_phi_steps(h: Sequence[float], clamp: float) -> tuple[Step, ...]:
    """relu(x) - a exp(H(a)), a = min(|x|, clamp), H by Horner in a."""
    a, q = "t0", "t1"
    steps = [Step("cce.vabs", None, a, ("x",)), Step("cce.vmins", clamp, a, (a,)),
             Step("cce.vmuls", h[-1], q, (a,)), Step("cce.vadds", h[-2], q, (q,))]
    steps += [Step("cce.vmadd", c, q, (a,)) for c in reversed(h[:-2])]
    steps += [Step("cce.vexp", None, q, (q,)), Step("cce.vmul", None, a, (a, q)),
              Step("cce.vrelu", None, "y", ("x",)), Step("cce.vsub", None, "y", ("y", a))]
    return tuple(steps)


def gelu_tanh_recipe(cube: float, scale: float) -> tuple[Step, ...]:
    """Tanh form, x * 0.5 * (1 + tanh(scale (x + cube x^3))), as the exact
    identity x / (1 + exp(-2 scale (x + cube x^3))) of x clamped at
    -GELU_TANH_CLAMP (below it the value is under 1e-300; -inf gives -0, not
    inf/inf): 7 instructions, 13 cycles per repeat against 20 for the nine
    ops (and no 1 - 2/(e+1) cancelling near 0); -2 s (1 + c x^2) is one
    vmadd with constant factor and addend."""
    t, c = "t0", "t1"
    return (Step("cce.vmaxs", -GELU_TANH_CLAMP, c, ("x",)), Step("cce.vmul", None, t, (c, c)),
            Step("cce.vmadd", -2 * scale, t, (-2 * scale * cube,)),
            Step("cce.vmul", None, t, (t, c)), Step("cce.vexp", None, t, (t,)),
            Step("cce.vadds", 1.0, t, (t,)), Step("cce.vdiv", None, "y", (c, t)))


# The tanh form in f16 (epilogues computed in f16): x sigmoid(2u), u =
# s (x + c x^3) odd, as relu(x) - a e / (1 + e) with a = |x| and
# e = exp(-2 s a (1 + c a^2)) <= 1 (never overflows, unlike exp(-2u)); a is
# clamped at the least f16 value past which the recipe's own f16 a e / (1 + e)
# rounds to 0, so inf stays inf and -inf gives 0. Measured on all 65,536 f16
# inputs against float64 tanh-GELU (test/python/vector/test_gelu_f16.py), in
# ulps of the result: mean 0.258; at most 2.09 for x >= -1, 9.07 on
# [-3, -1), 14.83 on [-4.5, -3) (the rounding of the exp argument, up to
# ~11), 2.6 below; largest absolute error 1.01e-3 (x ~ 2.6, the result's
# own rounding). The f32 recipe rounded to f16 is within 0.5 ulp.
GELU_TANH_F16_CLAMP = 5.06640625


def gelu_tanh_recipe_f16(cube: float, scale: float) -> tuple[Step, ...]:
    """`gelu_tanh_recipe` for f16 lanes: 11 instructions on 128 lanes, no
    conversion (the f32 recipe on f16 data widens, runs 7 on 64 lanes, narrows)."""
    a, t, d = "t0", "t1", "t2"
    return (Step("cce.vabs", None, a, ("x",)), Step("cce.vmins", GELU_TANH_F16_CLAMP, a, (a,)),
            Step("cce.vmul", None, t, (a, a)),
            Step("cce.vmadd", -2 * scale, t, (-2 * scale * cube,)),
            Step("cce.vmul", None, t, (t, a)), Step("cce.vexp", None, t, (t,)),
            Step("cce.vadds", 1.0, d, (t,)), Step("cce.vdiv", None, t, (t, d)),
            Step("cce.vmul", None, t, (t, a)), Step("cce.vrelu", None, "y", ("x",)),
            Step("cce.vsub", None, "y", ("y", t)))


UNARY: dict[str, tuple[Step, ...]] = {
    "ascend.relu": _inplace(Step("cce.vrelu")),
    "ascend.abs": _inplace(Step("cce.vabs")),
    "ascend.neg": _inplace(Step("cce.vmuls", -1.0)),
    "ascend.exp": _inplace(Step("cce.vexp")),
    "ascend.ln": _inplace(Step("cce.vln")),
    "ascend.sqrt": _inplace(Step("cce.vsqrt")),
    "ascend.rsqrt": _inplace(Step("cce.vrsqrt")),
    "ascend.reciprocal": _inplace(Step("cce.vrec")),
    "ascend.sigmoid": _inplace(Step("cce.vmuls", -1.0), Step("cce.vexp"), Step("cce.vadds", 1.0),
                               Step("cce.vrec")),
    "ascend.tanh": _inplace(Step("cce.vmuls", 2.0), Step("cce.vexp"), Step("cce.vadds", 1.0),
                            Step("cce.vrec"), Step("cce.vmuls", -2.0), Step("cce.vadds", 1.0)),
    "ascend.erf": _erf_recipe(),
}

# Recipes of several rounded steps: computed in f32 for f16 data.
COMPOSED = ("ascend.tanh", "ascend.sigmoid", "ascend.erf")
# Temporaries (beyond input and output) a recipe needs, in its compute type.
RECIPE_TEMPS: Mapping[str, int] = {"ascend.erf": 3}

# (src, dst) -> the types after each vconv and the round mode of each step;
# "mode" is replaced by the op's round_mode.
CAST_CHAINS: Mapping[tuple[str, str], tuple[tuple[str, str], ...]] = {
    **{pair: ((pair[1], "mode"),) for pair in CAST_PAIRS},
    ("f32", "i8"): (("i32", "mode"), ("f32", "rint"), ("f16", "rint"), ("i8", "rint")),
    ("i32", "i8"): (("f32", "rint"), ("f16", "rint"), ("i8", "rint")),
    ("i32", "f16"): (("f32", "rint"), ("f16", "mode")),
    ("i8", "f32"): (("f16", "none"), ("f32", "none")),
    ("i8", "i32"): (("f16", "none"), ("i32", "rint")),
}

CMP, SELECT, BROADCAST = "ascend.cmp", "ascend.select", "ascend.broadcast"
CMP_TO_CCE = "cce.vcmp"
SELECT_TO_CCE = "cce.vsel"


@dataclass
class Compute:
    """What to emit per vector instruction (`npu.kernels.vector_compute.emit`).

    kind: "binary" | "scalar" | "unary" | "cast" | "cmp" | "select" | "copy" |
    "multiply_add" (vmadd on a dst that holds the multiplicand).
    `temps` are the element types of the temporary buffers the emission
    needs (one element per output element each), in the order it takes them."""

    kind: str
    vop: str = ""
    scalar: float = 0.0
    steps: tuple[Step, ...] = ()
    chain: tuple[tuple[str, str], ...] = ()
    predicate: str = ""
    temps: tuple[str, ...] = ()
    # Element type a composed recipe runs in ("f32" for f16 data), None: its own.
    widen: str | None = None

    @property
    def constants(self) -> tuple[float, ...]:
        """Values the recipe's vmadd steps add as constant vectors
        (`npu.kernels.vector_compute.constant_blocks`)."""
        values = [v for st in self.steps if st.op == "cce.vmadd"
                  for v in (*st.srcs, st.scalar) if isinstance(v, float)]
        return tuple(dict.fromkeys(values))


def unary_compute(name: str, elem: str) -> Compute:
    """The recipe of a unary op on `elem` data, with its temporaries."""
    widen = "f32" if name in COMPOSED and elem == "f16" else None
    compute_type = widen or elem
    temps = (compute_type,) * ((1 if widen else 0) + RECIPE_TEMPS.get(name, 0))
    return Compute("unary", steps=UNARY[name], temps=temps, widen=widen)


def gelu_compute(steps: tuple[Step, ...], elem: str, native: bool = False) -> Compute:
    """A GELU recipe (`gelu_erf_recipe`, `gelu_tanh_recipe`) on `elem` data:
    in f32 for f16 data, rounded once, like the composed unary recipes;
    `native`: the steps are an f16 recipe (`gelu_erf_recipe_f16`,
    `gelu_tanh_recipe_f16`), run as they are."""
    widen = "f32" if elem == "f16" and not native else None
    temps = max((int(r[1:]) + 1 for st in steps for r in (st.dst,) + st.srcs
                 if isinstance(r, str) and r.startswith("t")), default=0)
    return Compute("unary", steps=steps, temps=((widen or elem),) * ((1 if widen else 0) + temps),
                   widen=widen)


def cast_compute(src: str, dst: str, round_mode: str) -> Compute | None:
    """The vconv chain of `ascend.cast` from src to dst (None: unsupported)."""
    chain = CAST_CHAINS.get((src, dst))
    if chain is None:
        return None
    steps = tuple((t, round_mode if m == "mode" else m) for t, m in chain)
    return Compute("cast", chain=steps, temps=tuple(t for t, _ in steps[:-1]))


def repeat_cycles(k: Compute, target: Target) -> int:
    """The vector unit's cycles for one repeat of `k`'s lanes: each
    instruction of its recipe (a cast's conversions, a unary's steps and
    its widening) at its class's rate."""
    def rate(op: str) -> int:
        return target.vector_cycles(vector_class(op))

    if k.kind == "unary":
        return sum(rate(s.op) for s in k.steps) + (2 * rate("cce.vconv") if k.widen else 0)
    if k.kind == "cast":
        return len(k.chain) * target.vector_cycles("convert")
    return rate(k.vop)


def compute_of(op: ir.Operation, in_elems: Sequence[str], out_elem: str) -> Compute:
    """The `Compute` of the elementwise ascend `op` with inputs of element
    types `in_elems` (operand order) and result type `out_elem`; PassError
    at the op when it does not take those types."""
    name = op.name
    in_elem = in_elems[-1]  # the data operand (select: a/b, not cond)
    if name == "ascend.cast":
        compute = cast_compute(in_elem, out_elem, nir.str_attr(op, "round_mode"))
        if compute is None:
            pairs = ", ".join(f"{a}->{b}" for a, b in sorted(CAST_CHAINS))
            raise PassError(f"unsupported cast from {in_elem} to {out_elem} "
                            f"(supported: {pairs})", op)
        return compute
    if name == CMP:
        if in_elems[0] != in_elems[1] or out_elem != "i8":
            raise PassError(f"cmp compares two operands of one type into i8, got "
                            f"{in_elems[0]}, {in_elems[1]} -> {out_elem}", op)
        return Compute("cmp", predicate=nir.str_attr(op, "predicate"))
    if name == SELECT:
        if in_elems[0] != "i8" or not in_elems[1] == in_elems[2] == out_elem:
            raise PassError("select needs an i8 condition and a, b, out of one type, got "
                            f"{', '.join(in_elems)} -> {out_elem}", op)
        return Compute("select")
    if any(e != out_elem for e in in_elems):
        raise PassError(f"input element type {in_elem} differs from output {out_elem}", op)
    if name == BROADCAST:
        return Compute("copy")
    if name in BINARY:
        return Compute("binary", vop=BINARY[name])
    if name in SCALAR:
        return Compute("scalar", vop=SCALAR[name], scalar=nir.float_attr(op, "scalar"))
    if in_elem not in ("f16", "f32"):
        raise PassError(f"'{name}' needs f16 or f32 operands, got {in_elem}", op)
    if name == "ascend.clamp":
        lo, hi = nir.float_attr(op, "min"), nir.float_attr(op, "max")
        return Compute("unary", steps=(Step("cce.vmaxs", lo, "y", ("x",)),
                                       Step("cce.vmins", hi)))
    return unary_compute(name, in_elem)
