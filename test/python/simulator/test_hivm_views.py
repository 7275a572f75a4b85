"""`HivmProgram.assign_groups`: operand views whose byte extents overlap in
one buffer share a hazard group, through chains of overlaps; views in
different buffers never do; groups are numbered from `first_group + 1`,
buffer by buffer in order of first appearance, by first byte."""

from __future__ import annotations

import numpy as np
import pytest

from npu.simulator.hivm_views import HivmProgram
from npu.simulator.memory import Memory, Region


def _reference(mems, extents, first):
    """The definition, one buffer at a time in plain Python."""
    groups, gid = [0] * len(extents), first
    for m in dict.fromkeys(mems):
        ks = sorted((k for k in range(len(mems)) if mems[k] == m), key=lambda k: extents[k][0])
        end = None
        for k in ks:
            if end is None or extents[k][0] >= end:
                gid += 1
                end = extents[k][1]
            end = max(end, extents[k][1])
            groups[k] = gid
    return groups, gid + 1


@pytest.mark.parametrize("seed", range(5))
def test_assign_groups_matches_the_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    bufs = [Memory(f"m{i}", "ub", 4096, 32) for i in range(3)]
    state = HivmProgram.__new__(HivmProgram)
    state.footprints, state.extents, mems = [], [], []
    for _ in range(int(rng.integers(1, 60))):
        m = int(rng.integers(0, 3))
        lo = int(rng.integers(0, 4000))
        state.footprints.append(Region(bufs[m], 0, 4096))
        state.extents.append((lo, lo + int(rng.integers(1, 200))))
        mems.append(m)
    want, after = _reference(mems, state.extents, 7)
    assert state.assign_groups(7) == after
    assert [r.group for r in state.footprints] == want


def test_no_footprints() -> None:
    state = HivmProgram.__new__(HivmProgram)
    state.footprints, state.extents = [], []
    assert state.assign_groups(3) == 4
