"""The int8 cube matmul: verifier shapes, numpy reference and the target's int8 rate."""

from __future__ import annotations

import numpy as np
import pytest

from npu.dialects.ascend import matmul_dims
from npu.ir import functions, make_context, parse_module
from npu.reference import evaluate
from npu.reference_int8 import defractalize_blocks, fractalize_blocks
from npu.target import ASCEND310, ASCEND910, ASCEND910B


def _nz(rows: int, cols: int, r0: int, c0: int, lead: tuple = ()) -> tuple:
    return tuple(lead) + (-(-cols // c0), -(-rows // r0), r0, c0)


def _memref(shape: tuple, dtype: str) -> str:
    return f"memref<{'x'.join(map(str, shape))}x{dtype}, \"gm\">"


def _run(m: int, n: int, k: int, a_nd: np.ndarray, b_nd: np.ndarray, lead: tuple = ()):
    """Reference-evaluate one (batch_)matmul of ND a [m, n] x b [n, k] in int8 Nz form."""
    shapes = (_nz(m, n, 16, 32, lead), _nz(n, k, 32, 16, lead), _nz(m, k, 16, 16, lead))
    types = [_memref(s, t) for s, t in zip(shapes, ("i8", "i8", "i32"))]
    op = "ascend.batch_matmul" if lead else "ascend.matmul"
    text = (f"func.func @k(%a: {types[0]}, %b: {types[1]}, %c: {types[2]}) {{\n"
            f'  "{op}"(%a, %b, %c) : ({", ".join(types)}) -> ()\n  return\n}}')
    module = parse_module(text, make_context())
    func = functions(module)[0]
    inputs = [fractalize_blocks(a_nd, shapes[0]), fractalize_blocks(b_nd, shapes[1]),
              np.zeros(shapes[2], np.int32)]
    out = evaluate(func, inputs)[2]
    matmul = next(o for o in func.regions[0].blocks[0].operations if o.name == op)
    return defractalize_blocks(out)[..., :m, :k], matmul_dims(matmul, ASCEND910)


@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (17, 33, 15), (40, 70, 19)])
def test_int8_matmul_is_exact_with_i32_accumulation(m: int, n: int, k: int) -> None:
    rng = np.random.default_rng(m * n * k)
    a = rng.integers(-128, 128, (m, n), dtype=np.int8)
    b = rng.integers(-128, 128, (n, k), dtype=np.int8)
    got, dims = _run(m, n, k, a, b)
    np.testing.assert_array_equal(got, a.astype(np.int64) @ b.astype(np.int64))
    # The reduction is padded to K0 = 32, the others to 16.
    assert (dims.m, dims.n, dims.k) == (-(-m // 16) * 16, -(-n // 32) * 32, -(-k // 16) * 16)


def test_int8_matmul_extremes_and_batch() -> None:
    a = np.full((2, 16, 96), -128, np.int8)
    b = np.full((2, 96, 16), -128, np.int8)
    b[1] = 127
    got, dims = _run(16, 96, 16, a, b, lead=(2,))
    np.testing.assert_array_equal(got[0], np.full((16, 16), 96 * 16384))
    np.testing.assert_array_equal(got[1], np.full((16, 16), -96 * 128 * 127))
    assert dims.batch == 2


@pytest.mark.parametrize("target", [ASCEND910, ASCEND910B, ASCEND310])
def test_int8_cube_runs_twice_the_fp16_macs(target) -> None:
    # A 16x16x32 int8 block has twice an fp16 block's MACs and takes its cycles.
    assert target.cube_cycles_int8(64) == target.cube_cycles(64)
    assert target.peak_tops_int8() == 2 * target.peak_tflops_fp16()
    assert "asc-devkit" in target.sources["cube_int8_rate"]


def test_ascend310_int8_peak_matches_the_published_16_tops() -> None:
    assert abs(ASCEND310.peak_tops_int8() / 16 - 1) < 0.05
