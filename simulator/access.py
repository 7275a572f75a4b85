"""Byte patterns an instruction operand touches, relative to its address.

All instruction attributes are static, so each operand's pattern is built
once when the program is decoded; at run time only the address changes.
A dense pattern is one slice; a sparse one keeps its byte offsets (for the
shadow state) and element offsets (for the typed numpy views).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count

import numpy as np

_ids = count()


@dataclass(frozen=True, eq=False)
class Pattern:
    lo: int  # first byte touched, relative to the operand address
    hi: int  # one past the last byte touched
    esize: int
    byte_idx: np.ndarray | None = None  # None: every byte of [lo, hi)
    elem_idx: np.ndarray | None = None  # element offsets (sparse patterns only)
    # (count, bytes, stride) of a pattern of equal bursts (from_bursts), else None
    bursts: tuple[int, int, int] | None = None
    key: int = field(default_factory=lambda: next(_ids))
    _granules: dict = field(default_factory=dict, repr=False)

    @property
    def dense(self) -> bool:
        return self.byte_idx is None

    @property
    def nbytes(self) -> int:
        return self.hi - self.lo if self.byte_idx is None else int(self.byte_idx.size)

    def granules(self, g: int) -> np.ndarray | None:
        """Relative indices of the `g`-byte granules a sparse pattern covers,
        when it covers each of them whole (applied at a multiple of `g`); else
        None. Computed once per granule size."""
        if g in self._granules:
            return self._granules[g]
        if self.bursts is not None:
            n, burst, stride = self.bursts
            rel = None
            if burst % g == 0 and stride % g == 0:
                rel = ((np.arange(n, dtype=np.int64) * (stride // g))[:, None]
                       + np.arange(burst // g)).ravel()
        else:
            uniq = sorted_unique(self.byte_idx)
            blocks = sorted_unique(uniq // g)
            rel = blocks if blocks.size * g == uniq.size else None
        self._granules[g] = rel
        return rel


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """`np.unique(values)`, without its sort when `values` already ascend
    (lanes, bursts and fractals are built in address order)."""
    values = np.asarray(values).ravel()
    if values.size < 2:
        return np.unique(values)
    step = values[1:] > values[:-1]
    if step.all():
        return values
    if (values[1:] >= values[:-1]).all():
        return values[np.concatenate(([True], step))]
    return np.unique(values)


def from_elements(elem_offsets: np.ndarray, esize: int) -> Pattern:
    """Pattern of the elements at `elem_offsets` (element units, relative)."""
    elem_offsets = np.asarray(elem_offsets, np.int64).ravel()
    uniq = sorted_unique(elem_offsets)
    lo, hi = int(uniq[0]) * esize, (int(uniq[-1]) + 1) * esize
    if uniq.size * esize == hi - lo and np.array_equal(elem_offsets, uniq):
        return Pattern(lo, hi, esize)
    byte_idx = (uniq[:, None] * esize + np.arange(esize)).ravel()
    return Pattern(lo, hi, esize, byte_idx, elem_offsets)


def from_bursts(n_burst: int, burst_bytes: int, stride_bytes: int, esize: int = 1) -> Pattern:
    """`n_burst` runs of `burst_bytes`, each `stride_bytes` after the previous one."""
    if n_burst == 1 or stride_bytes == burst_bytes:
        return Pattern(0, n_burst * burst_bytes, esize)
    starts = np.arange(n_burst, dtype=np.int64) * stride_bytes
    byte_idx = (starts[:, None] + np.arange(burst_bytes)).ravel()
    hi = int(starts[-1]) + burst_bytes
    return Pattern(0, hi, esize, byte_idx, None, (n_burst, burst_bytes, stride_bytes))


def dense(nbytes: int, esize: int = 1) -> Pattern:
    return Pattern(0, nbytes, esize)
