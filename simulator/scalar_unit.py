"""What the scalar unit computes: index/integer arithmetic and memref views.

A memref value at run time is a `View`: its root allocation (`Region`), the
element offset from that allocation's first byte, the shape and the strides
in elements. Instructions only need the address, `region.base + offset *
element size`; the rest is kept so that subview / reinterpret_cast /
collapse_shape / expand_shape can derive new views.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

from npu.simulator.memory import Region


class View(NamedTuple):
    region: Region
    offset: int  # elements from the start of the region
    shape: tuple[int, ...]
    strides: tuple[int, ...]


def _div_trunc(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _rem_trunc(a: int, b: int) -> int:
    return a - b * _div_trunc(a, b)


def _ceildiv(a: int, b: int) -> int:
    return -((-a) // b)


# arith binary ops on Python ints (index and signless integers; values small
# enough in address arithmetic that wrap-around never matters).
INT_BINARY: dict[str, Callable[[int, int], int]] = {
    "arith.addi": lambda a, b: a + b,
    "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b,
    "arith.divsi": _div_trunc,
    "arith.divui": lambda a, b: a // b,
    "arith.remsi": _rem_trunc,
    "arith.remui": lambda a, b: a % b,
    "arith.floordivsi": lambda a, b: a // b,
    "arith.ceildivsi": _ceildiv,
    "arith.ceildivui": _ceildiv,
    "arith.maxsi": max,
    "arith.minsi": min,
    "arith.maxui": max,
    "arith.minui": min,
    "arith.andi": lambda a, b: a & b,
    "arith.ori": lambda a, b: a | b,
    "arith.xori": lambda a, b: a ^ b,
    "arith.shli": lambda a, b: a << b,
    "arith.shrsi": lambda a, b: a >> b,
    "arith.shrui": lambda a, b: a >> b,
    "arith.addf": lambda a, b: a + b,
    "arith.subf": lambda a, b: a - b,
    "arith.mulf": lambda a, b: a * b,
    "arith.divf": lambda a, b: a / b,
    "arith.maximumf": max,
    "arith.minimumf": min,
}

_U64 = (1 << 64) - 1  # unsigned predicates see a negative value as its 64-bit pattern

# arith.cmpi predicates by their enum value.
CMPI: dict[int, Callable[[int, int], bool]] = {
    0: lambda a, b: a == b, 1: lambda a, b: a != b,
    2: lambda a, b: a < b, 3: lambda a, b: a <= b, 4: lambda a, b: a > b, 5: lambda a, b: a >= b,
    6: lambda a, b: a & _U64 < b & _U64, 7: lambda a, b: a & _U64 <= b & _U64,
    8: lambda a, b: a & _U64 > b & _U64, 9: lambda a, b: a & _U64 >= b & _U64,
}

# Casts that do not change an integer's value in address arithmetic.
INT_IDENTITY = ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui",
                "arith.trunci", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui")


def subview(src: View, offsets: Sequence[int], shape: tuple[int, ...], steps: Sequence[int],
            result_strides: Sequence[int | None]) -> View:
    offset = src.offset
    for o, s in zip(offsets, src.strides):
        offset += o * s
    if all(s is not None for s in result_strides):
        strides = tuple(result_strides)  # type: ignore[arg-type]
    else:
        full = [s * st for s, st in zip(src.strides, steps)]
        strides = tuple(_drop_to_rank(full, len(shape)))
    return View(src.region, offset, shape, strides)


def _drop_to_rank(strides: list[int], rank: int) -> list[int]:
    # Rank-reducing subviews drop unit dimensions; keep the innermost ones.
    return strides[len(strides) - rank:] if rank < len(strides) else strides


def collapse(src: View, groups: Sequence[Sequence[int]], shape: tuple[int, ...]) -> View:
    strides = tuple(src.strides[g[-1]] if g else 1 for g in groups)
    return View(src.region, src.offset, shape, strides)


def expand(src: View, groups: Sequence[Sequence[int]], shape: tuple[int, ...]) -> View:
    strides = [0] * len(shape)
    for src_dim, group in enumerate(groups):
        stride = src.strides[src_dim] if src.strides else 1
        for d in reversed(group):
            strides[d] = stride
            stride *= shape[d]
    return View(src.region, src.offset, shape, tuple(strides))
