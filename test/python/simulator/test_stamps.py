"""`Stamps` (per-byte stamps stored per granule) answers exactly what a plain
per-byte array answers, whatever mix of whole-granule, partial, dense and
burst accesses built it."""

from __future__ import annotations

import numpy as np
import pytest

from npu.simulator import access
from npu.simulator.stamps import Stamps, selection



def random_pattern(rng: np.random.Generator, g: int) -> access.Pattern:
    kind = rng.integers(4)
    if kind == 0:  # whole granules
        return access.dense(int(rng.integers(1, 8)) * g)
    if kind == 1:  # any dense run
        return access.dense(int(rng.integers(1, 3 * g)))
    if kind == 2:  # bursts, whole granules or not
        n, burst = int(rng.integers(2, 6)), int(rng.choice([g, 2 * g, int(rng.integers(1, 2 * g))]))
        return access.from_bursts(n, burst, burst + int(rng.choice([0, g, int(rng.integers(1, g))])))
    elems = rng.choice(np.arange(64), size=int(rng.integers(1, 20)), replace=False)
    return access.from_elements(np.sort(elems) * 2, 2)  # scattered 2-byte elements


@pytest.mark.parametrize("whole_views", [False, True])
@pytest.mark.parametrize("g", [32, 512])
@pytest.mark.parametrize("seed", range(4))
def test_stamps_match_a_per_byte_array(g: int, seed: int, whole_views: bool) -> None:
    """`whole_views`: updates go the machine's way, filling the granule views
    `Stamps.whole` gives (dense runs and bursts of whole granules), and
    through `set` only when it gives none."""
    rng = np.random.default_rng(seed)
    size = 32 * g
    stamps = Stamps(size, g, -1)
    plain = np.full(size, -1, np.int32)
    filled_bursts = 0
    for step in range(300):
        pat = random_pattern(rng, g)
        addr = int(rng.integers(0, size - pat.hi))
        if rng.random() < 0.5:
            addr -= addr % g  # granule-aligned: the fast paths
        sel = selection(pat, addr)
        if rng.random() < 0.6:
            views = stamps.whole(pat, addr) if whole_views else None
            if views is not None:
                views[0].fill(step)
                if stamps.any_mixed:
                    views[1].fill(False)
                filled_bursts += pat.bursts is not None
            else:
                stamps.set(pat, addr, step)
            plain[sel] = step
        # Every query agrees with the plain array.
        assert np.array_equal(stamps.get(sel), plain[sel])
        assert set(stamps.values(pat, addr).tolist()) == set(plain[sel].tolist())
        byte = int(rng.integers(size))
        assert stamps.at(byte) == plain[byte]
    stamps.clamp(0)
    assert np.array_equal(stamps.get(slice(0, size)), np.minimum(plain, 0))
    assert stamps.any_mixed  # the partial accesses were exercised
    assert filled_bursts > 0 or not whole_views  # and so were the 2-D burst views
