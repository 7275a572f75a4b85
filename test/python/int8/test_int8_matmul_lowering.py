"""npu-lower-matmul on the int8 cube: i8 x i8 -> i32 through L1, L0A/L0B
(the 32 x 16 B fractals transposed on their way) and L0C, exact against
numpy, with cce and hivm agreeing."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import simulate_levels
from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.reference_int8 import defractalize_blocks, fractalize_blocks
from npu.target import Target, get_target

BACK_END = "npu-double-buffer,npu-plan-memory,npu-insert-sync"
BLOCKS = {"i8": ((16, 32), (32, 16), (16, 16)), "f16": ((16, 16), (16, 16), (16, 16))}


def _nz(rows: int, cols: int, block: tuple[int, int], lead: tuple) -> tuple:
    return lead + (-(-cols // block[1]), -(-rows // block[0])) + block


def _program(m: int, n: int, k: int, dtype: str, batch: int = 0) -> tuple[str, list[tuple]]:
    lead = (batch,) if batch else ()
    blocks = BLOCKS[dtype]
    shapes = [_nz(m, n, blocks[0], lead), _nz(n, k, blocks[1], lead), _nz(m, k, blocks[2], lead)]
    types = (dtype, dtype, "i32" if dtype == "i8" else "f32")
    mems = [f'memref<{"x".join(map(str, s))}x{t}, "gm">' for s, t in zip(shapes, types)]
    op = "ascend.batch_matmul" if batch else "ascend.matmul"
    text = (f"func.func @mm(%a: {mems[0]}, %b: {mems[1]}, %c: {mems[2]}) {{\n"
            f'  "{op}"(%a, %b, %c) : ({", ".join(mems)}) -> ()\n  return\n}}\n')
    return text, shapes


def _run_int8(a: np.ndarray, b: np.ndarray, pipeline: str, target: Target | None = None,
              force_hivm: bool = True):
    """Compile and simulate C = A x B (ND int8, optionally batched); returns
    (C as ND int32, the simulation result)."""
    target = target or get_target()
    *lead, m, n = a.shape
    k = b.shape[-1]
    text, shapes = _program(m, n, k, "i8", lead[0] if lead else 0)
    module = parse_module(text, make_context())
    run_pipeline(module, pipeline, target)
    inputs = [fractalize_blocks(a, shapes[0]), fractalize_blocks(b, shapes[1]),
              np.full(shapes[2], -7, np.int32)]  # C is overwritten, not accumulated into
    res = simulate_levels(module, inputs, target, force_hivm=force_hivm, strict=True)
    return defractalize_blocks(res.outputs[2])[..., :m, :k], res


def _exact(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.matmul(a.astype(np.int32), b.astype(np.int32))


@pytest.mark.parametrize("options", ["", "schedule=pipelined", "strategy=is", "strategy=ws",
                                     "first-step=peel", "l1-steps=2 n=64"])
@pytest.mark.parametrize("m, n, k", [(17, 33, 15), (64, 200, 48), (96, 256, 80)])
def test_int8_matmul_exact_for_every_schedule(options: str, m: int, n: int, k: int) -> None:
    rng = np.random.default_rng(m * n + k)
    a = rng.integers(-128, 128, (m, n), dtype=np.int8)
    b = rng.integers(-128, 128, (n, k), dtype=np.int8)
    got, res = _run_int8(a, b, f"npu-lower-matmul{{{options}}}," + BACK_END)
    np.testing.assert_array_equal(got, _exact(a, b))
    assert not res.hazards


def test_int8_extremes_accumulate_exactly_in_i32() -> None:
    """-128 x -128 summed over 1024 terms (2^24) and -128 x 127 sums: beyond
    f16 and f32's exact integers, exact in i32."""
    n = 1024
    a = np.full((32, n), -128, np.int8)
    a[16:] = 127
    b = np.full((n, 32), -128, np.int8)
    b[:, 16:] = 127
    got, _ = _run_int8(a, b, "npu-lower-matmul{schedule=pipelined}," + BACK_END)
    want = _exact(a, b)
    assert want[0, 0] == 1 << 24 and want[0, 31] == -128 * 127 * n
    np.testing.assert_array_equal(got, want)


def test_int8_batch_matmul_is_exact() -> None:
    rng = np.random.default_rng(3)
    a = rng.integers(-128, 128, (3, 40, 70), dtype=np.int8)
    b = rng.integers(-128, 128, (3, 70, 24), dtype=np.int8)
    for options in ("", "schedule=pipelined"):
        got, _ = _run_int8(a, b, f"npu-lower-matmul{{{options}}}," + BACK_END)
        np.testing.assert_array_equal(got, _exact(a, b))


@pytest.mark.parametrize("target_name, cores", [("ascend310", 2), ("ascend910", 4)])
def test_int8_matmul_through_npu_lower_on_several_cores(target_name: str, cores: int) -> None:
    """The default pipeline, split over cores (each core a slice of C)."""
    rng = np.random.default_rng(5)
    a = rng.integers(-128, 128, (128, 96), dtype=np.int8)
    b = rng.integers(-128, 128, (96, 160), dtype=np.int8)
    got, res = _run_int8(a, b, f"npu-lower{{cores={cores}}}", get_target(target_name))
    np.testing.assert_array_equal(got, _exact(a, b))
    assert len(res.report["cores"]) == cores


def _cycles(m: int, n: int, k: int, dtype: str) -> int:
    text, shapes = _program(m, n, k, dtype)
    module = parse_module(text, make_context())
    target = get_target()
    run_pipeline(module, "npu-lower{cores=1}", target)
    rng = np.random.default_rng(0)
    if dtype == "i8":
        vals = [rng.integers(-5, 5, s, dtype=np.int8) for s in shapes[:2]]
        c = np.zeros(shapes[2], np.int32)
    else:
        vals = [rng.uniform(-1, 1, s).astype(np.float16) for s in shapes[:2]]
        c = np.zeros(shapes[2], np.float32)
    return simulate_levels(module, vals + [c], target, strict=True).cycles


def test_int8_runs_as_the_f16_matmul_with_half_the_reduction_blocks() -> None:
    """An int8 fractal is 512 bytes like an f16 one and a 16x16x32 int8 block
    product takes the cycles of a 16x16x16 f16 one: the int8 matmul moves and
    multiplies exactly what the f16 matmul with half its reduction does, so
    the two compile to the same schedule and the same cycles, about half
    the f16 matmul's of the same shape."""
    int8 = _cycles(512, 1024, 512, "i8")
    assert int8 == _cycles(512, 512, 512, "f16")
    assert int8 < 0.6 * _cycles(512, 1024, 512, "f16")
