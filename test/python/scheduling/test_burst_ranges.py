"""A strided GM copy's bytes as its bursts (`Range.period`): the overlap
test against the bytes themselves, for random bursts and offsets."""

from __future__ import annotations

import random

from npu.analysis.affine import Affine
from npu.analysis.byte_ranges import Range, may_overlap


def _range(rng: random.Random, start: int, run: int | None = None, gap: int | None = None
           ) -> tuple[Range, set[int]]:
    """A range at `start` of 1-5 bursts (periodic when there are gaps) and its bytes."""
    n = rng.randint(1, 5)
    run = run or rng.randint(1, 6)
    gap = rng.randint(0, 6) if gap is None else gap
    length = (n - 1) * (run + gap) + run
    periodic = n > 1 and gap > 0
    r = Range(("arg", 0), "gm", Affine(start), length, None,
              run + gap if periodic else 0, run if periodic else 0)
    return r, {start + k * (run + gap) + j for k in range(n) for j in range(run)}


def test_bursts_overlap_exactly_when_their_bytes_do():
    """Never a missed byte in common; exact when both share a period or
    one is contiguous (the conv maps' case); hulls of other periods."""
    rng = random.Random(0)
    for _ in range(20000):
        a, sa = _range(rng, 0)
        d = rng.randint(-40, 40)
        same = a.period and rng.random() < 0.5
        b, sb = _range(rng, d, a.run if same else None, a.period - a.run if same else None)
        truth = bool(sa & sb)
        got = may_overlap(a, b, None)
        assert got or not truth, (a, b)
        if not (a.period and b.period) or a.period == b.period:
            assert got == truth, (a, b)


def test_widened_bursts_cover_every_start():
    """A range over a loop's starts (`Range.widened`) holds its bytes from each."""
    rng = random.Random(1)
    for _ in range(5000):
        a, sa = _range(rng, 0)
        spread = rng.randint(0, 10)
        w = a.widened(Affine(0), spread)
        if w.period:
            bursts = (w.length - w.run) // w.period + 1
            held = {k * w.period + j for k in range(bursts) for j in range(w.run)}
        else:
            held = set(range(w.length))
        assert {x + s for x in sa for s in range(spread + 1)} <= held, (a, spread, w)
