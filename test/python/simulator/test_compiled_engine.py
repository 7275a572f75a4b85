"""The compiled scheduling loop (`npu.simulator._cengine`) against the Python
one (`NPU_SIM=python`, the reference): the example programs, random sync and
race programs and fuzzed shapes, run on both, must give identical outputs,
cycles, instruction counts, hazards, reports and per-entry timelines (start,
end, dispatch, flag flows, unconsumed sets), and identical errors.

Skipped when the extension is not built (a machine without a C compiler);
`pip install -e '.[test]'` builds it, so CI runs it."""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import npu.simulator
from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import SimulationError, compiled
from npu.target import get_target
from npu.tools import npu_run

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path[:0] = [str(HERE.parent / d) for d in ("scheduling", "fuzz", "multicore")]

import fuzz_lib  # noqa: E402
from random_cce import random_program as random_cce_program  # noqa: E402
from test_barriers import BARRIER, CHAIN, SPLIT, _compiled, _inputs  # noqa: E402
from test_fuzz_shapes import FAMILIES  # noqa: E402
from test_multicore import RACY  # noqa: E402
from test_sim_race_oracle import random_program as race_program, synced_program  # noqa: E402
from test_sim_strict import two_gm  # noqa: E402

# CI builds the extension (pip install -e '.[test]'): there, not built is a failure.
pytestmark = pytest.mark.skipif(not compiled.available() and not os.environ.get("CI"),
                                reason="npu.simulator._cengine is not built (no C compiler?)")
TARGET = get_target("ascend910")
ENGINES = ("python", "compiled")


def fingerprint(res) -> dict:
    """Everything a run shows, but its wall time."""
    report = {k: v for k, v in res.report.items() if k != "wall_seconds"}
    timelines = [res.timeline] + [t for _, t in res.core_traces]
    return {
        "outputs": [np.asarray(o).tobytes() for o in res.outputs],
        "cycles": res.cycles, "instructions": res.instructions, "hazards": res.hazards,
        "report": json.dumps(report, sort_keys=True, default=str),
        "timelines": [(t.start, t.end, t.dispatch, t.total_cycles, t.busy, t.counts,
                       t.sync_counts, t.flows, t.unconsumed_sets) for t in timelines],
    }


def moved_gm(fingerprint: dict) -> bool:
    """The run's report counts bytes on a path to or from GM."""
    paths = json.loads(fingerprint["report"])["bytes"]
    return any(n and "gm" in path for path, n in paths.items())


@pytest.fixture
def both(monkeypatch):
    """`both(fn)`: fn() under each engine; every simulate() it makes (or the
    error it raises) must be the same. Checks the compiled loop really ran."""
    real_simulate, real_cengine = npu.simulator.simulate, compiled._cengine
    made, checked, walkers, binds, transfers, converted = [], [], [], [], [], []

    def engine(*args, **kwargs):
        made.append(1)
        return real_cengine.Engine(*args, **kwargs)

    def generic(*args):
        checked.append(1)
        return real_cengine.generic(*args)

    def walker(*args):
        walkers.append(1)
        return real_cengine.Walker(*args)

    def runner(*args):  # an operand set's compiled generic path (`csrc/runner.c`)
        checked.append(1)
        return real_cengine.Runner(*args)

    def bind_static(*args):  # an operand set's binding (`csrc/bind.c`)
        binds.append(1)
        return real_cengine.bind_static(*args)

    def bind_run(*args):  # an operand set's runner (`csrc/bind.c`)
        binds.append(1)
        return real_cengine.bind_run(*args)

    def gm_transfer(*args):  # a GM transfer's cycles (`csrc/gmxfer.c`)
        transfers.append(1)
        return real_cengine.gm_transfer(*args)

    def f16_to_f64(*args):  # a mad's operand conversion (`csrc/cubeconv.c`)
        converted.append(1)
        return real_cengine.f16_to_f64(*args)

    monkeypatch.setattr(compiled, "_cengine", SimpleNamespace(
        Engine=engine, Unsupported=real_cengine.Unsupported, KINDS=real_cengine.KINDS,
        cross_runs=real_cengine.cross_runs, generic=generic,
        forget_buffers=real_cengine.forget_buffers, l2_touch=real_cengine.l2_touch,
        bus_take=real_cengine.bus_take, Walker=walker, Runner=runner,
        bind_static=bind_static, bind_run=bind_run, gm_transfer=gm_transfer,
        hand_over=real_cengine.hand_over, f16_to_f64=f16_to_f64,
        round_into_f32=real_cengine.round_into_f32))

    def run(fn):
        seen = {}
        for name in ENGINES:
            monkeypatch.setenv("NPU_SIM", name)
            results = []

            def recording(*args, **kwargs):
                try:
                    res = real_simulate(*args, **kwargs)
                except SimulationError as e:
                    results.append(("error", e.kind, str(e)))
                    raise
                results.append(fingerprint(res))
                return res

            monkeypatch.setattr(npu.simulator, "simulate", recording)
            made.clear()
            checked.clear()
            walkers.clear()
            binds.clear()
            transfers.clear()
            converted.clear()
            try:
                value = fn()
            except SimulationError as e:
                value = ("raised", str(e))
            seen[name] = (value, results)
            assert results, ("nothing was simulated", value)
            assert bool(made) == (name == "compiled")
            # the generic path's checks ran compiled (every run that ends executes some)
            if name == "python":
                assert not checked and not walkers and not binds and not transfers
                assert not converted
            elif any(isinstance(r, dict) for r in results):
                assert checked and binds
                # a run that moved GM bytes timed them with the compiled transfer
                assert transfers or not any(moved_gm(r) for r in results if isinstance(r, dict))
        py, c = seen["python"], seen["compiled"]
        assert len(py[1]) == len(c[1])
        for a, b in zip(py[1], c[1]):
            assert a == b
        assert py[0] == c[0]
        return c
    run.walkers = walkers  # the compiled walks made in the last run (cce programs: none)
    run.converted = converted  # the mads' compiled conversions in the last run
    return run


def run_npu_run(argv: list[str]):
    outcome = fuzz_lib.run_tool(npu_run.main, argv)
    # stdout has the wall time; stderr the errors and hazards, which must agree.
    return outcome.code, outcome.err


EXAMPLES = ["bert_transpose.mlir", "elementwise_add_1m.mlir", "exp_1m.mlir",
            "matmul_512x768x768.mlir", "ffn_block.onnx"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_match(both, name):
    both(lambda: run_npu_run([str(ROOT / "examples" / name), "--check"]))
    if name != "bert_transpose.mlir":  # a cce program; the others run at the hivm level
        assert both.walkers, "the compiled scalar walk did not run"
    if name.startswith(("matmul", "ffn")):
        assert both.converted, "the mads' compiled conversion did not run"


@pytest.mark.parametrize("seed", range(6))
def test_random_sync_programs_match(both, seed):
    """random_cce's programs without sync (racy: hazards to compare) and
    with npu-insert-sync (race-free)."""
    text = random_cce_program(seed)
    inputs = [np.random.default_rng(seed).uniform(-1, 1, 4096).astype(np.float16)
              for _ in range(2)]

    def run():
        ctx = make_context()
        racy = npu.simulator.simulate(parse_module(text, ctx), inputs, target=TARGET,
                                      strict=False)
        module = parse_module(text, ctx)
        run_pipeline(module, "npu-insert-sync{mode=precise sink-sets=true}", TARGET)
        npu.simulator.simulate(module, inputs, target=TARGET)
        return len(racy.hazards)
    both(run)


@pytest.mark.parametrize("seed", range(6))
def test_random_sync_programs_match_as_hivm(both, seed):
    """The same programs lowered to hivm: their scalar walk is compiled too
    (addresses and words computed at run time, the mask register)."""
    text = random_cce_program(seed)
    inputs = [np.random.default_rng(seed).uniform(-1, 1, 4096).astype(np.float16)
              for _ in range(2)]

    def run():
        ctx = make_context()
        hazards = []
        for sync in ("", "npu-insert-sync{mode=precise sink-sets=true},"):
            module = parse_module(text, ctx)
            run_pipeline(module, f"builtin.module({sync}npu-lower-cce-to-hivm)", TARGET)
            hazards.append(npu.simulator.simulate(module, inputs, target=TARGET,
                                                  strict=bool(sync)).hazards)
        return hazards
    both(run)
    assert both.walkers


@pytest.mark.parametrize("seed", range(8))
def test_race_oracle_programs_match(both, seed):
    for make in (race_program, synced_program):
        k, _ = make(seed)
        x = np.ones(512, np.float16)
        both(lambda: npu.simulator.simulate(k.parse(), [x, np.zeros_like(x)],
                                            strict=False).hazards)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_fuzz_shapes_match(both, family, tmp_path):
    for seed in range(2):
        text = FAMILIES[family](random.Random(f"{family}-{seed}"))
        path = fuzz_lib.write_case(tmp_path, text)
        both(lambda: run_npu_run([str(path), "--check", "--seed", str(seed)]))


@pytest.mark.parametrize("cut", [None, 0, 1])
def test_chip_barriers_and_cross_core_races_match(both, cut):
    """4 cores with two chip barriers; with one deleted, cores race in GM
    (reported by the cross-core check, strict and not)."""
    text = _compiled(CHAIN, SPLIT)
    if cut is not None:
        at = -1
        for _ in range(cut + 1):
            at = text.index(BARRIER, at + 1)
        text = text[:at] + text[at + len(BARRIER):]
    for strict in (True, False):
        both(lambda: npu.simulator.simulate(parse_module(text, make_context()), _inputs(),
                                            strict=strict).hazards)


def test_two_cores_writing_one_tensor_match(both):
    module = parse_module(RACY, make_context())
    run_pipeline(module, "builtin.module(npu-lower)", TARGET)
    inputs = [np.ones(2048, np.float16), np.zeros(2048, np.float16)]
    _, results = both(lambda: npu.simulator.simulate(module, inputs, strict=False).hazards)
    assert [h["kind"] for h in results[0]["hazards"]] == ["race"]


def test_deadlock_is_reported_alike(both):
    k = two_gm()
    k.wait_flag("MTE3", "V", 0)
    k.set_flag("V", "MTE3", 0)
    k.wait_flag("V", "MTE3", 0)
    k.set_flag("MTE3", "V", 0)
    x = np.zeros(256, np.float16)
    _, results = both(lambda: npu.simulator.simulate(k.parse(), [x, x]))
    assert results[0][0] == "error" and "every pipe with work left is blocked" in results[0][2]


def test_the_extension_is_built():
    assert compiled.available(), "pip install -e . did not build npu.simulator._cengine"


def test_python_is_chosen_by_the_environment(monkeypatch):
    monkeypatch.setenv("NPU_SIM", "python")
    assert compiled.engine() is None
    monkeypatch.setenv("NPU_SIM", "")
    assert compiled.engine() is not None
