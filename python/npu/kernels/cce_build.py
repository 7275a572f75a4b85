"""Small builders for the cce ops the vector lowerings emit (views, copies,
index arithmetic). Call inside `with ctx, loc, ir.InsertionPoint(...)`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from mlir import ir
from mlir.dialects import arith, scf

from npu import ir as nir
from npu.diagnostics import PassError
from npu.dialects.hivm import config_field


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


def copy_bursts(name: str, src: ir.Value, dst: ir.Value, n_burst: int, burst_len: int,
                src_gap: int = 0, dst_gap: int = 0) -> None:
    """A copy of `n_burst` bursts between views whose first non-unit
    dimension is the burst. When a gap does not fit its field (a tile of a
    matrix with more than ~4096 row blocks: the gap is the rest of the
    column), it becomes one copy per burst, each with no gap."""
    fits = all(gap <= config_field("copy", field).max
               for gap, field in ((src_gap, "src_gap"), (dst_gap, "dst_gap")))
    if fits or n_burst == 1:  # one burst: the gaps are unused
        copy(name, src, dst, n_burst, burst_len, src_gap if fits else 0, dst_gap if fits else 0)
        return
    for b in range(n_burst):
        copy(name, _burst(src, b, n_burst), _burst(dst, b, n_burst), 1, burst_len)


def _burst(view: ir.Value, index: int, n_burst: int) -> ir.Value:
    shape = nir.memref_shape(view)
    dim = next(i for i, d in enumerate(shape) if d != 1)
    assert shape[dim] == n_burst, (shape, n_burst)
    offsets = [0] * len(shape)
    offsets[dim] = index
    return nir.subview(view, offsets, shape[:dim] + [1] + shape[dim + 1:])


def index_add(a: ir.Value | int, b: int) -> ir.Value | int:
    if isinstance(a, int):
        return a + b
    if b == 0:
        return a
    return arith.AddIOp(a, nir.index_const(b)).result


def index_mul(a: ir.Value, b: int) -> ir.Value:
    return arith.MulIOp(a, nir.index_const(b)).result


Index = int | ir.Value


def core_part(op: ir.Operation, who: str = "") -> tuple[int, ir.Value] | None:
    """(parts, this core's part) of an op that npu-split-cores cut along an
    axis its lowering divides itself (`nir.CORE_PART_ATTR`: parts, inner
    and, for an op on a share of the cores, its first core), the part
    computed at `op` from the kernel's block index; None when it is not cut.
    Outside a multi-core kernel, an error located at `op` (from the lowering
    `who`)."""
    if nir.CORE_PART_ATTR not in op.attributes:
        return None
    parts, inner, *first = nir.int_array_attr(op, nir.CORE_PART_ATTR)
    if parts == 1:
        return None
    blk = nir.block_idx_value(op)
    if blk is None:
        raise PassError(f"{who + ': ' if who else ''}{nir.CORE_PART_ATTR} outside a multi-core "
                        "kernel (its function has no npu.block_idx argument)", op)
    with op.location, ir.InsertionPoint(op):
        if first and first[0]:
            blk = arith.SubIOp(blk, nir.index_const(first[0])).result
        part = blk if inner == 1 else arith.DivUIOp(blk, nir.index_const(inner)).result
        return parts, arith.RemUIOp(part, nir.index_const(parts)).result


def by_run(parts: int, part: ir.Value, first: Callable[[], None], last: Callable[[], None],
           inner: Callable[[], None] | None = None) -> None:
    """The code of the first, the last or an inner one of `parts` runs (an
    op whose rows npu-split-cores cut over the cores), picked at run time by
    this core's `part`: `scf.if` on part == 0, else on part == parts - 1."""
    def is_(k: int) -> ir.Value:
        return arith.CmpIOp(arith.CmpIPredicate.eq, part, nir.index_const(k)).result

    branch = scf.IfOp(is_(0), [], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        first()
        scf.YieldOp([])
    with ir.InsertionPoint(branch.else_block):
        if inner is not None and parts > 2:
            nested = scf.IfOp(is_(parts - 1), [], has_else=True)
            with ir.InsertionPoint(nested.then_block):
                last()
                scf.YieldOp([])
            with ir.InsertionPoint(nested.else_block):
                inner()
                scf.YieldOp([])
        else:
            last()
        scf.YieldOp([])


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
    """`body(start, length)` for each piece of a `npu.costmodel.vector.tiling.ChunkPlan`: the
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
