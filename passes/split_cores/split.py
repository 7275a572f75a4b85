"""The split of one op over cores (`Split`: a grid of named axes and each
operand's cuts along them), and the rewrite that gives a core its slices."""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith

from npu import ir as nir

# top-level ops that are no unit of work: views, index arithmetic, the return
INERT = ("memref.", "arith.", "func.return", "builtin.unrealized_conversion_cast")
ROWS = "r"  # the grid axis of a conv's output rows (see conv.py)
BATCH = "b"  # of a conv's images
COLUMNS = "c"  # of a transpose's source columns
RUN = "run"  # of the one run a slice moves
ROW_BLOCKS = "rb"  # of a matrix's 16-row blocks (fractalize, defractalize)
# of the source's second swapped dim of a [.., k, j, l] -> [.., j, k, l]
# transpose (the result's rows); its lowering's other run is of k (ROWS), so
# `Split.mark` names it (`nir.CORE_AXIS_ATTR`)
SOURCE_J = nir.SOURCE_J_AXIS
# of a last-two swap's source rows (the result's columns, `rules._split_columns`)
SOURCE_ROWS = nir.SOURCE_ROWS_AXIS
# of the rows a transpose keeping its last dim moves (a channel shuffle's
# planes in NCHW), copied row by row
KEPT_ROWS = nir.KEPT_ROWS_AXIS
NAMED_AXES = frozenset({SOURCE_J, SOURCE_ROWS, KEPT_ROWS})
# A dim cut by several grid axes at once is named by them joined with JOINT,
# outermost first ("x.y": coordinate x * parts(y) + y): a fused row group's
# rows cut finer than its Nz store's row blocks (`groups._row_cut`).
JOINT = "."


def axis_parts(parts: dict[str, int], axis: str) -> int:
    """Parts of a grid axis, or of a joint of axes."""
    return math.prod(parts[a] for a in axis.split(JOINT))


def axis_coord(coords: dict, parts: dict[str, int], axis: str):
    """The coordinate along `axis` (a joint of axes: combined, outermost
    first), from ints or, at run time, from index values."""
    names = axis.split(JOINT)
    out = coords[names[0]]
    for a in names[1:]:
        if isinstance(out, int):
            out = out * parts[a] + coords[a]
        else:
            out = arith.AddIOp(arith.MulIOp(out, nir.index_const(parts[a])).result,
                               coords[a]).result
    return out


def split_of(found: "Split | tuple | None") -> "Split | None":
    """The split of a unit's choice (an op's split, or a group's (split, cuts))."""
    return found[0] if isinstance(found, tuple) else found


@dataclass(frozen=True)
class Split:
    """How one op is cut: per operand, dim -> grid axis name; `grid` orders
    the cut dims (outermost first) as (name, parts) so that a block index
    maps to one coordinate per name."""

    cuts: tuple[dict[int, str], ...]  # operand -> {dim: grid axis name}
    grid: tuple[tuple[str, int], ...]
    cost: float = 0.0
    # Axes the op's lowering divides itself (a conv's output rows): they
    # describe what each core touches, but no operand is sliced along them.
    unsliced: frozenset[str] = frozenset()
    # MTE2's idle cycles at its end (a matmul's, attention's: `prefetched`),
    # in which npu-prefetch loads the next matmul's first weights.
    tail: float = 0.0
    # a matmul's weight slots (host constants): one's bytes, how many, and
    # the cycles its cost saves per byte of them loaded before its barrier
    slot: int = 0
    slots: int = 0
    per_byte: float = 0.0
    # the `grids` entry (`rules.parse_grids` key) this split took, if forced
    forced: object = None

    @property
    def parts(self) -> int:
        return math.prod(n for _, n in self.grid)

    def coords(self, core: int) -> dict[str, int]:
        """Each grid axis's coordinate on `core` (the last axis varies fastest)."""
        out, inner = {}, 1
        for axis, n in reversed(self.grid):
            out[axis] = core // inner % n
            inner *= n
        return out

    def block_coords(self, blk: ir.Value) -> dict[str, ir.Value]:
        """`coords` computed from the block index at run time."""
        coords: dict[str, ir.Value] = {}
        inner, total = 1, self.parts
        for axis, n in reversed(self.grid):
            v = blk if inner == 1 else arith.DivUIOp(blk, nir.index_const(inner)).result
            if inner * n < total:
                v = arith.RemUIOp(v, nir.index_const(n)).result
            coords[axis] = v
            inner *= n
        return coords

    def sliced(self, cut: dict[int, str]) -> dict[int, str]:
        """The part of `cut` that becomes a subview."""
        return {d: a for d, a in cut.items() if a not in self.unsliced}

    def mark(self, op: ir.Operation, first: int = 0) -> None:
        """Tell an op cut along an unsliced axis which part a core does
        (`nir.CORE_PART_ATTR`); `first`: the first core of the op's share
        (`share`), when not core 0."""
        for k, (axis, n) in enumerate(self.grid):
            if axis in self.unsliced:
                inner = math.prod(m for _, m in self.grid[k + 1:])
                op.attributes[nir.CORE_PART_ATTR] = ir.DenseI64ArrayAttr.get(
                    [n, inner] + ([first] if first else []))
                if axis in NAMED_AXES:
                    op.attributes[nir.CORE_AXIS_ATTR] = ir.StringAttr.get(axis)

    def boxes(self, shape: list[int], cut: dict[int, str]
              ) -> dict[int, tuple[tuple[int, int], ...]]:
        """Per core, (offset, size) per dim of the slice of a value of
        `shape` cut by `cut` that it touches (each dim's size found once:
        npu-split-cores asks for every core of every operand)."""
        parts = dict(self.grid)
        dims = [(n // axis_parts(parts, cut[d]), cut[d]) if d in cut else (n, None)
                for d, n in enumerate(shape)]
        out = {}
        for core in range(self.parts):
            coords = self.coords(core)
            out[core] = tuple((axis_coord(coords, parts, axis) * size, size) if axis is not None
                              else (0, size) for size, axis in dims)
        return out




def apply(op: ir.Operation, split: Split, blk: ir.Value, first: int = 0) -> None:
    """Give `op` the slices of its operands that core `blk` owns (`blk`
    counted from the op's first core, `first`)."""
    coords = split.block_coords(blk)
    parts = dict(split.grid)
    for i, cut in enumerate(split.cuts):
        if split.sliced(cut):
            op.operands[i] = slice_value(op.operands[i], split.sliced(cut), parts, coords)
    split.mark(op, first)


def slice_value(value: ir.Value, cut: dict[int, str], parts: dict[str, int],
                coords: dict[str, ir.Value]) -> ir.Value:
    """The subview of `value` that the core at `coords` owns."""
    shape = nir.memref_shape(value.type)
    offsets: list = [0] * len(shape)
    sizes = list(shape)
    for d, axis in cut.items():
        sizes[d] = shape[d] // axis_parts(parts, axis)
        offsets[d] = arith.MulIOp(axis_coord(coords, parts, axis),
                                  nir.index_const(sizes[d])).result
    return nir.subview(value, offsets, sizes)
