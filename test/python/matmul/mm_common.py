"""Shared helpers of the matmul / fractalize simulation tests: program text,
numpy Nz layout, and the pipeline the programs are compiled with.

Programs go through the real back end (memory planning, sync insertion,
optionally double buffering) and are simulated strictly, race detection
included, once those passes are registered; until then the lowering alone is
simulated with `serialize=True`. `BACKEND` says which one runs; tests that
cannot run without memory planning (all buffers of a big matmul at distinct
addresses overflow L0/UB) skip with that reason instead of passing silently.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from npu.passes import registry

FRAC = 16


def has_passes(*names: str) -> bool:
    known = registry()
    return all(n in known for n in names)


BACKEND = "pipeline" if has_passes("npu-plan-memory", "npu-insert-sync") else "serialized"


def pipeline(lowering: str, double_buffer: bool = False) -> tuple[str, bool]:
    """(pipeline text, serialize flag) for the given lowering passes."""
    if BACKEND == "pipeline":
        stages = [lowering]
        if double_buffer:
            stages.append("npu-double-buffer")
        stages += ["npu-plan-memory", "npu-insert-sync"]
        return ",".join(stages), False
    return lowering, True


def blocks(n: int) -> int:
    return -(-n // FRAC)


def memref(shape: Sequence[int], elem: str) -> str:
    return f'memref<{"x".join(map(str, shape))}x{elem}, "gm">'


def nz_memref(lead: list[int], R: int, C: int, elem: str) -> str:
    """GM type of an R x C matrix in Nz layout: [..., C1, R1, 16, 16]."""
    return memref(lead + [blocks(C), blocks(R), FRAC, FRAC], elem)


def nz(x: np.ndarray) -> np.ndarray:
    """numpy ND [..., R, C] -> Nz [..., C1, R1, 16, 16], zero padded."""
    *lead, R, C = x.shape
    R1, C1 = blocks(R), blocks(C)
    pad = np.zeros(tuple(lead) + (R1 * FRAC, C1 * FRAC), x.dtype)
    pad[..., :R, :C] = x
    pad = pad.reshape(tuple(lead) + (R1, FRAC, C1, FRAC))
    n = len(lead)
    return np.ascontiguousarray(np.moveaxis(pad, [n, n + 1, n + 2, n + 3], [n + 1, n + 2, n, n + 3]))


def un_nz(z: np.ndarray, R: int, C: int) -> np.ndarray:
    """Nz [..., C1, R1, 16, 16] -> ND [..., R, C]."""
    n = z.ndim - 4
    x = np.moveaxis(z, [n, n + 1, n + 2, n + 3], [n + 2, n, n + 1, n + 3])
    lead = z.shape[:n]
    return x.reshape(tuple(lead) + (z.shape[n + 1] * FRAC, z.shape[n] * FRAC))[..., :R, :C]


def nz_matmul_program(M: int, N: int, K: int, out: str = "f32", batch: int = 0) -> str:
    """C = A x B on Nz operands (A: M x N, B: N x K)."""
    lead = [batch] if batch else []
    ta = nz_memref(lead, M, N, "f16")
    tb = nz_memref(lead, N, K, "f16")
    tc = nz_memref(lead, M, K, out)
    op = "ascend.batch_matmul" if batch else "ascend.matmul"
    return (f"func.func @mm(%a: {ta}, %b: {tb}, %c: {tc}) {{\n"
            f'  "{op}"(%a, %b, %c) : ({ta}, {tb}, {tc}) -> ()\n'
            f"  return\n}}\n")


def nd_matmul_program(M: int, N: int, K: int, out: str = "f32", batch: int = 0) -> str:
    """ND in, ND out: fractalize A and B, matmul, defractalize C (Nz
    temporaries are extra GM arguments, destination-passing style)."""
    lead = [batch] if batch else []
    a, b, c = (memref(lead + [M, N], "f16"), memref(lead + [N, K], "f16"), memref(lead + [M, K], out))
    an = nz_memref(lead, M, N, "f16")
    bn = nz_memref(lead, N, K, "f16")
    cn = nz_memref(lead, M, K, out)
    op = "ascend.batch_matmul" if batch else "ascend.matmul"
    return (f"func.func @mm(%a: {a}, %b: {b}, %c: {c}, %an: {an}, %bn: {bn}, %cn: {cn}) {{\n"
            f'  "ascend.fractalize"(%a, %an) : ({a}, {an}) -> ()\n'
            f'  "ascend.fractalize"(%b, %bn) : ({b}, {bn}) -> ()\n'
            f'  "{op}"(%an, %bn, %cn) : ({an}, {bn}, {cn}) -> ()\n'
            f'  "ascend.defractalize"(%cn, %c) : ({cn}, {c}) -> ()\n'
            f"  return\n}}\n")


def simulate_program(text: str, lowering: str, inputs: Sequence[np.ndarray],
                     double_buffer: bool = False, target=None):
    """Compile `text` with `lowering` + the back end and simulate strictly."""
    from helpers import simulate_levels
    from npu.ir import make_context, parse_module
    from npu.pipeline import run_pipeline
    from npu.target import get_target

    target = target or get_target()
    ctx = make_context()
    module = parse_module(text, ctx)
    text_pipeline, serialize = pipeline(lowering, double_buffer)
    run_pipeline(module, text_pipeline, target)
    return simulate_levels(module, inputs, target, strict=True, serialize=serialize)


def matmul_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """fp16 inputs, fp32 accumulation (products of fp16 are exact in fp32)."""
    return np.matmul(a.astype(np.float32), b.astype(np.float32))
