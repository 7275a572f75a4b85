"""The values of the access analysis (`npu.analysis.access`): affine index
expressions over loop induction variables, the byte ranges an op reads and
writes, and the tests of whether two ranges (or two ops' accesses) may share
a byte."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping, NamedTuple

from mlir import ir

from npu.target import ON_CHIP_BUFFERS

if TYPE_CHECKING:
    from npu.analysis.access import AccessAnalysis


# ----------------------------------------------------------------------------
# Affine index expressions over loop induction variables
# ----------------------------------------------------------------------------


class Affine(NamedTuple):
    """const + sum(coef * iv); `terms` is sorted by the ivs' keys.

    A named tuple rather than a dataclass: the sync and lifetime analyses
    hash and compare these hundreds of thousands of times per compile, and
    a tuple's hash and equality run in C.
    """

    const: int
    terms: tuple[tuple["IvKey", int], ...] = ()

    def __add__(self, other: "Affine") -> "Affine":  # type: ignore[override]
        if not other.terms:
            return Affine(self.const + other.const, self.terms) if other.const else self
        if not self.terms:
            return Affine(self.const + other.const, other.terms)
        merged: dict[IvKey, int] = dict(self.terms)
        for k, c in other.terms:
            merged[k] = merged.get(k, 0) + c
        return Affine(self.const + other.const, _norm(merged))

    def scale(self, k: int) -> "Affine":
        if not self.terms:
            return Affine(self.const * k)
        return Affine(self.const * k, _norm({iv: c * k for iv, c in self.terms}))

    def coef(self, iv: "IvKey") -> int:
        for key, c in self.terms:  # a few terms: no dict for them
            if key == iv:
                return c
        return 0

    def shifted(self, iv: "IvKey", delta: int) -> "Affine":
        """The expression with iv replaced by iv + delta."""
        return Affine(self.const + self.coef(iv) * delta, self.terms)


class IvKey(NamedTuple):
    """Identity of one scf.for induction variable (stable across Python
    wrappers); ordered by `ident` (a named tuple: C-level hash and order)."""

    ident: int


def _norm(terms: Mapping["IvKey", int]) -> tuple[tuple["IvKey", int], ...]:
    return tuple(sorted((k, c) for k, c in terms.items() if c != 0))


@dataclass(frozen=True)
class IvRange:
    """Values lb, lb+step, ..., < ub of a constant-bound loop."""

    lb: int
    ub: int
    step: int

    @property
    def trip_count(self) -> int:
        return max(0, -(-(self.ub - self.lb) // self.step))

    @property
    def last(self) -> int:
        return self.lb + (self.trip_count - 1) * self.step


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


@dataclass
class OpAccess:
    op: ir.Operation
    pipe: str
    reads: list[Range] = field(default_factory=list)
    writes: list[Range] = field(default_factory=list)


# ----------------------------------------------------------------------------
# Overlap tests
# ----------------------------------------------------------------------------


def may_overlap(a: Range, b: Range, analysis: AccessAnalysis,
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
        d = bstart.const - a.start.const
        return -b.length < d < a.length
    ba = analysis.bounds(a.start)
    bb = analysis.bounds(bstart)
    if ba is None or bb is None:
        return True
    (alo, aspread), (blo, bspread) = ba, bb
    a0, a1 = alo.const, alo.const + aspread + a.length
    b0, b1 = blo.const, blo.const + bspread + b.length
    return a0 < b1 and b0 < a1


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


def conflicts(x: OpAccess, y: OpAccess, analysis: AccessAnalysis,
              shift: tuple[IvKey, int] | None = None) -> bool:
    """RAW, WAR or WAW between x (earlier) and y (later)."""
    return conflicts_by(x, y, lambda a, b: may_overlap(a, b, analysis, shift))
