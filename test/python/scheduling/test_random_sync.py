"""Randomized sync tester: random cce programs over overlapping buffers,
synchronised by npu-insert-sync, must run race-free on the strict simulator
and compute exactly what the serialised (program-order) run computes."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import SimulationError, simulate
from npu.target import get_target
from helpers import simulate_levels
from random_cce import random_program

TARGET = get_target("ascend910")
FAST_SEEDS = range(30)
SLOW_SEEDS = range(30, 600)
# npu-insert-sync options: both modes, and precise with set_flags sunk past
# runs of same-pipe instructions (npu-lower's default).
MODES = ["mode=precise", "mode=barrier", "mode=precise sink-sets=true"]


def _inputs(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, 4096).astype(np.float16), rng.uniform(-1, 1, 4096).astype(np.float16)]


def check_seed(seed: int, mode: str, target=TARGET, loop_rate: float = 0.15,
               strided: bool = False) -> None:
    text = random_program(seed, loop_rate=loop_rate, strided=strided)
    ctx = make_context()
    reference = simulate(parse_module(text, ctx), _inputs(seed), target=target, serialize=True)
    # Without sync the strict simulator must find a race in most programs:
    # that is what makes the synchronised run below a real test.
    module = parse_module(text, ctx)
    run_pipeline(module, f"npu-insert-sync{{{mode}}}", target)
    try:
        res = simulate_levels(module, _inputs(seed), target, strict=True)
    except SimulationError as e:
        pytest.fail(f"seed {seed} ({mode}): {e}\n{module}")
    for got, want in zip(res.outputs, reference.outputs):
        assert got.view(np.uint16).tolist() == want.view(np.uint16).tolist(), f"seed {seed} ({mode})"


@pytest.mark.parametrize("mode", MODES)
def test_random_programs_are_race_free(mode):
    for seed in FAST_SEEDS:
        check_seed(seed, mode)


@pytest.mark.parametrize("mode", MODES[::2])
def test_random_programs_with_strided_gm_copies_are_race_free(mode):
    """GM copies in bursts with gaps: the analysis tests their bursts, not
    their hulls (`Range.period`), so a copy into another's gaps is not
    ordered after it; one that meets a burst must be."""
    for seed in FAST_SEEDS:
        check_seed(seed, mode, strided=True)


@pytest.mark.parametrize("span", ["fit", "block"])
def test_random_programs_with_few_event_ids_are_race_free(span):
    """One event id per pipe pair: the loops' carried pairs run out of ids
    in most programs, so the fallbacks (carried-span=fit fitting pre-sets
    and balancing waits around their loops, then full barriers) are what
    keeps them race-free."""
    few = replace(TARGET, events_per_pipe_pair=1)
    for seed in FAST_SEEDS:
        check_seed(seed, f"mode=precise sink-sets=true carried-span={span}", few)


@pytest.mark.slow
@pytest.mark.parametrize("span", ["fit", "block"])
def test_random_programs_with_few_event_ids_are_race_free_slow(span):
    few = replace(TARGET, events_per_pipe_pair=2)
    for seed in SLOW_SEEDS:
        check_seed(seed, f"mode=precise sink-sets=true carried-span={span}", few)


def test_unsynchronised_programs_do_race():
    """The generator makes real hazards: most seeds race without the pass."""
    raced = 0
    for seed in range(10):
        module = parse_module(random_program(seed), make_context())
        try:
            simulate(module, _inputs(seed), target=TARGET, strict=True)
        except SimulationError as e:
            # an unordered read may also see its bytes before their first write
            assert "race" in str(e) or "uninitialized" in str(e), str(e)
            raced += 1
    assert raced >= 7


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_random_programs_are_race_free_many_seeds(mode):
    for seed in SLOW_SEEDS:
        check_seed(seed, mode)
