"""The per-core work around the scheduling loop: the launch's instruction
table shared by its cores (`trace_codes.InstrTable`), the compiled loop fed
from it, the memory system's compiled loops (`csrc/memsys.c`) and the
reports' numpy sums. Each against its reference: the Python memory system
(`NPU_SIM=python`), the loop reading each instruction itself, a Python loop
of `Hotspot.add`, and full reports (text, JSON, per-op) of a multi-core
model run on both engines."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np
import pytest

import npu
from npu.simulator import compiled, trace_codes
from npu.simulator.access import dense, from_bursts, from_elements
from npu.simulator.memory import Memory
from npu.simulator.memory_system import MemorySystem
from npu.simulator.report import Hotspot, format_text, spot_sums
from npu.target import ASCEND910

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frontend"))
from onnx_models import mlp  # noqa: E402  (the frontend tests' model builders)

needs_c = pytest.mark.skipif(not compiled.available(), reason="_cengine is not built")
FORCED = "npu-lower{cores=4 split-cores-min-bytes=0 split-cores-estimate=false}"


@pytest.fixture(scope="module")
def kernel():
    return npu.compile(mlp(), target="ascend910", pipeline=FORCED)


def _model_run(kernel, monkeypatch, engine: str, numerics: bool) -> dict:
    monkeypatch.setenv("NPU_SIM", engine)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(kernel.interface.inputs[0].shape).astype(np.float32)
    _, report = kernel(x, numerics=numerics)
    kept = {k: v for k, v in report.items()
            if k not in ("wall_seconds", "compile_seconds", "compile_stage_seconds", "trace",
                         "html")}
    return {"text": format_text(kept), "json": json.dumps(kept, sort_keys=True, default=str)}


@needs_c
@pytest.mark.parametrize("numerics", [False, True])
def test_full_reports_of_a_multi_core_model_are_the_same_on_both_engines(kernel, monkeypatch,
                                                                         numerics):
    py = _model_run(kernel, monkeypatch, "python", numerics)
    c = _model_run(kernel, monkeypatch, "compiled", numerics)
    assert json.loads(py["json"])["block_dim"] > 1
    assert json.loads(py["json"])["per_op"]
    assert py["text"] == c["text"]
    assert py["json"] == c["json"]


@needs_c
def test_the_loop_fed_from_the_table_equals_the_loop_reading_instructions(kernel, monkeypatch):
    """The compiled loop given the launch's table (`TraceCodes.engine_info`)
    against the same loop reading each instruction's attributes."""
    fed = _model_run(kernel, monkeypatch, "compiled", False)
    monkeypatch.setattr(trace_codes.TraceCodes, "engine_info", lambda self: None)
    assert _model_run(kernel, monkeypatch, "compiled", False) == fed


def test_cores_share_the_instruction_table():
    class I:  # the facts an instruction carries (`Instr.finish`)
        def __init__(self, kind, key=None):
            self.facts = (kind, 1, 1, 0, 0, 3, None, "here", "op")
            self.kind, self.key, self.latency, self.gm_operand = kind, key, 2, None
            self.flag_text, self.where = "MTE2 -> V, event 0", "here"
    a, b, s, w = I(0), I(0), I(1, (1, 2, 0)), I(2, (1, 2, 0))
    table = trace_codes.InstrTable()
    one = trace_codes.TraceCodes.of([(a, (), 1), (s, (), 1), (b, (), 1), (w, (), 1)], table)
    two = trace_codes.TraceCodes.of([(b, (), 1), (a, (), 1), (b, (), 1), (w, (), 1)], table)
    assert table.instrs == [a, s, b, w]  # each once, in order of first dispatch
    assert one.instrs == [a, s, b, w] and list(one.n) == [1, 1, 1, 1]
    assert two.instrs == [b, a, w] and list(two.n) == [2, 1, 1]
    assert list(two.codes) == [0, 1, 0, 2]
    assert two.counts == {b: 2, a: 1, w: 1}
    assert list(two.column("kind")) == [0, 0, 0, 2]
    with pytest.raises(npu.simulator.SimulationError, match="no matching set_flag"):
        trace_codes.check_flag_pairs([(b, (), 1), (w, (), 1)], two)
    trace_codes.check_flag_pairs([], one)


@pytest.mark.parametrize("seed", range(4))
def test_spot_sums_equal_hotspot_add_entry_by_entry(seed):
    rng = np.random.default_rng(seed)
    n, n_spots = 400, 7
    code = rng.integers(-4, n_spots, n)
    unit = np.where(rng.random(n) < 0.5, rng.integers(0, 50, n), -1)
    dispatched = np.sort(rng.integers(0, 2000, n))
    starts = dispatched + rng.integers(0, 300, n)
    ends = starts + rng.integers(0, 90, n)
    fast = [Hotspot("x", "op", 1) for _ in range(n_spots)]
    spot_sums(fast, code, unit, starts, ends, dispatched)
    slow = [Hotspot("x", "op", 1) for _ in range(n_spots)]
    for i in range(n):
        if code[i] >= 0:
            held = int(unit[i]) if unit[i] >= 0 else int(ends[i] - starts[i])
            slow[code[i]].add(held, int(dispatched[i]), int(starts[i]))
    assert [h.as_dict() for h in fast] == [h.as_dict() for h in slow]


def _transfers(rng: random.Random, mems: list[Memory]) -> list[tuple]:
    patterns = [dense(4096), dense(100), dense(64 * 1024), from_bursts(16, 512, 2048),
                from_bursts(8, 96, 160), from_elements(np.arange(0, 2048, 3), 2)]
    out, t = [], 0
    for _ in range(300):
        t += rng.choice([0, 1, 7, 64, 500, 4000])
        pat = rng.choice(patterns)
        addr = rng.choice([0, 32, 512, 4096, 8192 + 64])
        out.append((t, pat.nbytes, rng.choice([1, 4, 16]), rng.choice([32, 64, 128]),
                    rng.choice(mems), pat, addr, rng.random() < 0.3))
    return out


@needs_c
@pytest.mark.parametrize("seed", range(3))
def test_compiled_memory_system_equals_python(monkeypatch, seed):
    """Random transfers (dense, bursts, scattered; reads and writes; a bus
    saturated enough to grow its calendar) on both: the same cycles and state."""
    mems = [Memory(f"gm:{k}", "gm", 1 << 18) for k in range(3)]
    systems = {}
    for engine in ("python", "compiled"):
        monkeypatch.setenv("NPU_SIM", engine)
        ms = systems[engine] = MemorySystem(ASCEND910)
        assert (ms._cbus is None) == (engine == "python")
        ms.cycles = [ms.transfer(*tr) for tr in _transfers(random.Random(seed), mems)]
    py, c = systems["python"], systems["compiled"]
    assert py.cycles == c.cycles
    assert py.room.size > 1024  # the calendar grew
    assert np.array_equal(py.room, c.room)
    assert py.summary(10**6) == c.summary(10**6)
    for mem in mems:
        assert np.array_equal(py._last(mem), c._last(mem))
