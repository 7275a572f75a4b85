"""The compiled generic path's byte-level work on accesses that touch some
granule in part (csrc/partial.c): `set_part` leaves a `Stamps` object
exactly as Python's does, and the checks that read such accesses' stamps
give the Python engine's hazards."""

from __future__ import annotations

import numpy as np
import pytest

import npu.simulator
from npu.simulator import access, compiled
from npu.simulator.stamps import Stamps, selection

from test_compiled_engine import both  # noqa: F401 (the fixture)
from test_sim_race_oracle import TILE, TILES, tiled_kernel
from test_stamps import random_pattern


def simulate(*args, **kwargs):
    """`npu.simulator.simulate` as `both` records it (looked up at the call)."""
    return npu.simulator.simulate(*args, **kwargs)

cengine = compiled._cengine
pytestmark = pytest.mark.skipif(cengine is None, reason="the extension is not built")


def _same(a: Stamps, b: Stamps) -> None:
    assert np.array_equal(a.coarse, b.coarse)
    assert np.array_equal(a.mixed, b.mixed)
    assert a.any_mixed == b.any_mixed
    assert (a.fine is None) == (b.fine is None)
    if a.fine is not None:  # only the bytes of mixed granules mean anything
        keep = np.repeat(a.mixed, a.g)
        assert np.array_equal(a.fine[keep], b.fine[keep])


@pytest.mark.parametrize("g", [32, 512])
@pytest.mark.parametrize("seed", range(3))
def test_set_part_matches_python(g: int, seed: int) -> None:
    """Dense runs, bursts and byte lists, on granules coarse or mixed,
    before and after a reset: every partial access is taken in C."""
    rng = np.random.default_rng(seed)
    size = 32 * g
    ours, ref = Stamps(size, g, -1), Stamps(size, g, -1)
    taken = 0
    for step in range(250):
        pat = random_pattern(rng, g)
        addr = int(rng.integers(0, size - pat.hi - 3 * g)) // 2 * 2
        if step % 60 == 59:
            ours.reset(-1)
            ref.reset(-1)
        if ref.plan(pat, addr) is not None:  # the machine stamps whole granules itself
            ref.set(pat, addr, step)
            ours.set(pat, addr, step)
        else:
            ref.set_part(pat, addr, step)
            assert cengine.set_part(ours, pat, addr, step)
            taken += 1
        _same(ours, ref)
        sel = selection(pat, addr)
        assert np.array_equal(ours.get(sel), ref.get(sel))
    assert taken > 50


def test_set_part_leaves_what_it_does_not_take() -> None:
    """Out of the buffer: Python's (numpy's indexing) decides."""
    stamps = Stamps(64, 32, -1)
    assert not cengine.set_part(stamps, access.dense(40), 40, 7)
    assert stamps.fine is None and not stamps.any_mixed


def _partial_program(synced: bool, seed: int):
    """V writes a few 2-byte lanes of a UB tile (a granule in part, so the
    tile's granules become mixed), then MTE3 stores, MTE2 reloads and V
    writes other lanes, each ordered by a flag only when `synced`."""
    rng = np.random.default_rng(seed)
    k, _ = tiled_kernel()
    for _ in range(6):
        t = int(rng.integers(0, TILES))
        k.vector("vadds", f"t{t}", f"t{t}", repeat=1, mask=int(rng.integers(1, 16)), scalar=1.0)
        if synced:
            k.set_flag("V", "MTE3", 0)
            k.wait_flag("V", "MTE3", 0)
        k.copy("ub_to_gm", f"t{t}", f"y{t}", 1, 8)
        if synced:
            k.set_flag("MTE3", "MTE2", 0)
            k.wait_flag("MTE3", "MTE2", 0)
        k.copy("gm_to_ub", f"x{t}", f"t{t}", 1, 8)
        if synced:
            k.set_flag("MTE2", "V", 0)
            k.wait_flag("MTE2", "V", 0)
    return k


@pytest.mark.parametrize("seed", range(3))
def test_races_on_partial_granules_match(both, seed: int) -> None:
    """The stamps of partially written granules, read in C, give the Python
    engine's verdicts: races without the flags, none with them."""
    x = np.ones(TILES * TILE, np.float16)
    for synced in (False, True):
        k = _partial_program(synced, seed)
        hazards, _ = both(lambda: simulate(k.parse(), [x, np.zeros_like(x)],
                                           strict=False).hazards)
        assert bool(hazards) != synced


def _mixed_stamps(rng: np.random.Generator, g: int) -> Stamps:
    stamps = Stamps(32 * g, g, -1)
    for step in range(40):
        pat = random_pattern(rng, g)
        stamps.set(pat, int(rng.integers(0, 32 * g - pat.hi - 3 * g)) // 2 * 2, step + 1)
    return stamps


class _Mem:
    """What a hand-over reads of a `Memory`: its writer and reader stamps."""

    def __init__(self, wstamp: Stamps, rstamp: dict) -> None:
        self.wstamp, self.rstamp = wstamp, rstamp


@pytest.mark.parametrize("seed", range(3))
def test_hand_over_matches_python(seed: int) -> None:
    """Writers clamped, readers reset (mixed granules and per-byte stamps
    included) exactly as `launch.hand_over` leaves them."""
    from npu.simulator.launch import hand_over
    from npu.simulator.memory import INPUT_STAMP, NEVER_WRITTEN

    def memories(rng):
        return [_Mem(_mixed_stamps(rng, g), {q: _mixed_stamps(rng, g) for q in (1, 4)})
                for g in (32, 512)]
    ours, ref = memories(np.random.default_rng(seed)), memories(np.random.default_rng(seed))
    assert any(m.wstamp.any_mixed for m in ref)
    assert cengine.hand_over({ours[0]}, {ours[1]}, INPUT_STAMP, NEVER_WRITTEN)
    hand_over({ref[1]}, {ref[0]})
    for a, b in zip(ours, ref):
        for x, y in [(a.wstamp, b.wstamp)] + [(a.rstamp[q], b.rstamp[q]) for q in (1, 4)]:
            _same(x, y)  # mixed granules' bytes clamped too (stamps up to 40 > 0)
