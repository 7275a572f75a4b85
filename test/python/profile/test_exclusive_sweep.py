"""The exclusive-cycles sweep (`npu.frontend.report.sweep`, numpy) against
the plain event loop it replaced, on random interval sets with shared
instants, idle gaps and overlapping owners."""

from __future__ import annotations

import numpy as np
import pytest

from npu.frontend.report import sweep


def _loop(start, end, who, n: int, cycles: float) -> np.ndarray:
    """Events in time order (ends first at one instant, then entry order):
    each gap shared by the distinct open owners, idle time to the next start,
    the tail to the owner of the last end."""
    events = []
    for s, e, w in zip(start, end, who):
        events.append((s, 1, int(w)))
        events.append((e, 0, int(w)))
    events.sort(key=lambda ev: (ev[0], ev[1]))
    out = np.zeros(n)
    active: dict[int, int] = {}
    now, waiting, last = 0.0, 0.0, None
    for time, starts, w in events:
        if time > now:
            if active:
                for a in active:
                    out[a] += (time - now) / len(active)
            else:
                waiting += time - now
            now = time
        if starts:
            out[w] += waiting
            waiting = 0.0
            active[w] = active.get(w, 0) + 1
        else:
            active[w] -= 1
            if not active[w]:
                del active[w]
            last = w
    if last is not None:
        out[last] += waiting + max(0.0, cycles - now)
    return out


@pytest.mark.parametrize("seed", range(8))
def test_the_sweep_matches_the_event_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(1, 300)), int(rng.integers(1, 12))
    start = rng.integers(0, 400, m).astype(np.float64)  # coarse times: many shared instants
    end = start + rng.integers(1, 60, m)
    who = rng.integers(0, n, m)
    cycles = float(end.max() + rng.integers(0, 50))
    got = sweep(start, end, who, n, cycles)
    assert np.allclose(got, _loop(start, end, who, n, cycles), rtol=1e-9, atol=1e-9)
    assert got.sum() == pytest.approx(cycles)  # every cycle attributed once
