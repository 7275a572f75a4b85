"""Runners written per operand set (`simulator/fast_path.py`) against the
generic execution path they replace: on racy, synchronised, padded and
looping programs, at the cce and hivm levels, with and without numerics, a
run where every operand set uses its runner from its first use must report
exactly what a run with the generic path alone reports (outputs, cycles,
hazards, the whole report)."""

from __future__ import annotations

import numpy as np
import pytest

from npu.pipeline import run_pipeline
from npu.simulator import SimulationError, simulate
from npu.simulator.machine import Machine
from npu.target import get_target

from sim_kernels import Kernel, gm, mem
from test_sim_padding import half_initialised_then_moved, tiny_add, vnchwconv_of_one_row
from test_sim_race_oracle import TILE, TILES, random_program, synced_program


def outcome(module, inputs: list[np.ndarray], runner_from_use: int | None, numerics: bool):
    """What a non-strict run reports, or the error a strict run raises."""
    saved = Machine.runner_from_use, Machine.compiled_runner_from_use
    # the Python generic path's and the compiled one's (`csrc/runner.c`)
    Machine.runner_from_use = Machine.compiled_runner_from_use = runner_from_use
    try:
        try:
            res = simulate(module, [a.copy() for a in inputs], strict=False, numerics=numerics)
        except SimulationError as e:
            return ("error", str(e))
    finally:
        Machine.runner_from_use, Machine.compiled_runner_from_use = saved
    report = dict(res.report)
    report.pop("wall_seconds")
    outputs = [o.tobytes() for o in res.outputs] if numerics else None
    return outputs, res.cycles, res.hazards, report, res.timeline.start, res.timeline.end


def assert_same(module, inputs: list[np.ndarray]) -> None:
    for numerics in (True, False):
        generic = outcome(module, inputs, None, numerics)
        for runner_from_use in (1, 2, 3):  # runners from the first, second, third use
            assert outcome(module, inputs, runner_from_use, numerics) == generic


def tiles_input() -> list[np.ndarray]:
    x = np.ones(TILES * TILE, np.float16)
    return [x, np.zeros_like(x)]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("make", [random_program, synced_program])
def test_runners_match_the_generic_path_on_oracle_programs(make, seed):
    kernel, _ = make(seed)
    assert_same(kernel.parse(), tiles_input())


@pytest.mark.parametrize("seed", range(4))
def test_runners_match_the_generic_path_at_the_hivm_level(seed):
    for make in (random_program, synced_program):
        module = make(seed)[0].parse()
        run_pipeline(module, "npu-plan-memory,npu-lower-cce-to-hivm", get_target())
        assert_same(module, tiles_input())


def test_runners_match_the_generic_path_on_uninitialised_data():
    rows = get_target().fractal
    lanes = get_target().lanes(2)
    rng = np.random.default_rng(3)
    n = 15
    cases = [(tiny_add(mask=n + 1), [rng.uniform(-2, 2, n).astype(np.float16)] * 2
              + [np.zeros(n, np.float16)]),
             (half_initialised_then_moved(0), [np.ones(2 * lanes, np.float16),
                                               np.zeros(2 * lanes, np.float16)]),
             (half_initialised_then_moved(lanes), [np.ones(2 * lanes, np.float16),
                                                   np.zeros(2 * lanes, np.float16)]),
             (vnchwconv_of_one_row(2), [np.ones(rows, np.float16),
                                        np.zeros((rows, rows), np.float16)])]
    for kernel, inputs in cases:
        assert_same(kernel.parse(), inputs)


def looping_kernel(iterations: int, racy: bool) -> Kernel:
    """Tiles streamed GM -> UB -> vadds -> GM in an scf.for, so each UB
    operand set is used once per iteration; `racy` drops the flag that orders
    the store after the vector op."""
    n = iterations * TILE
    k = Kernel([("x", gm([n])), ("y", gm([n]))])
    k.alloc("a", mem([TILE], "f16", "ub"))
    k.alloc("b", mem([TILE], "f16", "ub"))
    for name, value in (("c0", 0), ("c1", 1), ("cn", iterations), ("ct", TILE)):
        k.const(name, value)
    k.set_flag("MTE3", "MTE2", 0)
    k.raw("scf.for %i = %c0 to %cn step %c1 {")
    k.indent += 1
    k.raw("%o = arith.muli %i, %ct : index")
    typ = f'memref<{TILE}xf16, strided<[1], offset: ?>, "gm">'
    for name, src in (("xs", "x"), ("ys", "y")):
        k.raw(f'%{name} = memref.subview %{src}[%o] [{TILE}] [1] : memref<{n}xf16, "gm"> to {typ}')
        k.types[name] = typ
    k.wait_flag("MTE3", "MTE2", 0)
    k.copy("gm_to_ub", "xs", "a", 1, TILE * 2 // 32)
    k.sync("MTE2", "V")
    k.vector("vadds", "b", "a", repeat=1, mask=TILE, scalar=1.0)
    if not racy:
        k.sync("V", "MTE3")
    k.copy("ub_to_gm", "b", "ys", 1, TILE * 2 // 32)
    k.set_flag("MTE3", "MTE2", 0)
    k.indent -= 1
    k.raw("}")
    k.wait_flag("MTE3", "MTE2", 0)
    return k


@pytest.mark.parametrize("racy", [False, True])
def test_runners_match_the_generic_path_in_loops(racy):
    x = np.random.default_rng(5).uniform(-1, 1, 6 * TILE).astype(np.float16)
    module = looping_kernel(6, racy).parse()
    assert_same(module, [x, np.zeros_like(x)])
    res = simulate(module, [x, np.zeros_like(x)], strict=False)
    assert any(h["kind"] == "race" for h in res.hazards) == racy
    if not racy:
        np.testing.assert_array_equal(res.outputs[1], x + np.float16(1))
