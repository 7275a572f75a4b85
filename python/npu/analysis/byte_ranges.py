"""The byte ranges an op reads and writes (`Range`, `OpAccess`, derived by
`npu.analysis.access`), and the tests of whether two ranges (or two ops'
accesses) may share a byte, over the loops' ranges an `IndexAnalysis`
knows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from mlir import ir

from npu.analysis.affine import Affine, IvKey
from npu.analysis.index_values import IndexAnalysis
from npu.target import ON_CHIP_BUFFERS


OFFSET_ATTR = "npu.offset"  # an on-chip alloc's planned byte offset (npu-plan-memory)


# ----------------------------------------------------------------------------
# Byte ranges
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Range:
    """Bytes [start, start + length) of `root`.

    `root` is ("space", name) for planned on-chip buffers (addresses are
    absolute in the buffer), ("alloc", id) for unplanned allocs and
    ("arg", i) for function arguments in GM.
    """

    root: tuple
    space: str
    start: Affine
    length: int
    # The root alloc of an ("alloc", id) range, for `AccessAnalysis.adopt`
    # (ids come from op hashes, which two allocs may share); not compared.
    alloc: ir.Operation | None = field(default=None, compare=False, repr=False)
    # A GM copy's bursts: `run` bytes every `period` from `start` (0: the
    # bytes are contiguous); `length` is still their hull.
    period: int = 0
    run: int = 0

    def widened(self, lo: Affine, spread: int) -> "Range":
        """This range's bytes from every start in [lo, lo + spread]."""
        run = self.run + spread
        periodic = self.period and run < self.period
        return Range(self.root, self.space, lo, self.length + spread, self.alloc,
                     self.period if periodic else 0, run if periodic else 0)


@dataclass
class OpAccess:
    op: ir.Operation
    pipe: str
    reads: list[Range] = field(default_factory=list)
    writes: list[Range] = field(default_factory=list)


# ----------------------------------------------------------------------------
# Overlap tests
# ----------------------------------------------------------------------------


def may_overlap(a: Range, b: Range, analysis: IndexAnalysis,
                shift: tuple[IvKey, int] | None = None) -> bool:
    """Can `a` and `b` (b's iv optionally shifted by `shift` = (iv, delta)) share a byte?

    Exact when both starts have the same symbolic part; otherwise both are
    widened over the ranges of their ivs.
    """
    if a.root != b.root:
        # Planned and unplanned buffers of one space may share addresses.
        kinds = {a.root[0], b.root[0]}
        if a.space == b.space and a.space in ON_CHIP_BUFFERS and "space" in kinds and "alloc" in kinds:
            return True
        return False
    if a.length <= 0 or b.length <= 0:
        return False
    bstart = b.start.shifted(*shift) if shift is not None else b.start
    if a.start.terms == bstart.terms:
        return _share(a, b, bstart.const - a.start.const)
    ba = analysis.bounds(a.start)
    bb = analysis.bounds(bstart)
    if ba is None or bb is None:
        return True
    (alo, aspread), (blo, bspread) = ba, bb
    a, b = a.widened(alo, aspread), b.widened(blo, bspread)
    return _share(a, b, b.start.const - a.start.const)


def _share(a: Range, b: Range, d: int) -> bool:
    """Whether `a` from 0 and `b` from `d` share a byte: their hulls, and
    then their bursts where either range is periodic."""
    if not -b.length < d < a.length:
        return False
    if not (a.period or b.period):
        return True
    if a.period and b.period and a.period != b.period:
        # each against the other's hull: a byte in both is in both tests
        return _meets(a, d, b.length, 0, 0) and _meets(b, -d, a.length, 0, 0)
    if a.period:
        return _meets(a, d, b.length, b.period, b.run)
    return _meets(b, -d, a.length, 0, 0)


def _meets(a: Range, d: int, length: int, period: int, run: int) -> bool:
    """Whether periodic `a` (from 0) shares a byte with the bytes from `d`:
    `length` contiguous ones, or (`period` = a's) bursts of `run` in that hull.
    Burst k of a and burst m of the other meet when (k - m) * period lies
    in (d - a.run, d + their run), k - m from -(their bursts - 1) to a's - 1."""
    p = a.period
    count = (a.length - a.run) // p + 1
    if period:
        other, lowest = run, -((length - run) // p)
    else:
        other, lowest = length, 0
    q0 = max(lowest, (d - a.run) // p + 1)
    q1 = min(count - 1, -(-(d + other) // p) - 1)
    return q0 <= q1


def conflicts_by(x: OpAccess, y: OpAccess, overlap: Callable[[Range, Range], bool]) -> bool:
    """RAW, WAR or WAW between x (earlier) and y (later), with `overlap(a, b)`
    deciding whether x's range `a` and y's range `b` may share a byte."""
    for w in x.writes:
        for r in y.reads + y.writes:
            if overlap(w, r):
                return True
    for r in x.reads:
        for w in y.writes:
            if overlap(r, w):
                return True
    return False


def conflicts(x: OpAccess, y: OpAccess, analysis: IndexAnalysis,
              shift: tuple[IvKey, int] | None = None) -> bool:
    """RAW, WAR or WAW between x (earlier) and y (later)."""
    return conflicts_by(x, y, lambda a, b: may_overlap(a, b, analysis, shift))


def planned_range(r: Range, offsets: dict[ir.Operation, int | None]) -> Range:
    """`r` as `AccessAnalysis.root_key` gives it once its alloc has an `npu.offset`
    (`offsets` caches each alloc's)."""
    op = r.alloc
    if op is None or r.space not in ON_CHIP_BUFFERS:
        return r
    if op in offsets:
        base = offsets[op]
    else:
        base = offsets[op] = (ir.IntegerAttr(op.attributes[OFFSET_ATTR]).value
                              if op.name == "memref.alloc" and OFFSET_ATTR in op.attributes
                              else None)
    if base is None:
        return r
    return Range(("space", r.space), r.space, r.start + Affine(base), r.length,
                 period=r.period, run=r.run)
