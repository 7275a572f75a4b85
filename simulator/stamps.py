"""Per-byte stamps (last writer; last reader of a pipe), stored per granule.

The hazard detector needs, for every byte, the stamp of the instruction that
last wrote it and of the one that last read it on each pipe. Nearly every
access covers whole granules (32 B in UB, L1 and GM; 512 B in L0), so a
granule whose bytes all carry the same stamp keeps it once (`coarse`); only a
granule that an access covered in part becomes `mixed` and keeps one stamp
per byte (`fine`) until a whole-granule write makes it uniform again. Every
query answers exactly what a plain per-byte array would; the granule only
decides how much work an access costs (a 128 KiB copy updates 4096 granule
stamps, not 131072 byte stamps).

An access is given as its `access.Pattern` and the address it is applied at;
`selection` turns that into the numpy index of its bytes for the slow paths
(reports, the uninitialised-data shadow, the cross-core checker).
"""

from __future__ import annotations

import numpy as np

from npu.simulator.access import Pattern, sorted_unique


BLOCKS_CACHE_ENTRIES = 1 << 18
# (granule, pattern key, address) -> `Stamps._find_granules`: the answer
# depends on nothing else, so every memory and every core of a launch share
# it (a 32-core BERT asks 360k times for 28k distinct accesses).
_BLOCKS_AT: dict[tuple[int, int, int], object] = {}


def forget_granules() -> None:
    """Drop the shared granule answers (a run is over: its patterns are gone)."""
    _BLOCKS_AT.clear()


def granule_answers() -> dict:
    """The shared granule answers themselves (the compiled bind reads them:
    `csrc/bind.c`); `forget_granules` clears this same dict."""
    return _BLOCKS_AT


def selection(pat: Pattern, addr: int):
    """The bytes `pat` touches at `addr`, as a numpy index (slice or array)."""
    if pat.dense:
        return slice(addr + pat.lo, addr + pat.hi)
    return pat.byte_idx + addr


class Stamps:
    __slots__ = ("g", "coarse", "mixed", "fine", "any_mixed")

    def __init__(self, nbytes: int, granule: int, fill: int):
        n = -(-nbytes // granule)
        self.g = granule
        self.coarse = np.full(n, fill, np.int32)
        self.mixed = np.zeros(n, bool)
        self.fine: np.ndarray | None = None  # only bytes of mixed granules are meaningful
        self.any_mixed = False

    # -- the granules an access covers whole ------------------------------------

    def _granules(self, pat: Pattern, addr: int):
        """Index of the granules `pat` covers at `addr` when it covers only whole
        granules; None when it touches some granule in part. Loops repeat
        their addresses, so each (pattern, address) is worked out once."""
        key = (self.g, pat.key, addr)
        if key in _BLOCKS_AT:
            return _BLOCKS_AT[key]
        if len(_BLOCKS_AT) >= BLOCKS_CACHE_ENTRIES:
            _BLOCKS_AT.clear()  # a program that never repeats an address
        blocks = _BLOCKS_AT[key] = self._find_granules(pat, addr)
        return blocks

    def _find_granules(self, pat: Pattern, addr: int):
        g = self.g
        if pat.dense:
            lo, hi = addr + pat.lo, addr + pat.hi
            if lo % g or hi % g:
                return None
            return slice(lo // g, hi // g)
        if addr % g:
            return None
        rel = pat.granules(g)
        return None if rel is None else rel + addr // g

    def plan(self, pat: Pattern, addr: int):
        """The granules an access covers whole, for the machine to stamp
        without building views: a slice of `coarse` (one run) or an index
        array (bursts, lanes), None when it touches some granule in part
        (`set_part`). Like `_granules` it depends only on the granule, so
        the stamps of every core of a launch agree on it."""
        return self._granules(pat, addr)

    def whole(self, pat: Pattern, addr: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Writable views of the stamps and mixed flags of the granules `pat`
        covers at `addr`, when it covers only whole granules laid out as one
        run or as equal bursts (a 2-D view); else None. An access that repeats
        its address keeps these and stamps its granules with one `fill`."""
        g = self.g
        if pat.dense:
            lo, hi = addr + pat.lo, addr + pat.hi
            if lo % g or hi % g:
                return None
            return self.coarse[lo // g:hi // g], self.mixed[lo // g:hi // g]
        if pat.bursts is None or addr % g:
            return None
        n, burst, stride = pat.bursts
        if burst % g or stride % g or stride < burst:
            return None
        first, per_burst, step = addr // g, burst // g, stride // g
        if first + n * step <= self.coarse.size:  # plain slicing (as_strided costs 5x)
            end = first + n * step
            return (self.coarse[first:end].reshape(n, step)[:, :per_burst],
                    self.mixed[first:end].reshape(n, step)[:, :per_burst])
        if first + (n - 1) * step + per_burst > self.coarse.size:
            return None
        return tuple(np.lib.stride_tricks.as_strided(
            arr[first:], (n, per_burst), (step * arr.strides[0], arr.strides[0]))
            for arr in (self.coarse, self.mixed))

    # -- updates ----------------------------------------------------------------

    def set(self, pat: Pattern, addr: int, value: int) -> None:
        blocks = self._granules(pat, addr)
        if blocks is not None:
            self.coarse[blocks] = value
            if self.any_mixed:
                self.mixed[blocks] = False
            return
        self.set_part(pat, addr, value)

    def set_part(self, pat: Pattern, addr: int, value: int) -> None:
        """`set` of an access that touches some granule in part."""
        if pat.dense:
            self.set_range(addr + pat.lo, addr + pat.hi, value)
        else:
            self.set_bytes(pat.byte_idx + addr, value)

    def set_range(self, lo: int, hi: int, value: int) -> None:
        """Bytes [lo, hi): whole granules at granule level, the ends per byte."""
        if lo >= hi:
            return
        g = self.g
        a, b = -(-lo // g), hi // g
        if a >= b:
            self.set_bytes(slice(lo, hi), value)
            return
        self.coarse[a:b] = value
        if self.any_mixed:
            self.mixed[a:b] = False
        if lo < a * g:
            self.set_bytes(slice(lo, a * g), value)
        if b * g < hi:
            self.set_bytes(slice(b * g, hi), value)

    def set_bytes(self, sel, value: int) -> None:
        """Byte-level update of `sel` (a slice or an index array)."""
        g = self.g
        if isinstance(sel, slice):
            first = sel.start // g
            if first == (sel.stop - 1) // g:
                # One granule (a partial access's end): `_split` on scalars,
                # not index arrays (BERT-base x12 on 32 cores: 37k of these).
                self.fine_bytes()
                if not self.mixed[first]:
                    self.fine[first * g:first * g + g] = self.coarse[first]
                    self.mixed[first] = True
                    self.any_mixed = True
                self.fine[sel] = value
                return
            blocks = np.arange(first, (sel.stop - 1) // g + 1)
        else:
            blocks = sorted_unique(sel // g)
        self._split(blocks)
        self.fine[sel] = value

    def fine_bytes(self) -> np.ndarray:
        """The per-byte stamps, made when first needed (the compiled
        `set_part`, csrc/partial.c, asks for them here)."""
        if self.fine is None:
            self.fine = np.empty(self.coarse.size * self.g, np.int32)
        return self.fine

    def _split(self, blocks: np.ndarray) -> None:
        """Give every granule of `blocks` per-byte stamps."""
        self.fine_bytes()
        fresh = blocks[~self.mixed[blocks]]
        if fresh.size:
            self.fine.reshape(-1, self.g)[fresh] = self.coarse[fresh][:, None]
            self.mixed[fresh] = True
            self.any_mixed = True

    def reset(self, fill: int) -> None:
        """Every stamp becomes `fill`, in place: the machine's bound operand
        sets keep referring to this object. The mixed flags are all False
        already unless `any_mixed` (only `set_range` and `set_bytes` raise
        them, and they set it): a hand-over resets 9k reader stamps of
        BERT-base x12 on 32 cores, a fifth of their bytes mixed flags."""
        self.coarse.fill(fill)
        if self.any_mixed:
            self.mixed.fill(False)
        self.fine = None
        self.any_mixed = False

    def clamp(self, top: int) -> None:
        """Every stamp above `top` becomes `top`. The read-only test first: a
        hand-over clamps every GM memory a core touched, most of them only
        read (weights), and `max` reads 74k stamps in 4 us where `minimum`
        rewrites them in 110."""
        if self.coarse.size and self.coarse.max() > top:
            np.minimum(self.coarse, top, out=self.coarse)
        if self.fine is not None and self.fine.size and self.fine.max() > top:
            np.minimum(self.fine, top, out=self.fine)

    # -- queries ----------------------------------------------------------------

    def values(self, pat: Pattern, addr: int) -> np.ndarray:
        """Every stamp the bytes of the access carry (each at least once, one
        per whole uniform granule): enough to decide whether any byte fails a
        test on its stamp. `get` gives them byte by byte."""
        blocks = self._granules(pat, addr)
        # count_nonzero, not `.any()`: a direct C call, ~3x faster on the few
        # granules of an access (0.6 against 3 us here, 85k calls a 32-core BERT).
        if blocks is not None and not (self.any_mixed and np.count_nonzero(self.mixed[blocks])):
            return self.coarse[blocks]
        return self.get(selection(pat, addr))

    def get(self, sel) -> np.ndarray:
        """The stamp of every byte of `sel` (a slice or an index array), in order."""
        idx = np.arange(sel.start, sel.stop) if isinstance(sel, slice) else np.asarray(sel)
        blocks = idx // self.g
        out = self.coarse[blocks]
        if self.any_mixed:
            m = self.mixed[blocks]
            if np.count_nonzero(m):
                out[m] = self.fine[idx[m]]
        return out

    def at(self, byte: int) -> int:
        b = byte // self.g
        return int(self.fine[byte] if self.mixed[b] else self.coarse[b])
