"""The runs of a slice or insert_slice: the affine map between its box and
the big tensor cut into runs of contiguous elements on both sides (what
npu-lower-slices moves, and what npu-split-cores cuts over the cores)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from npu import ir as nir
from npu.dialects.ascend import SLICE


@dataclass
class RunMap:
    """Element (i_0, .., i_k-1, j) of the lead dims and the run, j < length,
    is src[src_base + sum i_d * src_coef[d] + j] and dst[dst_base + sum
    i_d * dst_coef[d] + j] (flat indices)."""
    lead: list[int]
    src_coef: list[int]
    dst_coef: list[int]
    src_base: int
    dst_base: int
    length: int


def _row_major_strides(shape) -> list[int]:
    return [int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape))]


def run_map(box: list[int], big: list[int], offsets: list[int], strides: list[int],
            box_is_src: bool) -> RunMap:
    """The runs of `box[i] <-> big[offsets + i * strides]` (box contiguous)."""
    big_st, box_st = _row_major_strides(big), _row_major_strides(box)
    rank = len(box)
    k = rank
    if rank and strides[-1] == 1:
        k = rank - 1
        while k > 0 and box[k] == big[k] and offsets[k] == 0 and strides[k - 1] == 1:
            k -= 1
    length = int(np.prod(box[k:], dtype=np.int64))
    big_coef = [s * big_st[d] for d, s in enumerate(strides[:k])]
    base = sum(o * st for o, st in zip(offsets, big_st))
    lead = list(box[:k])
    if box_is_src:
        return RunMap(lead, box_st[:k], big_coef, 0, base, length)
    return RunMap(lead, big_coef, box_st[:k], base, 0, length)


def op_runs(op: ir.Operation) -> RunMap:
    """The runs of an `ascend.slice` (box = its output) or `ascend.insert_slice`
    (box = its input)."""
    in_shape, out_shape = (nir.memref_shape(v) for v in op.operands)
    offsets = nir.int_array_attr(op, "offsets")
    if op.name == SLICE:
        return run_map(out_shape, in_shape, offsets, nir.int_array_attr(op, "strides"),
                       box_is_src=False)
    return run_map(in_shape, out_shape, offsets, [1] * len(offsets), box_is_src=True)
