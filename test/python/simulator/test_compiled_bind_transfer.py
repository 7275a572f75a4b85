"""The compiled binding of an operand set (`csrc/bind.c`, `bind_static`) and
the compiled GM transfer (`csrc/gmxfer.c`, `gm_transfer`) against their
Python references (`SharedBindings.bind_python`, `MemorySystem.transfer` on
the Python engine's loops), call by call on random operands: the same
entries, errors, cycles and memory-system state, or the test fails.
(`test_compiled_engine.py` compares whole runs of both engines.)"""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest

from npu.simulator import SimulationError, compiled
from npu.simulator.access import dense, from_bursts, from_elements
from npu.simulator.machine import BOUND_CACHE_ENTRIES, SharedBindings
from npu.simulator.memory import Memory, Region
from npu.simulator.memory_system import MemorySystem
from npu.simulator.stamps import BLOCKS_CACHE_ENTRIES, forget_granules, granule_answers
from npu.target import get_target

pytestmark = pytest.mark.skipif(not compiled.available(),
                                reason="npu.simulator._cengine is not built (no C compiler?)")
TARGET = get_target("ascend910")


def _pattern(rng: random.Random):
    kind = rng.randrange(3)
    if kind == 0:
        return dense(32 * rng.randint(1, 40) + rng.choice([0, 0, 0, 2]))
    if kind == 1:
        burst = 32 * rng.randint(1, 8) * rng.choice([1, 1, 4])
        return from_bursts(rng.randint(2, 6), burst, burst + 32 * rng.randint(0, 20))
    return from_elements(np.array(sorted(rng.sample(range(300), rng.randint(1, 20)))), 2)


def _state(ms: MemorySystem) -> tuple:
    lasts = sorted((m.name, a.tobytes()) for m, a in ms._last_touch.items())
    return (ms.room.tobytes(), lasts, dict(ms.gm_bytes), ms.l2_hit_bytes, ms.bus_bytes,
            ms.last_cycle)


@pytest.mark.parametrize("seed", range(6))
def test_gm_transfer_is_memory_system_transfer(monkeypatch, seed):
    """Cycles and state after each of 300 random transfers (reads and writes,
    dense, bursts and scattered lines, repeated lines that hit in L2, a
    calendar that must grow) agree with the Python memory system's."""
    rng = random.Random(seed)
    monkeypatch.setenv("NPU_SIM", "python")
    py = MemorySystem(TARGET)
    monkeypatch.setenv("NPU_SIM", "compiled")
    c = MemorySystem(TARGET)
    gm_c = compiled.gm_timer(c)
    assert gm_c.func is compiled._cengine.gm_transfer
    fallbacks = []  # what the compiled transfer hands to MemorySystem.transfer
    python_transfer = c.transfer
    c.transfer = lambda *args: fallbacks.append(1) or python_transfer(*args)
    mems = {ms: [Memory(f"g{i}", "gm", 1 << 16) for i in range(3)] for ms in (py, c)}
    ub = Memory("ub", "ub", 1 << 16)
    t0 = 0
    for _ in range(300):
        pat = _pattern(rng)
        write = rng.random() < 0.4
        which = rng.randrange(3)
        base = 512 * rng.randrange(4)
        off = rng.randrange(0, 2000, 1 if rng.random() < 0.3 else 16)
        t0 += rng.choice([0, 1, 7, 64, 500, 20000])
        rate = rng.choice([32, 64, 128])
        nbytes = pat.nbytes
        cycles = []
        for ms in (py, c):
            gm = Region(mems[ms][which], base, 1 << 15)
            views = ((Region(ub, 0, 1 << 15), 0), (gm, off)) if write else \
                ((gm, off), (Region(ub, 0, 1 << 15), 0))
            instr = SimpleNamespace(gm_operand=1 if write else 0, nbytes=nbytes,
                                    n_bursts=rng.randint(1, 4) if ms is py else n_bursts,
                                    rate=rate, src_pat=pat, dst_pat=pat, esizes=(2, 2))
            n_bursts = instr.n_bursts
            if ms is py:
                k = instr.gm_operand
                cycles.append(py.transfer(t0, nbytes, n_bursts, rate, gm.mem, pat,
                                          gm.base + off * 2, k == 1))
            else:
                cycles.append(gm_c(t0, instr, views))
        assert cycles[0] == cycles[1]
        assert _state(py) == _state(c)
    assert 0 < len(fallbacks) < 200  # scattered lines only: the rest ran compiled


def _shared_pair(monkeypatch):
    monkeypatch.setenv("NPU_SIM", "compiled")
    c = SharedBindings()
    assert c._cbind is not None
    py = SharedBindings()
    py._cbind = None
    return py, c


def _entry_shape(entry) -> tuple:
    """An entry with its clean-read keys replaced by their (mem, addr) names
    and its memories by their names (the keys are fresh objects per binder)."""
    views, instr, mems, addrs, reads, writes = entry
    name = lambda r: tuple(x.name if isinstance(x, Memory) else x for x in r)  # noqa: E731
    reads = tuple(name(r[:4]) + (None,) + tuple(
        (x.start, x.stop) if isinstance(x, slice) else
        x.tolist() if isinstance(x, np.ndarray) else x for x in r[5:6]) + r[6:] for r in reads)
    writes = tuple(name(w[:4]) + tuple(
        (x.start, x.stop) if isinstance(x, slice) else
        x.tolist() if isinstance(x, np.ndarray) else x for x in w[4:5]) + w[5:] for w in writes)
    return views, instr, [m.name for m in mems], addrs, reads, writes


@pytest.mark.parametrize("seed", range(6))
def test_bind_static_is_bind_python(monkeypatch, seed):
    """Random operand sets (aligned or not, in or out of bounds, writes to a
    constant, cross-core GM or not) bind to the same entries, or fail with
    the same error, in both; equal reads share one clean-read key."""
    rng = random.Random(seed)
    py, c = _shared_pair(monkeypatch)
    fallbacks = []  # what the compiled bind hands to bind_python (errors)
    python_bind = c.bind_python
    c.bind_python = lambda *args: fallbacks.append(1) or python_bind(*args)
    gm = Memory("gm0", "gm", 1 << 14)
    const = Memory("w", "gm", 1 << 12)
    const.constant = True
    ub = Memory("ub", "ub", 1 << 14)
    errors = []
    for _ in range(200):
        forget_granules()
        src_mem = rng.choice([gm, const, ub])
        dst_mem = rng.choice([gm, ub, ub, const])
        pats = [_pattern(rng), _pattern(rng)]
        instr = SimpleNamespace(
            name="cce.copy", esizes=(2, 2), who="x", where="loc:1:1",
            operands=[SimpleNamespace(type_text="memref<?xf16>")] * 2,
            plan=tuple((k, p.lo, p.hi, p, p.dense, rng.choice([32, 32, 2]), k == 1, p.key)
                       for k, p in enumerate(pats)))
        views = tuple((Region(m, rng.choice([0, 64, 4096]), rng.choice([1 << 12, 1 << 13]),
                              rng.randrange(3), f"{m.name}-region"),
                       rng.choice([0, 16, 3, 2000, 4096, 9000]))
                      for m in (src_mem, dst_mem))
        cross = rng.random() < 0.5
        got = []
        for shared in (py, c):
            try:
                entry = shared.bind(instr, views, cross)
            except SimulationError as e:
                got.append(("error", str(e)))
                continue
            assert shared.bindings[id(views)] is entry
            got.append(_entry_shape(entry))
        assert got[0] == got[1]
        errors.append(got[0])
    # one key per distinct (memory, address, pattern) read, the same number in both
    assert len(py.tokens) == len(c.tokens)
    assert len(fallbacks) == sum(g[0] == "error" for g in errors)


def test_bind_static_shares_read_keys_and_granules(monkeypatch):
    """Binding the same read twice gives the same clean-read key; a dense
    access's granule answer is the one Stamps.plan keeps."""
    _, c = _shared_pair(monkeypatch)
    forget_granules()
    mem = Memory("gm0", "gm", 1 << 14)
    pat = dense(256)
    instr = SimpleNamespace(name="cce.copy", esizes=(2, 2), plan=((0, 0, 256, pat, True, 32,
                                                                    False, pat.key),))
    region = Region(mem, 0, 1 << 14)
    a = c.bind(instr, ((region, 64),), False)
    b = c.bind(instr, ((region, 64),), False)
    assert a[4][0][4] is b[4][0][4]
    assert a[4][0][5] == slice(4, 12)
    assert granule_answers()[(mem.wstamp.g, pat.key, 128)] == slice(4, 12)
    assert mem.wstamp.plan(pat, 128) == slice(4, 12)
    assert BOUND_CACHE_ENTRIES > 0 and BLOCKS_CACHE_ENTRIES > 0
