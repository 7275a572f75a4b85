"""vmadd / vmla / vaxpy on the simulator: dst is read as well as written,
one rounding (simulator/vector_unit.py), the cost class of the target."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from npu.dialects.cce import vector_class
from npu.simulator import simulate
from npu.simulator.vector_numerics import fma_round
from npu.target import get_target

from sim_kernels import Kernel, gm, mem

T = get_target()
RNG = np.random.default_rng(2026)
BLOCK = T.vector_block_bytes


def exact_round(a, b, c, dtype) -> np.ndarray:
    """a*b + c computed in rationals and rounded once to `dtype` (nearest-even)."""
    out = []
    for x, y, z in zip(a.tolist(), b.tolist(), c.tolist()):
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        r = dtype(float(exact))  # within one ulp of the answer: pick the nearest neighbour
        cands = [np.nextafter(r, dtype(-np.inf)), r, np.nextafter(r, dtype(np.inf))]
        best = min(cands, key=lambda v: (abs(Fraction(float(v)) - exact),
                                          int(v.view(np.uint32 if dtype == np.float32 else np.uint16)) & 1))
        out.append(best)
    return np.array(out, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_fma_round_is_one_rounding(dtype):
    n = 600
    a = RNG.uniform(-4, 4, n).astype(dtype)
    b = RNG.uniform(-4, 4, n).astype(dtype)
    # c near -a*b: cancellation, where one rounding and two differ most.
    c = (-(a.astype(np.float64) * b) * RNG.uniform(0.999, 1.001, n)).astype(dtype)
    got = fma_round(a, b, c)
    np.testing.assert_array_equal(got, exact_round(a, b, c, dtype))
    two = (a * b + c).astype(dtype)  # numpy: product rounded, then the sum
    assert np.any(got != two), "the sample never separates one rounding from two"


def test_fma_round_f32_avoids_double_rounding():
    # (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 is an f32 midpoint; + 2^-60 lies just
    # above it. float64 alone rounds the sum to the midpoint (then to even,
    # down); the exact result rounds up.
    a = np.array([1 + 2.0 ** -12], np.float32)
    c = np.array([2.0 ** -60], np.float32)
    assert np.float32(a.astype(np.float64) ** 2 + c.astype(np.float64)) == np.float32(1 + 2.0 ** -11)
    assert fma_round(a, a, c)[0] == np.float32(1 + 2.0 ** -11 + 2.0 ** -23)
    assert fma_round(a, a, -c)[0] == np.float32(1 + 2.0 ** -11)


def fma_kernel(op: str, dtype: str, n: int, **extra) -> Kernel:
    """Load d, x, y; op on (d, x[, y]); store d."""
    k = Kernel([("d", gm([n], dtype)), ("x", gm([n], dtype)), ("y", gm([n], dtype))])
    es = 4 if dtype == "f32" else 2
    for name in ("ud", "ux", "uy"):
        k.alloc(name, mem([n], dtype, "ub"))
    blocks = n * es // BLOCK
    for g, u in (("d", "ud"), ("x", "ux"), ("y", "uy")):
        k.copy("gm_to_ub", g, u, 1, blocks)
    k.sync("MTE2", "V")
    operands = ("ud", "ux") if op == "vaxpy" else ("ud", "ux", "uy")
    k.vector(op, *operands, repeat=n // T.lanes(es), mask=T.lanes(es), **extra)
    k.sync("V", "MTE3")
    k.copy("ub_to_gm", "ud", "d", 1, blocks)
    return k


@pytest.mark.parametrize("dtype,np_t", [("f32", np.float32), ("f16", np.float16)])
@pytest.mark.parametrize("op", ["vmadd", "vmla", "vaxpy"])
def test_multiply_add_instructions(op, dtype, np_t):
    n = 2 * T.lanes(np.dtype(np_t).itemsize)
    d, x, y = (RNG.uniform(-3, 3, n).astype(np_t) for _ in range(3))
    extra = {"scalar": 0.75} if op == "vaxpy" else {}
    res = simulate(fma_kernel(op, dtype, n, **extra).parse(), [d, x, y])
    want = {"vmadd": lambda: exact_round(x, d, y, np_t),
            "vmla": lambda: exact_round(x, y, d, np_t),
            "vaxpy": lambda: exact_round(np.full(n, 0.75, np_t), x, d, np_t)}[op]()
    np.testing.assert_array_equal(res.outputs[0], want)
    np.testing.assert_array_equal(res.outputs[1], x)
    assert res.hazards == []


def test_multiply_add_cost_from_target():
    n = 4 * T.lanes(4)
    d, x, y = (RNG.uniform(-1, 1, n).astype(np.float32) for _ in range(3))
    res = simulate(fma_kernel("vmadd", "f32", n).parse(), [d, x, y])
    tl = res.timeline
    (i,) = [i for i, (instr, _, _) in enumerate(res.trace_entries) if instr.name == "cce.vmadd"]
    assert vector_class("cce.vmadd") == "multiply_add"
    assert tl.end[i] - tl.start[i] == 4 * T.vector_cycles("multiply_add") + T.vector_latency


def test_multiply_add_reads_dst_uninitialised_is_an_error():
    n = T.lanes(4)
    k = Kernel([("x", gm([n], "f32")), ("y", gm([n], "f32")), ("o", gm([n], "f32"))])
    for name in ("ud", "ux", "uy"):
        k.alloc(name, mem([n], "f32", "ub"))
    k.copy("gm_to_ub", "x", "ux", 1, n * 4 // BLOCK)
    k.copy("gm_to_ub", "y", "uy", 1, n * 4 // BLOCK)
    k.sync("MTE2", "V")
    k.vector("vmla", "ud", "ux", "uy", repeat=1, mask=n)  # ud never written
    k.sync("V", "MTE3")
    k.copy("ub_to_gm", "ud", "o", 1, n * 4 // BLOCK)
    from npu.simulator import SimulationError
    with pytest.raises(SimulationError, match="uninitiali"):
        simulate(k.parse(), [np.ones(n, np.float32)] * 3)
