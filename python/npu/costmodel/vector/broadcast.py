"""How each input of an elementwise op broadcasts (numpy rules) to its
output: the per-slice classification (full, scalar, row, column) that the
elementwise lowering and the fusion models share, and the merging of dims
into loop dims and one 2-D slice."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from mlir import ir

from npu.diagnostics import PassError


def classify(op: ir.Operation, in_shape: Sequence[int], out_shape: Sequence[int]) -> str:
    rank = len(out_shape)
    if len(in_shape) > rank:
        raise PassError(f"operand shape {list(in_shape)} has more dimensions than the output "
                        f"{list(out_shape)}", op)
    padded = [1] * (rank - len(in_shape)) + list(in_shape)
    if any(d not in (1, o) for d, o in zip(padded, out_shape)):
        raise PassError(f"operand shape {list(in_shape)} does not broadcast to the output "
                        f"shape {list(out_shape)}", op)
    if padded == list(out_shape):
        return "full"
    if int(np.prod(padded)) == 1:
        return "scalar"
    if all(d == 1 for d in padded[:-1]) and padded[-1] == out_shape[-1]:
        return "row"
    if padded[-1] == 1 and padded[:-1] == list(out_shape[:-1]):
        return "column"
    raise PassError(f"unsupported broadcast of {list(in_shape)} to {list(out_shape)}: "
                    "only same-shape, scalar, row-vector (last axis) and column-vector "
                    "(all but the last axis) operands are lowered", op)


@dataclass(frozen=True)
class OuterDims:
    """Leading merged dims looped over: their sizes, and per operand the
    element stride of each (0 where the operand broadcasts)."""

    outer: list[int]
    in_strides: list[list[int]]
    out_strides: list[int]


def collapse_broadcast(in_shapes: Sequence[Sequence[int]], out_shape: Sequence[int],
                       inner_runs: int = 2) -> tuple[OuterDims, list[list[int]], list[int]]:
    """Merge the output's dims into runs every input follows or broadcasts
    alike; returns the leading runs (all but the last `inner_runs`) as loop
    dims and the per-input / output shapes of one slice (the last runs)."""
    rank = len(out_shape)
    padded = [[1] * (rank - len(s)) + list(s) for s in in_shapes]
    groups: list[list] = []  # [size, signature]
    for d, size in enumerate(out_shape):
        if size == 1:
            continue
        sig = tuple(p[d] == size for p in padded)
        if groups and groups[-1][1] == sig:
            groups[-1][0] *= size
        else:
            groups.append([size, sig])
    if not groups:
        groups = [[1, tuple(True for _ in in_shapes)]]
    inner, lead = groups[-inner_runs:], groups[:-inner_runs]
    slice_out = [g[0] for g in inner]
    slice_in = [[g[0] if g[1][k] else 1 for g in inner] for k in range(len(in_shapes))]
    outer = [g[0] for g in lead]
    in_strides, out_strides = [], []
    for k in range(len(in_shapes)):
        stride = int(np.prod(slice_in[k]))
        strides = []
        for size, sig in reversed(lead):
            strides.append(stride if sig[k] else 0)
            stride *= size if sig[k] else 1
        in_strides.append(list(reversed(strides)))
    stride = int(np.prod(slice_out))
    for size, _ in reversed(lead):
        out_strides.append(stride)
        stride *= size
    return OuterDims(outer, in_strides, list(reversed(out_strides))), slice_in, slice_out
