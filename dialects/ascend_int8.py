"""int8 forms of the `ascend` cube ops: element types and fractal block shapes.

The int8 cube multiplies i8 x i8 and accumulates in i32 (../shared/CONV.md,
int8). Its fractals hold 32 bytes along the reduction, so K0 = 32 for int8
against 16 for f16: A's blocks are 16 x 32 (M0 x K0), B's 32 x 16 (K0 x N0)
and C's i32 blocks stay 16 x 16. Kept apart from ascend.py so the f16 rules
read as before; ascend.py asks this module which blocks a matmul uses.
"""

from __future__ import annotations

from typing import Sequence

from npu.target import Target

INT8_MATMUL_SIGNATURE = ("i8", "i8", "i32")


def is_int8_matmul(element_types: Sequence[str]) -> bool:
    """True for the (a, b, c) types of an int8 cube matmul."""
    return tuple(element_types) == INT8_MATMUL_SIGNATURE


def matmul_blocks(element_types: Sequence[str], target: Target) -> tuple[tuple[int, int], ...]:
    """Fractal block shapes of (a, b, c): (f, f) each for f16, (f, K0), (K0, f),
    (f, f) for int8 (thesis naming: a is M x N, the reduction N is a's columns)."""
    f = target.fractal
    if is_int8_matmul(element_types):
        k0 = target.fractal_k_int8
        return (f, k0), (k0, f), (f, f)
    return (f, f), (f, f), (f, f)


def reduction_block(element_types: Sequence[str], target: Target) -> int:
    """Elements of the reduction per fractal block: K0 (32 int8, 16 f16)."""
    return matmul_blocks(element_types, target)[0][1]
