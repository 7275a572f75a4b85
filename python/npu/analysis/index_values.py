"""The affine form of index SSA values (`IndexAnalysis`): constants, the
induction variables of constant-bound `scf.for`s, and addi/subi/muli by a
constant of those; and the bounds of such an expression over its loops'
ranges. The part of the access analysis that `npu.analysis.offset_intervals`
and the overlap tests of `npu.analysis.byte_ranges` ask; `AccessAnalysis`
(`npu.analysis.access`) extends it with the ops' byte ranges."""

from __future__ import annotations

from typing import Iterable

from mlir import ir

from npu.analysis.affine import Affine, IvKey, IvRange, ident, normal_terms
from npu.ir import defining_op, is_block_argument

_MAX_INDEX_DEPTH = 64
_CUT_OFF = 1 << 30  # `_index` levels of a result the depth limit cut off


def _below(levels: int) -> int:
    return levels if levels == _CUT_OFF else levels + 1


class IndexAnalysis:
    """Affine forms and bounds of one function's index values, memoised."""

    def __init__(self) -> None:
        self.iv_ranges: dict[IvKey, IvRange] = {}
        self._indices: dict[ir.Value, tuple[Affine | None, int]] = {}  # see `_index`
        self.intervals: dict[ir.Value, tuple[int, int] | None] = {}  # `npu.analysis.offset_intervals`
        # memref type -> (strides, offset) of its layout (`layout`)
        self._layouts: dict[ir.Type, tuple[list[int], int]] = {}

    def layout(self, t: ir.Type) -> tuple[list[int], int]:
        """(strides, offset) of a memref type's layout, read once per type:
        the offsets of a chain of views ask for each view's (the interval
        bounds read them afresh every time: 0.1 CPU s of BERT-12's on 32 cores)."""
        layout = self._layouts.get(t)
        if layout is None:
            layout = self._layouts[t] = ir.MemRefType(t).get_strides_and_offset()
        return layout

    def iv_key(self, value: ir.Value) -> IvKey | None:
        """Key of `value` if it is the induction variable of a constant-bound scf.for."""
        if not is_block_argument(value):
            return None
        arg = ir.BlockArgument(value)
        parent = arg.owner.owner
        if parent is None or parent.operation.name != "scf.for" or arg.arg_number != 0:
            return None
        loop = parent.operation
        bounds = [self.index_value(loop.operands[i]) for i in range(3)]
        if any(b is None or b.terms for b in bounds):
            return None
        key = IvKey(ident(value))
        self.iv_ranges[key] = IvRange(bounds[0].const, bounds[1].const, bounds[2].const)
        return key

    def index_value(self, value: ir.Value, depth: int = 0) -> Affine | None:
        """Affine form of an index/integer SSA value, None if not affine
        (also when its definition nests deeper than 64 levels below `depth`)."""
        return self._index(value, depth)[0]

    def _index(self, value: ir.Value, depth: int) -> tuple[Affine | None, int]:
        """(index_value, levels of definitions below `value` it looked
        through). Memoised per value: many ops' offsets share their index
        arithmetic. A result is reused at a depth where the 64-level limit
        would not have cut it off, and one that was cut off is not kept."""
        if depth > _MAX_INDEX_DEPTH:
            return None, _CUT_OFF
        hit = self._indices.get(value)
        if hit is not None and depth + hit[1] <= _MAX_INDEX_DEPTH:
            return hit
        found = self._index_of(value, depth)
        if found[1] != _CUT_OFF:
            self._indices[value] = found
        return found

    def _index_of(self, value: ir.Value, depth: int) -> tuple[Affine | None, int]:
        if is_block_argument(value):
            key = self.iv_key(value)
            return (Affine(0, ((key, 1),)) if key is not None else None), 0
        op = defining_op(value)
        name = op.name
        if name == "arith.constant":
            attr = op.attributes["value"]
            if isinstance(attr, ir.IntegerAttr):
                return Affine(ir.IntegerAttr(attr).value), 0
            return None, 0
        if name in ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui"):
            inner, below = self._index(op.operands[0], depth + 1)
            return inner, _below(below)
        if name in ("arith.addi", "arith.subi", "arith.muli"):
            a, below_a = self._index(op.operands[0], depth + 1)
            b, below_b = self._index(op.operands[1], depth + 1)
            below = _below(max(below_a, below_b))
            if a is None or b is None:
                return None, below
            if name == "arith.addi":
                return a + b, below
            if name == "arith.subi":
                return a + b.scale(-1), below
            if not a.terms:
                return b.scale(a.const), below
            if not b.terms:
                return a.scale(b.const), below
            return None, below
        return None, 0

    def bounds(self, expr: Affine, keep: Iterable[IvKey] = ()) -> tuple[Affine, int] | None:
        """Eliminate all ivs not in `keep` by their ranges: (min expression, spread)."""
        keep = set(keep)
        lo, spread, kept = expr.const, 0, {}
        for iv, c in expr.terms:
            if iv in keep:
                kept[iv] = c
                continue
            r = self.iv_ranges.get(iv)
            if r is None or r.trip_count == 0:
                return None
            a, b = c * r.lb, c * r.last
            lo += min(a, b)
            spread += abs(b - a)
        return Affine(lo, normal_terms(kept)), spread
