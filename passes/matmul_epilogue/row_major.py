"""The row-major side of a matmul epilogue (`npu.passes.matmul_epilogue`):
where a drained piece of C sits, the tensors the group's defractalizes
write (`RowMajor`, read from the region by `targets`) and the copies that
store a piece there (`store`), under scf.ifs on the piece's position where
a part's edge is not whole blocks."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, scf

from npu import ir as nir
from npu.costmodel.fusion import epilogue
from npu.costmodel.fusion import rows as fusion
from npu.dialects.hivm import config_field
from npu.kernels.cce_build import copy, lin
from npu.passes.base import PassError
from npu.target import Target


@dataclass
class Piece:
    """Where a drained piece of C sits: the batch prefix, first column
    block, first row block (index values) and its size in blocks."""

    prefix: list
    col: ir.Value
    row: ir.Value
    cols: int
    rows: int


@dataclass
class RowMajor:
    """One row-major tensor a defractalize writes: column blocks `first` ..
    `first + width` of the group's Nz tensor, `rows` x `cols` elements, one
    such matrix per batch element of a batched matmul (`flat`: its 1-D view)."""

    first: int
    width: int
    rows: int
    cols: int
    flat: ir.Value
    elem: str
    # A column slice of a wider row-major tensor (one core's, npu-split-cores):
    # the elements between row starts and the slice's first element in `flat`.
    stride: int = 0
    base: object = 0

    def __post_init__(self) -> None:
        self.stride = self.stride or self.cols


def targets(tensors: list[fusion.Operand], stores: list[tuple[int, ir.Operation]],
            matmul: ir.Operation, region: ir.Operation) -> dict:
    """Tensor key -> its `RowMajor` parts in column order, for the
    group's defractalizes `stores` of C and the members' results
    (`tensors`), checked as npu-fuse formed them (together they cover a
    tensor's column blocks), with the flat GM views made before `matmul`."""
    out: dict = {}
    for _, op in stores:
        src, dst = op.operands
        found = next(((t, r) for t in tensors
                      if (r := epilogue.column_blocks(src, t.value)) is not None), None)
        if found is None:
            raise PassError("a defractalize in an npu.epilogue group must read a run of "
                            "whole column blocks of C or of a member's result", op)
        t, (first, width) = found
        if len(nir.memref_shape(dst)) != len(nir.memref_shape(t.value)) - 2:
            raise PassError("a defractalize in an npu.epilogue group must write a "
                            "contiguous [batch,] rows x columns tensor", op)
        with op.location, ir.InsertionPoint(matmul):
            if nir.is_contiguous(dst):
                part = RowMajor(first, width, *nir.memref_shape(dst)[-2:],
                                nir.flatten_memref(dst), t.elem)
            else:
                part = _column_slice(op, dst, first, width, t.elem)
        out.setdefault(t.root, []).append(part)
    for key, parts in out.items():
        parts.sort(key=lambda p: p.first)
        blocks = nir.memref_shape(next(t.value for t in tensors if t.root == key))[-4]
        if [p.first for p in parts] != [0] + [p.first + p.width for p in parts[:-1]] \
                or parts[-1].first + parts[-1].width != blocks:
            raise PassError("the defractalizes of one tensor in an npu.epilogue group must "
                            "cover its column blocks, each once", region)
    return out


def _column_slice(op: ir.Operation, dst: ir.Value, first: int, width: int,
                  elem: str) -> RowMajor:
    """A `memref.subview` of whole rows' column run of a contiguous 2-D
    tensor: stored through the whole tensor's flat view, rows `stride` apart."""
    view = nir.defining_op(dst)
    if view is None or view.name != "memref.subview" or len(nir.memref_shape(dst)) != 2 \
            or not nir.is_contiguous(view.operands[0]) or nir.memref_layout(dst)[0][1] != 1:
        raise PassError("a defractalize in an npu.epilogue group must write a contiguous "
                        "[batch,] rows x columns tensor, or a column run of a 2-D one", op)
    src = view.operands[0]
    stride = nir.memref_shape(src)[1]
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    given = iter(list(view.operands)[1:])
    offsets = [next(given) if o == dynamic else o
               for o in ir.DenseI64ArrayAttr(view.attributes["static_offsets"])]
    base = lin((offsets[0], stride), (offsets[1], 1))
    return RowMajor(first, width, *nir.memref_shape(dst), nir.flatten_memref(src), elem,
                    stride, base)


def store(target: Target, region: ir.Operation, parts: list[RowMajor], ub: ir.Value,
          piece: Piece) -> None:
    """The piece (Nz in UB) to its row-major places: one copy per column
    block, a burst per row, into the part (sibling) the block's index
    falls in (a chain of scf.ifs when there are several). The piece
    holding the last row block of a height that is not whole blocks
    stores only the real rows, a part's last column block of a width
    that is not only the real columns (scf.ifs on the position)."""
    frac = target.fractal
    rows = parts[0].rows
    row_blocks = -(-rows // frac)
    last_rows = piece.rows * frac - (row_blocks * frac - rows)  # padding rows dropped
    flat = nir.flatten_memref(ub)

    def into(part: RowMajor, jj: int, j, n_rows: int) -> None:
        """Column block jj of the piece (j of the tensor) into `part`."""
        at = lin(*[(b, part.rows * part.cols) for b in piece.prefix],
                 (piece.row, frac * part.stride), (j, frac), (part.first, -frac), (part.base, 1))
        last_cols = part.cols - (part.width - 1) * frac
        if last_cols == frac or part.width == 1:  # one width for every block of the part
            _copy(target, region, part, flat, jj, at, piece, n_rows, last_cols)
            return
        _branches([(j, part.first + part.width - 1, "cols")], lambda which: (
            _copy(target, region, part, flat, jj, at, piece, n_rows,
                  last_cols if "cols" in which else frac)))

    def columns(which: set) -> None:
        n_rows = last_rows if "rows" in which else piece.rows * frac
        for jj in range(piece.cols):
            j = lin((piece.col, 1), (jj, 1))
            _choose(j, parts, lambda part, jj=jj, j=j: into(part, jj, j, n_rows))

    rows_case = [(piece.row, row_blocks - piece.rows, "rows")] \
        if last_rows != piece.rows * frac else []
    _branches(rows_case, columns)


def rows_fit(target: Target, parts: list[RowMajor], piece_cols: int, es: int) -> bool:
    """Whether a piece of `piece_cols` column blocks can lie row-major in UB
    (`store_rows`): one part (sibling) of whole column and row blocks, and
    a vector instruction's block and repeat strides (a row of the piece
    apart, `rows_per_repeat` rows a repeat) within their fields."""
    frac = target.fractal
    if len(parts) != 1 or piece_cols < 2:
        return False
    part = parts[0]
    if part.cols != part.width * frac or part.rows % frac:
        return False
    row = piece_cols * target.blocks(frac * es)  # blocks of one row of the piece
    gap = target.blocks((part.stride - piece_cols * frac) * es)
    return (target.vector_bytes // target.granule("ub") * row
            <= config_field("vector", "dst_rep_stride").max
            and gap <= config_field("copy", "dst_gap").max)


def store_rows(target: Target, part: RowMajor, ub: ir.Value, piece: Piece) -> None:
    """The piece, row-major in UB (each row of all its column blocks side
    by side, `rows_fit`), to its row-major place: one burst per row as wide
    as the piece, where `store` copies a burst per row of each column
    block (a GM transfer pays `gm_burst_cycles` a burst: BERT seq 128's V
    projection on 8 cores stores 128 rows x 96 columns a core in two
    pieces, 6 x 192 cycles of MTE3 one block at a time, 2 x 320 so)."""
    frac = target.fractal
    es = nir.element_bytes(part.elem)
    most = config_field("copy", "n_burst").max
    n_rows, width = piece.rows * frac, piece.cols * frac
    at = lin(*[(b, part.rows * part.cols) for b in piece.prefix],
             (piece.row, frac * part.stride), (piece.col, frac), (part.first, -frac),
             (part.base, 1))
    burst, gap = target.blocks(width * es), target.blocks((part.stride - width) * es)
    flat = nir.flatten_memref(ub)
    for r0 in range(0, n_rows, most):
        n = min(most, n_rows - r0)
        src = nir.subview(flat, [r0 * width], [n * width])
        dst = nir.subview(part.flat, [lin((at, 1), (r0 * part.stride, 1))],
                          [(n - 1) * part.stride + width])
        copy("cce.copy_ub_to_gm", src, dst, n, burst, 0, gap)


def _copy(target: Target, region: ir.Operation, part: RowMajor, flat: ir.Value, jj: int, at,
          piece: Piece, n_rows: int, width: int) -> None:
    """Column block `jj` of the piece: its first `n_rows` rows, `width`
    elements each, to GM from element `at` of the row-major part."""
    frac = target.fractal
    es = nir.element_bytes(part.elem)
    most = config_field("copy", "n_burst").max
    burst, gap = target.blocks(width * es), target.blocks((part.stride - width) * es)
    src_gap = target.blocks((frac - width) * es)
    if gap > config_field("copy", "dst_gap").max:
        raise PassError(f"a row-major store of rows {part.stride} elements apart needs a gap of "
                        f"{gap} blocks, more than a copy's gap field holds", region)
    for r0 in range(0, n_rows, most):
        n = min(most, n_rows - r0)
        src = nir.subview(flat, [(jj * piece.rows * frac + r0) * frac], [n * frac])
        dst = nir.subview(part.flat, [lin((at, 1), (r0 * part.stride, 1))],
                          [(n - 1) * part.stride + width])
        copy("cce.copy_ub_to_gm", src, dst, n, burst, src_gap, gap)


def _choose(index, parts: list[RowMajor], emit) -> None:
    """`emit(part)` for the part whose column blocks hold `index`: nested
    scf.ifs on `index < part.first + part.width` (static when it is)."""
    part, rest = parts[0], parts[1:]
    if not rest:
        emit(part)
        return
    end = part.first + part.width
    if isinstance(index, int):
        _choose(index, [part] if index < end else rest, emit)
        return
    before = arith.CmpIOp(arith.CmpIPredicate.ult, index, nir.index_const(end)).result
    branch = scf.IfOp(before, [], has_else=True)
    for block, choice in ((branch.then_block, [part]), (branch.else_block, rest)):
        with ir.InsertionPoint(block):
            _choose(index, choice, emit)
            scf.YieldOp([])


def _branches(conditions: list, emit, which: frozenset = frozenset()) -> None:
    """`emit(which)` under nested scf.ifs, one per (index, value, name)
    condition: `name` joins `which` where index == value."""
    if not conditions:
        emit(set(which))
        return
    (index, value, name), rest = conditions[0], conditions[1:]
    if isinstance(index, int):
        _branches(rest, emit, which | {name} if index == value else which)
        return
    equal = arith.CmpIOp(arith.CmpIPredicate.eq, index, nir.index_const(value)).result
    branch = scf.IfOp(equal, [], has_else=True)
    for block, taken in ((branch.then_block, which | {name}), (branch.else_block, which)):
        with ir.InsertionPoint(block):
            _branches(rest, emit, taken)
            scf.YieldOp([])
