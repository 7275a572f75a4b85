"""Small builders for the cce ops the vector lowerings emit (views, copies,
index arithmetic). Call inside `with ctx, loc, ir.InsertionPoint(...)`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from mlir import ir
from mlir.dialects import arith

from npu import ir as nir


@dataclass(frozen=True)
class View:
    """A UB operand of a vector instruction with its strides in blocks."""

    value: ir.Value
    blk: int
    rep: int


def sub(buf: ir.Value, offset: int | ir.Value, length: int) -> ir.Value:
    """`length` elements of a 1-D memref from `offset` (the buffer itself if whole).

    A GM tensor smaller than the access (a tensor under one granule, see
    "GM arguments occupy whole 32-byte granules" in dialects/README.md) is
    passed whole: the access runs into its last granule's padding."""
    size = nir.memref_shape(buf)[0]
    if isinstance(offset, int) and offset == 0 and size <= length:
        return buf
    return nir.subview(buf, [offset], [length])


def copy(name: str, src: ir.Value, dst: ir.Value, n_burst: int, burst_len: int,
         src_gap: int = 0, dst_gap: int = 0) -> None:
    nir.create_op(name, [src, dst], n_burst=n_burst, burst_len=burst_len, src_gap=src_gap,
                  dst_gap=dst_gap)


def index_add(a: ir.Value | int, b: int) -> ir.Value | int:
    if isinstance(a, int):
        return a + b
    if b == 0:
        return a
    return arith.AddIOp(a, nir.index_const(b)).result


def index_mul(a: ir.Value, b: int) -> ir.Value:
    return arith.MulIOp(a, nir.index_const(b)).result


Index = int | ir.Value


def lin(*terms: tuple[Index, int]) -> Index:
    """sum(value * coefficient) as a Python int when every value is static,
    else as index arithmetic (static parts folded into one constant)."""
    const = 0
    dynamic: ir.Value | None = None
    for value, coef in terms:
        if isinstance(value, int):
            const += value * coef
            continue
        if coef == 0:
            continue
        term = value if coef == 1 else arith.MulIOp(value, nir.index_const(coef)).result
        dynamic = term if dynamic is None else arith.AddIOp(dynamic, term).result
    if dynamic is None:
        return const
    return index_add(dynamic, const)


def delinearize(i, sizes: Sequence[int]) -> list:
    """The multi-index (row-major over `sizes`) of the linear index `i`."""
    if isinstance(i, int):
        return [int(v) for v in np.unravel_index(i, sizes)] if sizes else []
    index = []
    for k, size in enumerate(sizes):
        inner = int(np.prod(sizes[k + 1:]))
        q = i if inner == 1 else arith.DivUIOp(i, nir.index_const(inner)).result
        index.append(q if k == 0 else arith.RemUIOp(q, nir.index_const(size)).result)
    return index


def for_range(count: int, body) -> None:
    """`body(i)` for i in [0, count): inline for one iteration, else an scf.for."""
    if count == 1:
        body(0)
        return
    loop = nir.for_loop(0, count)
    with ir.InsertionPoint(loop.body):
        body(loop.induction_variable)
        nir.yield_()


def for_pieces(plan, body) -> None:
    """`body(start, length)` for each piece of a `vector_tiling.ChunkPlan`: the
    full chunks (a loop when more than one), then the tail piece."""
    if plan.full_chunks == 1:
        body(0, plan.chunk)
    elif plan.full_chunks:
        loop = nir.for_loop(0, plan.full_chunks)
        with ir.InsertionPoint(loop.body):
            body(lin((loop.induction_variable, plan.chunk)), plan.chunk)
            nir.yield_()
    if plan.tail is not None:
        body(plan.tail.start, plan.tail.length)
