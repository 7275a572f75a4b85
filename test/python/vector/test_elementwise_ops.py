"""npu-lower-elementwise on the simulator vs numpy: every op and dtype, the
sizes around the repeat / block / chunk boundaries, and each op's edge
values (zero, negatives for sqrt and ln, overflow of exp in fp16); clamp,
an output aliasing an input, i32 arithmetic. Broadcast operands:
test_elementwise_broadcast; casts: test_elementwise_cast."""

from __future__ import annotations

import numpy as np
import pytest

from elementwise_reference import (BINARY, LOWER, SCALAR, SMALL_CHUNKS, UNARY, chunk_of,
                                   reference)
from vec_common import NP, assert_matches, compile_source, func, memref, run, simulate_strict

SIZES = [1, 15, 16, 17, 127, 128, 129]

EXACT = {"add", "sub", "mul", "max", "min", "relu", "abs", "neg", "adds", "muls", "maxs", "mins"}
# Single correctly rounded transcendental: within one ulp of numpy.
ONE_ULP = {"div", "exp", "ln", "sqrt", "rsqrt", "reciprocal"}


def tolerance(op: str, elem: str) -> tuple[float, float]:
    """(rtol, atol) against numpy computed in float64 and rounded once."""
    eps = float(np.finfo(NP[elem]).eps)
    if op in EXACT:
        return 0.0, 0.0
    # The simulator (like the hardware) is not correctly rounded for f32
    # transcendentals: it uses numpy's float32 routines, documented to within
    # 4 ulp (log: 3.83 ulp max). f16 results are computed in f32 and rounded
    # once: within one f16 ulp.
    ulps = 1 if elem == "f16" else 4
    if op in ONE_ULP:
        return ulps * eps, 0.0
    # tanh/sigmoid run in f32 (f16 data: converted, one rounding at the end).
    # f32: four rounded steps, each error damped by e/(1+e) <= 1 (sigmoid);
    # tanh = 1 - 2/(exp(2x)+1) has an absolute error of a few ulps of 1.
    eps32 = float(np.finfo(np.float32).eps)
    if elem == "f16":
        return eps, (0.0 if op == "sigmoid" else 4 * eps32)
    if op == "sigmoid":
        return 8 * eps32, 1e-30
    return 8 * eps32, 6 * eps32


def values(op: str, elem: str, n: int, rng: np.random.Generator) -> np.ndarray:
    """Random values in the op's interesting range, edge values first."""
    dt = NP[elem]
    if op == "exp":
        lo, hi = -12.0, 12.0
        edges = [0.0, 1.0, -1.0, 11.0, 12.0, -20.0] + ([100.0, -110.0] if elem == "f32" else [])
    elif op in ("ln", "sqrt", "rsqrt"):
        lo, hi = -1.0, 50.0
        edges = [0.0, -1.0, 1.0, 4.0, -0.5, 1e-3]
    elif op == "reciprocal":
        lo, hi = -8.0, 8.0
        edges = [0.0, 1.0, -2.0, 0.5]
    elif op in ("tanh", "sigmoid"):
        lo, hi = -20.0, 20.0
        edges = [0.0, 1e-3, -1e-3, 12.0, -12.0, 20.0]
    else:
        lo, hi = -4.0, 4.0
        edges = [0.0, -1.0, 1.0, 2.5]
    x = rng.uniform(lo, hi, size=n)
    k = min(n, len(edges))
    x[:k] = edges[:k]
    return x.astype(dt)


def case(op: str, elem: str, n: int, seed: int = 0, name: str = "f"):
    """(source, inputs) of one op on n elements with its edge values."""
    rng = np.random.default_rng(seed + n)
    t = memref([n], elem)
    if op in BINARY:
        a = values(op, elem, n, rng)
        b = values(op, elem, n, rng)[::-1].copy()
        if op == "div":
            b[: min(n, 3)] = [0.0, 2.0, -0.0][: min(n, 3)]  # x/0 -> inf, 0/0 -> nan
        return func(name, f"ascend.{op}", [t, t, t]), [a, b, np.zeros(n, NP[elem])]
    inputs = [values(op, elem, n, rng), np.zeros(n, NP[elem])]
    if op in SCALAR:
        return func(name, f"ascend.{op}", [t, t], f"scalar = {SCALAR[op][1]} : f64"), inputs
    return func(name, f"ascend.{op}", [t, t]), inputs


def verify(op: str, elem: str, n: int, inputs, result) -> None:
    expected = reference(op, elem, *inputs[:-1])
    rtol, atol = tolerance(op, elem)
    assert_matches(result.outputs[-1], expected, rtol, atol, f"{op} {elem} n={n}")
    for i, a in enumerate(inputs[:-1]):  # inputs untouched
        assert np.array_equal(result.outputs[i], a, equal_nan=True)


def check(op: str, elem: str, n: int, lowering: str = LOWER, seed: int = 0) -> None:
    src, inputs = case(op, elem, n, seed)
    verify(op, elem, n, inputs, run(src, lowering, inputs))


# Sizes under one 32-byte granule use the padded-argument convention.
TINY = [("f16", 1), ("f16", 15), ("f32", 1)]


@pytest.mark.parametrize("elem", ["f16", "f32"])
@pytest.mark.parametrize("op", list(BINARY) + list(SCALAR) + list(UNARY))
def test_op_sizes(op, elem):
    """Every size of SIZES that is at least one granule, compiled as one
    module (one function per size) and simulated per function."""
    sizes = [n for n in SIZES if n * NP[elem]().itemsize >= 32]
    cases = {n: case(op, elem, n, name=f"f{n}") for n in sizes}
    module, serialize = compile_source("".join(src for src, _ in cases.values()), LOWER)
    for n, (_, inputs) in cases.items():
        verify(op, elem, n, inputs, simulate_strict(module, inputs, serialize, entry=f"f{n}"))


@pytest.mark.parametrize("elem,n", TINY)
@pytest.mark.parametrize("op", list(BINARY) + list(SCALAR) + list(UNARY))
def test_op_tiny_sizes(op, elem, n):
    check(op, elem, n)


@pytest.mark.parametrize("elem", ["f16", "f32"])
@pytest.mark.parametrize("op", list(BINARY) + list(SCALAR) + list(UNARY))
def test_op_several_small_chunks(op, elem):
    check(op, elem, 1000, SMALL_CHUNKS)


@pytest.mark.parametrize("op,elem", [("add", "f16"), ("exp", "f32")])
def test_one_chunk_plus_one(op, elem):
    # add f16 in place: 2 buffers x 2 B; exp f32 in place: 1 buffer x 4 B.
    chunk = chunk_of(4, 128) if op == "add" else chunk_of(4, 64)
    check(op, elem, chunk + 1)


@pytest.mark.parametrize("op,elem", [("add", "f16")])
def test_several_full_chunks(op, elem):
    check(op, elem, 3 * chunk_of(4, 128) + 5)


@pytest.mark.slow
@pytest.mark.parametrize("elem", ["f16", "f32"])
@pytest.mark.parametrize("op", list(BINARY) + list(SCALAR) + list(UNARY))
def test_op_full_chunks_slow(op, elem):
    es = 2 if elem == "f16" else 4
    per_elem = 2 * es if op in BINARY else es
    chunk = chunk_of(per_elem, 256 // es)
    check(op, elem, chunk + 1)
    check(op, elem, 2 * chunk + 77, seed=1)


# --- clamp -------------------------------------------------------------------


@pytest.mark.parametrize("n", SIZES + [1000])
@pytest.mark.parametrize("elem", ["f16", "f32"])
def test_clamp(elem, n):
    rng = np.random.default_rng(n)
    x = rng.uniform(-4, 4, size=n).astype(NP[elem])
    t = memref([n], elem)
    src = func("f", "ascend.clamp", [t, t], "min = -1.5 : f64, max = 2.25 : f64")
    res = run(src, SMALL_CHUNKS, [x, np.zeros(n, NP[elem])])
    assert np.array_equal(res.outputs[1], np.clip(x, NP[elem](-1.5), NP[elem](2.25)))


# --- in place ----------------------------------------------------------------


@pytest.mark.parametrize("n", [129, 1000])
def test_in_place_with_overlapped_tail(n):
    """out aliases lhs: the overlapped tail must read the original inputs."""
    rng = np.random.default_rng(7)
    a = rng.uniform(-4, 4, n).astype(np.float16)
    b = rng.uniform(-4, 4, n).astype(np.float16)
    t = memref([n], "f16")
    src = (f"func.func @f(%a: {t}, %b: {t}) {{\n"
           f'  "ascend.add"(%a, %b, %a) : ({t}, {t}, {t}) -> ()\n  return\n}}\n')
    res = run(src, SMALL_CHUNKS, [a, b])
    assert np.array_equal(res.outputs[0], a + b)


# --- i32 ---------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 9, 64, 65, 1000])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "max", "min"])
def test_binary_i32(op, n):
    """i32 arithmetic wraps around (numpy int32 does too)."""
    rng = np.random.default_rng(n)
    a = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    t = memref([n], "i32")
    res = run(func("f", f"ascend.{op}", [t, t, t]), SMALL_CHUNKS, [a, b, np.zeros(n, np.int32)])
    with np.errstate(over="ignore"):
        assert np.array_equal(res.outputs[2], BINARY[op](a, b))
