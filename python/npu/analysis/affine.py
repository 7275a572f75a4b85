"""The values every module of the access analysis shares: affine index
expressions over loop induction variables (`Affine`), the loops' identities
(`IvKey`) and constant ranges (`IvRange`). At the bottom of npu.analysis so
the index, interval and byte-range modules above it import it one way."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, NamedTuple


def ident(obj: object) -> int:
    """Identity of an IR value or op, stable across its Python wrappers."""
    return hash(obj)


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
        return Affine(self.const + other.const, normal_terms(merged))

    def scale(self, k: int) -> "Affine":
        if not self.terms:
            return Affine(self.const * k)
        return Affine(self.const * k, normal_terms({iv: c * k for iv, c in self.terms}))

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


def normal_terms(terms: Mapping[IvKey, int]) -> tuple[tuple[IvKey, int], ...]:
    """`Affine.terms` of iv -> coefficient: sorted, zero coefficients dropped."""
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
