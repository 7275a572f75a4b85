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
    # The byte offsets of a pattern given byte by byte (from_elements); None
    # for a dense one and for equal bursts, whose offsets `byte_idx` works
    # out only when a slow path asks (most never do).
    explicit_idx: np.ndarray | None = None
    elem_idx: np.ndarray | None = None  # element offsets (sparse patterns only)
    # (count, bytes, stride) of a pattern of equal bursts (from_bursts), else None
    bursts: tuple[int, int, int] | None = None
    key: int = field(default_factory=lambda: next(_ids))
    _cache: dict = field(default_factory=dict, repr=False)  # granules per size; "bytes"

    @property
    def dense(self) -> bool:
        return self.explicit_idx is None and self.bursts is None

    @property
    def byte_idx(self) -> np.ndarray | None:
        """Every byte offset of a sparse pattern (None when dense); a burst
        pattern's are built on first use and kept."""
        if self.bursts is None:
            return self.explicit_idx
        if "bytes" not in self._cache:
            n, burst, stride = self.bursts
            starts = np.arange(n, dtype=np.int64) * stride
            self._cache["bytes"] = (starts[:, None] + np.arange(burst)).ravel()
        return self._cache["bytes"]

    @property
    def nbytes(self) -> int:
        if self.bursts is not None:
            return self.bursts[0] * self.bursts[1]
        return self.hi - self.lo if self.explicit_idx is None else int(self.explicit_idx.size)

    def granules(self, g: int) -> np.ndarray | None:
        """Relative indices of the `g`-byte granules a sparse pattern covers,
        when it covers each of them whole (applied at a multiple of `g`); else
        None. Computed once per granule size."""
        if g in self._cache:
            return self._cache[g]
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
        self._cache[g] = rel
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
    """`n_burst` runs of `burst_bytes`, each `stride_bytes` after the previous one.
    Equal patterns are one object: the cores of a launch and the instructions
    of a loop share it, with its cached granules and lines."""
    if n_burst == 1 or stride_bytes == burst_bytes:
        return Pattern(0, n_burst * burst_bytes, esize)
    shape = (n_burst, burst_bytes, stride_bytes, esize)
    pattern = _BURSTS.get(shape)
    if pattern is None:
        if len(_BURSTS) >= _BURSTS_KEPT:
            _BURSTS.clear()
        hi = (n_burst - 1) * stride_bytes + burst_bytes
        pattern = _BURSTS[shape] = Pattern(0, hi, esize, None, None, shape[:3])
    return pattern


_BURSTS: dict[tuple[int, int, int, int], Pattern] = {}
_BURSTS_KEPT = 4096


def dense(nbytes: int, esize: int = 1) -> Pattern:
    return Pattern(0, nbytes, esize)


def bursts_view(arr: np.ndarray, addr: int, pat: Pattern) -> np.ndarray | None:
    """The bursts of `pat` at byte `addr` as a (bursts, bytes) view of the
    per-byte array `arr` (any element type), when they are disjoint and the
    last one fits in the array; else None (index the bytes one by one)."""
    if pat.bursts is None:
        return None
    n, burst, stride = pat.bursts
    if stride < burst:
        return None
    if addr + n * stride > arr.size:  # the last gap runs past the array
        if addr + (n - 1) * stride + burst > arr.size:
            return None
        step = arr.strides[0]
        return np.lib.stride_tricks.as_strided(arr[addr:], (n, burst), (stride * step, step))
    return arr[addr:addr + n * stride].reshape(n, stride)[:, :burst]
