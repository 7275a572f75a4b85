"""A row group of R rows, R not whole fractals, as two groups: whole blocks, then the rest.

A fused row group splits over the cores by whole rows, every tensor alike
(`groups`): its Nz store (the next matmul's A operand, [C1, ceil(R/16),
16, 16]) by whole row blocks or runs of rows in each. ViT-base's 197 tokens
(and BERT at seq 100) give neither: 197 is prime, and the Nz store's last
block holds 5 rows, so each of the layer's layernorms ran on one core
(~29.7k cycles on 32 cores).

A matmul epilogue group whose row-major result has such rows splits by
C's columns only (`groups._c_cut`), every core reading all of A; peeled
the same way (the matmul's B read whole by both copies), its whole blocks
take a grid of rows too (ViT-base's patch embedding and out_proj: 8 x 4
instead of 24 x 1, 300 -> 75 KB of A a core; the export on 32 cores
89,742 -> 77,584 cycles). Not a horizontal group's (its weights are laid
out for its split) nor the partial sums of a split reduction.

`peel` rewrites such a group as two copies before it: the first over the
rows of the whole blocks (192), which split like any row group, the second
over the rest (5), on one core, writing the last block. Each copy reads
and writes static subviews of the group's tensors (row-major along their
row dim, Nz along its block dim); the group's own tensors shrink to its
rows. The rows are the same, computed once each, by the same members: the
bits are the group's.
"""

from __future__ import annotations

import math
from typing import Callable

from mlir import ir

from npu import ir as nir
from npu.costmodel.fusion.epilogue import EPILOGUE_ATTR, PARTIAL_SUMS_ATTR
from npu.costmodel.fusion.rows import FUSED_ATTR

from . import qkv
from .groups import members, rewire, set_figure


NZ = "nz"
WHOLE = "whole"
PEEL_EPILOGUES = True
# the views a group's own tensors may have here (a subview's sizes are attributes)
RESHAPES = ("memref.expand_shape", "memref.collapse_shape")


def _row_dim(v: ir.Value, rows: int, frac: int) -> tuple[int, str] | str | None:
    """(the dim of `v` along its rows, "nz" for an Nz tensor's row blocks
    or "rows"), WHOLE for a row operand every row reads, None when it has
    none of the group's rows."""
    shape = nir.memref_shape(v.type)
    if len(shape) == 4 and shape[1] == -(-rows // frac) and shape[2] == shape[3] == frac:
        return 1, NZ
    if shape and shape[0] == rows:
        return 0, "rows"
    if len(shape) >= 2 and math.prod(shape[:-1]) == rows:
        d = next(i for i, n in enumerate(shape) if n > 1)
        # the rows along one dim ([1, 197, 768]); flattened from several, no static run
        return (d, "rows") if d < len(shape) - 1 and shape[d] == rows else None
    if math.prod(shape[:-1]) == 1:
        return WHOLE
    return None


def _dims(group: ir.Operation, rows: int, frac: int) -> dict | None:
    """Each memref value of the group's members and its row dim, or None
    when some value is neither rows nor a row operand (or a byte view); a
    matmul's B (an epilogue group's weights) is read whole."""
    dims: dict = {}
    for op in members(group):
        if op.name == "ascend.matmul":
            dims[op.operands[1]] = WHOLE
            values = [op.operands[0], op.operands[2]]
        elif op.name.startswith("ascend."):
            values = list(op.operands)
        elif op.name == "memref.alloc" or op.name in RESHAPES:
            values = [op.results[0]]
        elif op.name in nir.VIEW_OPS:
            return None  # a byte view or a subview of its own tensors: not rewritten here
        else:
            continue
        for v in values:
            d = _row_dim(v, rows, frac)
            if d is None:
                return None
            dims[v] = d
    return dims


def _shrunk(t: ir.Type, dim, lo: int, n: int, frac: int) -> tuple[list[int], list[int]] | None:
    """(offsets, sizes) of rows lo .. lo + n of a tensor of type `t` whose
    rows are along `dim` (`_row_dim`); None for a row operand."""
    if dim == WHOLE:
        return None
    shape = nir.memref_shape(t)
    d, kind = dim
    offsets, sizes = [0] * len(shape), list(shape)
    if kind == NZ:
        offsets[d], sizes[d] = lo // frac, -(-n // frac)
    else:
        offsets[d], sizes[d] = lo, n
    return offsets, sizes


def _copy(group: ir.Operation, dims: dict, rows: int, lo: int, n: int, frac: int
          ) -> tuple[ir.Operation, list[ir.Operation]]:
    """A copy of `group` before it over rows lo .. lo + n, and the subviews
    made for it."""
    with group.location, ir.InsertionPoint(group):
        copy = group.clone()
    originals = {}
    for old, new in zip(_values(group), _values(copy)):
        originals[new] = old
    inside = {r for op in members(copy) for r in op.results}
    replaced: dict[ir.Value, ir.Value] = {}
    views: list[ir.Operation] = []
    for new, old in originals.items():
        if new in inside or new in replaced:
            continue
        cut = _shrunk(new.type, dims[old], lo, n, frac)
        if cut is not None:
            with copy.location, ir.InsertionPoint(copy):
                replaced[new] = nir.subview(new, *cut)
            views.append(nir.defining_op(replaced[new]))
    for op in members(copy):
        if op.name != "memref.alloc" and op.name not in RESHAPES:
            continue
        res = op.results[0]
        cut = _shrunk(res.type, dims[originals[res]], lo, n, frac)
        if cut is None:
            continue
        m = ir.MemRefType(res.type)
        with ir.InsertionPoint(op), op.location:
            new_t = ir.MemRefType.get(cut[1], m.element_type, None, m.memory_space)
            attrs = {a: op.attributes[a] for a in op.attributes}
            if op.name == "memref.expand_shape":
                attrs["static_output_shape"] = ir.DenseI64ArrayAttr.get(cut[1])
            made = ir.Operation.create(op.name, results=[new_t],
                                       operands=[replaced.get(o, o) for o in op.operands],
                                       attributes=attrs)
        replaced[res] = made.results[0]
    rewire(copy, replaced)
    if FUSED_ATTR in copy.attributes:
        set_figure(copy, FUSED_ATTR, "rows", n)
    return copy, views


def _values(group: ir.Operation) -> list[ir.Value]:
    """The group's memref values in member order (operands of its ascend
    ops, results of its allocs and views): a copy lists its own alike."""
    out = []
    for op in members(group):
        if op.name.startswith("ascend."):
            out.extend(op.operands)
        elif op.name == "memref.alloc" or op.name in RESHAPES:
            out.append(op.results[0])
    return out


def peel(group: ir.Operation, frac: int, splits: Callable[[ir.Operation], bool]) -> bool:
    """Rewrite `group` (a fused row group no even split takes) as its whole
    row blocks and the rest, when its tensors allow and the whole blocks
    split (`splits`); whether it did."""
    rows = _rows(group)
    if rows is None:
        return False
    whole = rows // frac * frac
    if whole == 0 or whole == rows:
        return False
    dims = _dims(group, rows, frac)
    if dims is None:
        return False
    main, views = _copy(group, dims, rows, 0, whole, frac)
    if not splits(main):  # too small to split even so: the group stays one kernel
        main.erase()
        for view in views:
            view.erase()
        return False
    _copy(group, dims, rows, whole, rows - whole, frac)
    group.erase()
    return True


def _writes(group: ir.Operation) -> set:
    return {nir.view_root(op.operands[-1]) for op in members(group)
            if op.name.startswith("ascend.")}


def _rows(group: ir.Operation) -> int | None:
    """A row group's rows, or a matmul epilogue's: the rows of its one
    row-major result (its defractalize's), None without one."""
    if FUSED_ATTR in group.attributes:
        return ir.IntegerAttr(ir.DictAttr(group.attributes[FUSED_ATTR])["rows"]).value
    found = [op for op in members(group) if op.name == "ascend.defractalize"]
    matmuls = [op for op in members(group) if op.name == "ascend.matmul"]
    if len(found) != 1 or len(matmuls) != 1:
        return None
    shape = nir.memref_shape(found[0].operands[-1].type)
    if len(shape) < 2 or math.prod(shape[:-2]) != 1:
        return None
    return shape[-2]


def peel_rows(func: ir.Operation, wanted: int, splits: Callable[[ir.Operation, int], object],
              frac: int) -> int:
    """Peel every top-level fused row group of `func` that no split over 2 ..
    `wanted` cores takes; how many."""
    def any_split(g: ir.Operation) -> bool:
        return any(splits(g, n) is not None for n in range(wanted, 1, -1))

    # the partial sums a split reduction's row group adds (`split_k_rows`):
    # their matmuls' runs already cut A by columns
    summed = {nir.view_root(v) for child in func.regions[0].blocks[0].operations
              if PARTIAL_SUMS_ATTR in child.operation.attributes
              for op in members(child.operation) for v in op.operands if nir.is_memref(v.type)}
    done = 0
    for child in list(func.regions[0].blocks[0].operations):
        op = child.operation
        if op.name != "scf.execute_region":
            continue
        rows_group = FUSED_ATTR in op.attributes and not any_split(op)
        # a matmul epilogue of partial row blocks splits by C's columns only
        # (`groups._c_cut`): its whole blocks may take a grid of rows too
        epilogue = (PEEL_EPILOGUES and EPILOGUE_ATTR in op.attributes
                    and (_rows(op) or frac) % frac != 0 and not _writes(op) & summed
                    # (a horizontal group's weights are laid out per split, once)
                    and not any(qkv.siblings(m) for m in members(op)))
        if (rows_group or epilogue) and peel(op, frac, any_split):
            done += 1
    return done
