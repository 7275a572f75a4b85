"""Maps too wide for one output row of a tile in UB: column slices.

The output columns are cut into slices of `wc` (the last one moved back to
end at Wo: its columns overlap the previous slice's, written twice with the
same values). Each slice's input columns (clipped to the map) are copied to
a GM temporary (`ascend.slice`), pooled there with the pads of that slice
(real pads only at the map's borders, so averages count the same points)
into a second temporary, and written into the output's columns
(`ascend.insert_slice`). The slice copies are lowered at once by
npu-lower-slices' own code, the pools by npu-lower-pool's tiles; the
temporaries get their workspace from npu-lower's second npu-plan-gm.
"""

from __future__ import annotations

from dataclasses import replace

from mlir import ir

from npu import ir as nir
from npu.dialects.ascend_pool import POOL2D, Pool2d
from npu.passes.lower_pool.plan import PoolGeometry


def column_slices(geo: PoolGeometry, fits) -> int | None:
    """The most output columns a slice can take (`fits(geometry)`: a tile
    of that narrowed pool fits UB), at least a block's worth (the slice
    copies then move rows of a block or more), or None."""
    best = None
    for wc in range(1, geo.wo + 1):
        sub = narrowed(geo, 0, wc)[0]
        if wc < geo.block or sub.w < geo.block:  # the copies move rows of whole blocks
            continue
        if not fits(sub):
            break
        best = wc
    return best


def narrowed(geo: PoolGeometry, c0: int, wc: int) -> tuple[PoolGeometry, int]:
    """The pool of output columns [c0, c0 + wc) on its own input columns;
    and the first of those input columns."""
    p = geo.pool
    lo = c0 * p.strides[1] - p.pads[1]
    hi = (c0 + wc - 1) * p.strides[1] + p.span(1) - p.pads[1]
    first, last = max(lo, 0), min(hi, geo.w)
    pads = (p.pads[0], first - lo, p.pads[2], hi - last)
    return replace(geo, pool=replace(p, pads=pads), w=last - first, wo=wc), first


def emit_columns(lower_pool, slices, op: ir.Operation, geo: PoolGeometry, wc: int) -> None:
    """The slices of `op` (module docstring), each lowered at once."""
    src, dst = op.operands
    n, c, h, _ = nir.memref_shape(src)
    elem = nir.memref_element(src)
    starts = list(range(0, geo.wo, wc))
    starts[-1] = geo.wo - wc
    for c0 in starts:
        sub, first = narrowed(geo, c0, wc)
        tin = nir.core_scratch([n, c, h, sub.w], elem)
        _lowered(slices, "ascend.slice", [src, tin], offsets=[0, 0, 0, first], strides=[1, 1, 1, 1])
        tout = nir.core_scratch([n, c, sub.ho, wc], elem)
        pool = nir.create_op(POOL2D, [tin, tout], **_attrs(sub.pool))
        with ir.InsertionPoint(pool):
            lower_pool.lower(pool)
        pool.erase()
        _lowered(slices, "ascend.insert_slice", [tout, dst], offsets=[0, 0, 0, c0])


def _lowered(slices, name: str, operands, **arrays) -> None:
    op = nir.create_op(name, operands, **{k: ir.DenseI64ArrayAttr.get(v) for k, v in arrays.items()})
    with ir.InsertionPoint(op):
        slices.lower(op)
    op.erase()


def _attrs(p: Pool2d) -> dict:
    arr = ir.DenseI64ArrayAttr.get
    return {"kind": ir.StringAttr.get(p.kind), "kernel": arr(list(p.kernel)),
            "strides": arr(list(p.strides)), "dilations": arr(list(p.dilations)),
            "pads": arr(list(p.pads)), "count_include_pad": p.count_include_pad}
