"""npu-lower-elementwise's cast on the simulator vs numpy: every pair of
element types and rounding mode it supports, at sizes around the granule
and chunk boundaries, with the edge values (ties, f16's range)."""

from __future__ import annotations

import numpy as np
import pytest

from elementwise_reference import LOWER, SMALL_CHUNKS, chunk_of
from vec_common import NP, compile_source, func, memref, run, simulate_strict

def _round(x: np.ndarray, mode: str) -> np.ndarray:
    return {"rint": np.rint, "none": np.rint, "floor": np.floor, "ceil": np.ceil,
            "trunc": np.trunc,
            "round": lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5)}[mode](x)


CASTS = [("f16", "f32", "none"), ("f32", "f16", "rint"), ("f32", "f16", "floor"),
         ("f32", "f16", "ceil"), ("f32", "f16", "trunc"), ("f16", "i32", "rint"),
         ("f32", "i32", "floor"), ("f32", "i32", "ceil"), ("f32", "i32", "trunc"),
         ("f32", "i32", "round"), ("i8", "f16", "none"), ("f16", "i8", "trunc")]


def cast_inputs(src: str, n: int, rng) -> np.ndarray:
    if src == "i8":
        x = rng.integers(-128, 128, n)
        x[: min(n, 3)] = [-128, 127, 0][: min(n, 3)]
        return x.astype(np.int8)
    x = rng.uniform(-100, 100, n) * (700 if src == "f32" else 1)  # f32: past f16's range too
    edges = [0.0, -0.0, 2.5, -2.5, 3.5, -0.5, 126.7, -127.4, 1e-8]
    if src == "f32":
        edges += [65519.0, -70000.0, 65520.0]  # around and past f16's largest value
    k = min(n, len(edges))
    x[:k] = edges[:k]
    return x.astype(NP[src])


def cast_expected(x: np.ndarray, dst: str, mode: str) -> np.ndarray:
    if dst in ("i32", "i8"):
        return _round(x.astype(np.float64), mode).astype(NP[dst])
    with np.errstate(over="ignore"):  # beyond f16's range: inf, then stepped back below
        y = x.astype(NP[dst])  # round to nearest even (f16<->f32; i8->f16 is exact)
        if dst != "f16" or mode not in ("floor", "ceil", "trunc"):
            return y
        # Directed rounding: step to the neighbouring f16 on the wrong side
        # (so floor of a huge value is 65504, not inf).
        xd, yd = x.astype(np.float64), y.astype(np.float64)
        down = np.nextafter(y, np.float16(-np.inf))
        up = np.nextafter(y, np.float16(np.inf))
    if mode == "floor":
        return np.where(yd > xd, down, y)
    if mode == "ceil":
        return np.where(yd < xd, up, y)
    # trunc: toward zero
    return np.where((xd >= 0) & (yd > xd), down, np.where((xd < 0) & (yd < xd), up, y))


CAST_SIZES = [1, 15, 17, 128, 1000]


def _tiny_cast(src: str, dst: str, n: int) -> bool:
    return n * min(np.dtype(NP[src]).itemsize, np.dtype(NP[dst]).itemsize) < 32


def cast_case(src: str, dst: str, mode: str, n: int, name: str = "f"):
    x = cast_inputs(src, n, np.random.default_rng(n))
    text = func(name, "ascend.cast", [memref([n], src), memref([n], dst)],
                f'round_mode = "{mode}"')
    return text, [x, np.zeros(n, NP[dst])]


def verify_cast(src: str, dst: str, mode: str, x: np.ndarray, out: np.ndarray) -> None:
    expected = cast_expected(x, dst, mode)
    assert out.dtype == expected.dtype
    assert np.array_equal(out, expected), (
        f"{src}->{dst} {mode} n={x.size}: first mismatch at "
        f"{np.flatnonzero(out != expected)[:5]}")


@pytest.mark.parametrize("src,dst,mode", CASTS, ids=lambda v: str(v))
def test_cast(src, dst, mode, sizes=CAST_SIZES):
    """All sizes of at least one granule, one module (a function per size)."""
    cases = {n: cast_case(src, dst, mode, n, f"f{n}") for n in sizes
             if not _tiny_cast(src, dst, n)}
    module, serialize = compile_source("".join(t for t, _ in cases.values()), SMALL_CHUNKS)
    for n, (_, inputs) in cases.items():
        res = simulate_strict(module, inputs, serialize, entry=f"f{n}")
        verify_cast(src, dst, mode, inputs[0], res.outputs[1])


@pytest.mark.parametrize("src,dst,mode,n", [c + (n,) for c in CASTS for n in CAST_SIZES
                                            if _tiny_cast(c[0], c[1], n)], ids=str)
def test_cast_tiny(src, dst, mode, n):
    text, inputs = cast_case(src, dst, mode, n)
    res = run(text, SMALL_CHUNKS, inputs)
    verify_cast(src, dst, mode, inputs[0], res.outputs[1])


@pytest.mark.slow
@pytest.mark.parametrize("src,dst,mode", CASTS, ids=lambda v: str(v))
def test_cast_more_sizes(src, dst, mode):
    test_cast(src, dst, mode, sizes=[16, 127, 129, 4097])


def test_cast_one_chunk_plus_one():
    # f16 -> f32: 2 + 4 bytes per element, 64 lanes.
    n = chunk_of(6, 64) + 1
    x = cast_inputs("f16", n, np.random.default_rng(3))
    text = func("f", "ascend.cast", [memref([n], "f16"), memref([n], "f32")], 'round_mode = "none"')
    res = run(text, LOWER, [x, np.zeros(n, np.float32)])
    assert np.array_equal(res.outputs[1], x.astype(np.float32))
