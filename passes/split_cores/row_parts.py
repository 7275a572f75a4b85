"""An intermediate Nz buffer in GM stored row part by row part.

Between two matmuls on a chip, npu-split-cores gives each core row part r
of C (`P` row blocks of `R`): the consumer reads views of the Nz buffer
`C x R x 16 x 16` that hold row blocks [r*P, (r+1)*P) of some column
blocks. In Nz each column block's `P` row blocks are contiguous, but the
next column block is `R` row blocks on, so the consumer's A (all the column
blocks of its rows: BERT's ffn_out at seq 128 reads 192 column blocks of 4
of 8 row blocks, 393 KB) leaves GM as one burst a column block, each
paying the mover's burst set-up (`gm_burst_cycles`).

When every view of such a buffer is `P` whole row blocks starting at a
multiple of `P` on every core that runs it (its offsets evaluated for each
core index, under the conditions of the `scf.if`s around it), nothing
reads or writes across row parts, so the buffer is stored as `R/P` row
parts one after another, each an Nz matrix of its own
(`(R/P * C) x P x 16 x 16`): row part r's column block c is block r*C + c.
A view is then `cn x P` blocks at stride P: a core's whole row part is
contiguous and copies in one burst (`lower_matmul.blocks.copy_nz`), and a
producer's tile of it stores in one. The values are the same; only where
they sit in GM changes, and only for a buffer the program allocates
(arguments keep the caller's layout). Not for a buffer a row group writes
a few rows of a block at a time (LayerNorm's Nz copy for the next matmul):
its Nz store wants whole column blocks (`costmodel.fusion.rows.nz_layout`).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from npu import ir as nir

SUBVIEW = "memref.subview"


def store_by_row_parts(func: ir.Operation) -> int:
    """Rewrite every GM Nz alloc of `func` whose views are all row parts of
    one height; returns how many were rewritten."""
    index, cores = nir.block_idx_arg(func), nir.block_dim(func)
    if index is None or cores <= 1:
        return 0
    blk = func.regions[0].blocks[0].arguments[index]
    allocs = [o.operation for o in func.regions[0].blocks[0].operations
              if o.operation.name == "memref.alloc"]
    done = 0
    for alloc in allocs:
        height = _part_height(alloc.result, blk, cores)
        if height is not None:
            _rewrite(alloc, height)
            done += 1
    return done


def _part_height(buf: ir.Value, blk: ir.Value, cores: int) -> int | None:
    """P when `buf` is a GM Nz buffer read and written only through subviews
    of P whole row blocks from a multiple of P on every core that runs them
    (P dividing the buffer's R, P < R), else None."""
    if nir.memory_space(buf) != "gm" or len(nir.memref_shape(buf)) != 4:
        return None
    strides, offset = nir.memref_type(buf).get_strides_and_offset()
    _, rows, b0, b1 = nir.memref_shape(buf)
    if offset != 0 or strides != [rows * b0 * b1, b0 * b1, b1, 1]:
        return None
    views = []
    for use in buf.uses:
        view = use.owner.operation
        if view.name != SUBVIEW or use.operand_number != 0:
            return None
        sizes = nir.int_array_attr(view, "static_sizes")
        offsets = nir.subview_offsets(view)
        if (nir.int_array_attr(view, "static_strides") != [1] * 4 or sizes[2:] != [b0, b1]
                or offsets[2:] != [0, 0]):
            return None  # (a few rows of a block: a row group's Nz store keeps Nz, `nz_layout`)
        if not _only_subviews(view):
            return None  # (another view of a view would keep the old strides in its type)
        views.append((view, sizes, offsets))
    heights = {sizes[1] for _, sizes, _ in views}
    if len(heights) != 1:
        return None
    height = heights.pop()
    if height >= rows or rows % height:
        return None
    for view, sizes, offsets in views:
        guards = _guards(view)
        for core in range(cores):
            if not all(nir.value_on_core(cond, blk, core) in (None, int(then))
                       for cond, then in guards):
                continue  # (an unknown condition counts as taken)
            row0 = nir.value_on_core(offsets[1], blk, core)
            if row0 is None or row0 % height:
                return None
    return height


def _only_subviews(view: ir.Operation) -> bool:
    """No view of `view`, at any depth, but subviews (`_replace_view` makes those again)."""
    for use in view.result.uses:
        inner = use.owner.operation
        if inner.name in nir.VIEW_OPS and (inner.name != SUBVIEW or not _only_subviews(inner)):
            return False
    return True


def _guards(view: ir.Operation) -> list[tuple[ir.Value, bool]]:
    """The `scf.if`s around `view`: (condition, whether it is in the then region)."""
    found, child, node = [], view, view.parent
    while node is not None and node.name != "func.func":
        if node.name == "scf.if":
            then = any(o.operation == child for b in node.regions[0].blocks
                       for o in b.operations)
            found.append((node.operands[0], then))
        child, node = node, node.parent
    return found


def _rewrite(alloc: ir.Operation, height: int) -> None:
    """The alloc as row parts one after another; each view re-made on it."""
    buf = alloc.result
    cols, rows, b0, b1 = nir.memref_shape(buf)
    element = nir.memref_type(buf).element_type
    with alloc.location, ir.InsertionPoint(alloc):
        parts = nir.alloc([rows // height * cols, height, b0, b1], element, "gm")
    for use in list(buf.uses):
        view = use.owner.operation
        col, row, inner, _ = nir.subview_offsets(view)
        sizes = nir.int_array_attr(view, "static_sizes")
        with view.location, ir.InsertionPoint(view):
            part, within = _split_row(row, height)
            first = _add(_mul(part, cols), col)
            new = nir.subview(parts, [first, within, inner, 0], sizes)
        _replace_view(view, new)
    alloc.erase()


def _replace_view(view: ir.Operation, new: ir.Value) -> None:
    """`view`'s uses on `new`, which has other strides: a subview of `view`
    (a core's part of a peeled matmul's A) is made again on `new`, its
    layout inferred anew; kept as it was, it addressed the rows with the
    whole buffer's strides (a [20, 512] x [512, 64] matmul on 32 cores read
    past its A)."""
    for use in list(view.result.uses):
        inner = use.owner.operation
        if inner.name == SUBVIEW and use.operand_number == 0:
            with inner.location, ir.InsertionPoint(inner):
                made = nir.subview(new, nir.subview_offsets(inner), nir.int_array_attr(inner, "static_sizes"),
                                   nir.int_array_attr(inner, "static_strides"))
            _replace_view(inner, made)
    view.result.replace_all_uses_with(new)
    view.erase()


def _split_row(row: int | ir.Value, height: int) -> tuple[int | ir.Value, int | ir.Value]:
    """(row // height, row % height): `x` and 0 for row = x * height."""
    if isinstance(row, int):
        return divmod(row, height)
    op = nir.defining_op(row)
    if op is not None and op.name == "arith.muli":
        for k in (0, 1):
            c = nir.constant_int(op.operands[k])
            if c is not None and c % height == 0:
                return _mul(op.operands[1 - k], c // height), 0
    h = nir.index_const(height)
    return arith.DivUIOp(row, h).result, arith.RemUIOp(row, h).result


def _mul(a: int | ir.Value, b: int) -> int | ir.Value:
    if isinstance(a, int):
        return a * b
    return a if b == 1 else arith.MulIOp(a, nir.index_const(b)).result


def _add(a: int | ir.Value, b: int | ir.Value) -> int | ir.Value:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if isinstance(b, int) and b == 0:
        return a
    if isinstance(a, int) and a == 0:
        return b
    lhs = nir.index_const(a) if isinstance(a, int) else a
    rhs = nir.index_const(b) if isinstance(b, int) else b
    return arith.AddIOp(lhs, rhs).result
