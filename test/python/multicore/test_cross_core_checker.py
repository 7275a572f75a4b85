"""`hazards.CrossCoreChecker` on its own: per GM byte a writer and a reader
(none, one core, or MANY), checked by the compiled runs (`_cengine.cross_runs`)
and by the numpy path alike. A write races with a read by any other core,
also when several cores read the byte (one of them the writer), and never
with the writer's own reads; reads noted before the epoch's first write
become the same per-byte readers."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from npu.simulator import compiled
from npu.simulator.access import dense, from_bursts, from_elements
from npu.simulator.hazards import MANY, NONE, CrossCoreChecker, HazardDetector
from npu.simulator.memory import Memory

# "access": the compiled generic path's fast part of `access` first (crosscore.c)
PATHS = ["numpy"] + (["compiled", "access"] if compiled.available() else [])
INSTR = SimpleNamespace(name="copy_ubuf_to_gm", where="k.mlir:1:1")


def checker(path: str) -> tuple[CrossCoreChecker, HazardDetector, Memory]:
    cross = CrossCoreChecker(32)
    cross._runs = compiled._cengine.cross_runs if path in ("compiled", "access") else None
    cross.path = path
    detector = HazardDetector(0, 1, lambda s: ("", "", ""), races=True, strict=False)
    return cross, detector, Memory("out", "gm", 1024)


def access(cross, detector, mem, pat, addr: int, write: bool, core: int) -> None:
    if cross.path == "access" and compiled._cengine.cross_access(cross, mem, pat, addr, write,
                                                                 core):
        return
    cross.access(mem, pat, addr, write, core, INSTR, detector)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("pat", [dense(64), from_bursts(2, 32, 64), from_elements(np.arange(0, 128, 2), 1)],
                         ids=["dense", "bursts", "elements"])
def test_a_write_races_with_another_cores_read_also_among_several(path, pat):
    cross, detector, mem = checker(path)
    access(cross, detector, mem, dense(32), 512, True, 5)  # the epoch's first write: per byte
    # core 1 reads, then core 0: the bytes keep both (a last reader would be 0)
    access(cross, detector, mem, pat, 0, False, 1)
    access(cross, detector, mem, pat, 0, False, 0)
    assert set(cross._readers[mem][:pat.hi].tolist()) <= {NONE, MANY}
    access(cross, detector, mem, pat, 0, True, 0)
    assert [h["message"] for h in detector.hazards] == [
        "'copy_ubuf_to_gm' on core 0 writes out byte 0 (64 bytes in all) that another core "
        "reads too, with no ordering between the cores of a launch"]


@pytest.mark.parametrize("path", PATHS)
def test_a_cores_own_reads_do_not_race_with_its_write(path):
    cross, detector, mem = checker(path)
    access(cross, detector, mem, dense(32), 512, True, 5)
    for _ in range(2):
        access(cross, detector, mem, dense(64), 0, False, 3)
    assert cross._readers[mem][:64].tolist() == [3] * 64
    access(cross, detector, mem, dense(64), 0, True, 3)
    assert detector.hazards == []
    assert cross._writer[mem][:64].tolist() == [3] * 64


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("readers, races", [((1, 0), True), ((1,), True), ((0, 0), False)])
def test_reads_before_the_first_write_become_readers(path, readers, races):
    cross, detector, mem = checker(path)
    for core in readers:  # nobody wrote `out` in this epoch yet: only noted
        access(cross, detector, mem, dense(64), 0, False, core)
    assert mem not in cross._readers
    access(cross, detector, mem, dense(32), 16, True, 0)
    assert bool(detector.hazards) == races
    assert cross._readers[mem][64:].tolist() == [NONE] * (mem.data.size - 64)
