"""A lone elementwise or unary op whose leading dims are each too short for
the cores: a grid of them, the outer ones a slice of one each, the last one
cut into runs.

`SplitRules.split` cuts one dim with every dim before it 1 (a contiguous
slice). A LLaMA's rotary and GQA ops are [1, H, S, D] with H the 8 query
heads or the 2 KV heads, times [1, 1, S, D] tables: cut along H they ran
on 8 or 2 cores. Here each core takes one head (one of each dim before) and
S / (cores / H) of its rows: [1, 1, S / r, D], still contiguous, the tables'
rows cut alike and their heads' dim (1) whole. LLaMA hidden 512, seq 128 on
32 cores: see docs/exports.md.
"""

from __future__ import annotations

from typing import Callable

from mlir import ir

from npu import ir as nir

from .channel_grid import channel_grid
from .split import Split

AXES = ("x", "y", "z", "w")


def leading_dims(out: list[int], parts: int) -> list[tuple[int, int]] | None:
    """(dim, parts) from the outermost dim over 1: every dim but the last
    cut into slices of one, the last into `parts` over their product; at
    least two dims (one is `SplitRules.split`'s own cut), at most `AXES`,
    and never the output's last dim (each core whole rows)."""
    grid: list[tuple[int, int]] = []
    whole = 1
    for d, n in enumerate(out):
        if n == 1:
            continue
        if len(grid) == len(AXES) or parts % whole:
            return None
        rest = parts // whole
        if n < rest and rest % n == 0:
            grid.append((d, n))
            whole *= n
            continue
        if n % rest or d == len(out) - 1:  # whole rows a core (a row's columns: the plain cut's)
            return None
        grid.append((d, rest))
        return grid if len(grid) > 1 else None
    return None


def leading_grid(types: list, parts: int,
                 aligned: Callable[[ir.Type, int, int], bool]) -> Split | None:
    """The grid of `parts` cores for an elementwise or unary op whose result
    is `types[-1]` (operands broadcast numpy's way: a dim of 1 is not cut);
    None when the dims give no such grid, an operand is strided, or a slice
    would not start on a 32-byte block (`aligned(type, dim, parts)`)."""
    out = nir.memref_shape(types[-1])
    dims = leading_dims(out, parts)
    if dims is None or not all(nir.is_contiguous(t) for t in types):
        return None
    names = {d: AXES[k] for k, (d, _) in enumerate(dims)}
    counts = dict(dims)
    cuts = []
    for t in types:
        shape = nir.memref_shape(t)
        lead = len(out) - len(shape)
        cut = {}
        for d, axis in names.items():
            dd = d - lead
            if dd < 0 or shape[dd] == 1:
                continue
            if shape[dd] != out[d] or not aligned(t, dd, counts[d]):
                return None
            cut[dd] = axis
        cuts.append(cut)
    return Split(tuple(cuts), tuple((names[d], n) for d, n in dims))


def vector_grid(types: list, parts: int,
                aligned: Callable[[ir.Type, int, int], bool]) -> Split | None:
    """An elementwise or unary op's grid when no one dim cuts: an NC1HWC0
    map's (`channel_grid`), else its leading dims' (`leading_grid`)."""
    return channel_grid(types, parts) or leading_grid(types, parts, aligned)
