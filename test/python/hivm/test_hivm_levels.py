"""The hivm level must compute and time exactly what the cce level does.

The examples and random planned cce programs (overlapping buffers, loops
whose addresses move with the induction variable, all pipes) are lowered
with `npu-lower-cce-to-hivm` and simulated at both levels: outputs bit for
bit, cycles, instruction counts and hazards must agree. (Every other
simulator-backed lowering test also compares both levels through
`helpers.simulate_levels`.)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers import simulate_levels
from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import SimulationError, simulate
from npu.target import get_target

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "scheduling"))
from random_cce import random_program  # noqa: E402

TARGET = get_target()
# The BERT-sized matmul simulates for seconds per level: --runslow only (the
# matmul lowerings are compared at both levels by test/python/matmul).
EXAMPLES = [pytest.param(p, marks=pytest.mark.slow) if "matmul" in p.stem else p
            for p in sorted((Path(__file__).resolve().parents[3] / "examples").glob("*.mlir"))]


def _inputs(module, seed: int) -> list[np.ndarray]:
    from npu.simulator.core import find_entry
    from npu.simulator.run_inputs import random_inputs

    return random_inputs(find_entry(module, None), seed)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: Path(p).stem)
def test_examples_agree_at_both_levels(path):
    module = parse_module(path.read_text(), make_context())
    run_pipeline(module, "npu-lower{emit=cce}", TARGET)
    result = simulate_levels(module, _inputs(module, 0), TARGET, force_hivm=True, strict=True)
    assert result.cycles > 0 and not result.hazards


def _random_inputs(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, 4096).astype(np.float16), rng.uniform(-1, 1, 4096).astype(np.float16)]


@pytest.mark.parametrize("seed", range(6))
def test_random_synchronised_programs_agree(seed):
    module = parse_module(random_program(seed), make_context())
    run_pipeline(module, "npu-insert-sync", TARGET)
    simulate_levels(module, _random_inputs(seed), TARGET, force_hivm=True, strict=True)


@pytest.mark.parametrize("seed", range(4))
def test_random_racy_programs_report_the_same_hazards(seed):
    """Without sync the programs race; non-strict runs collect the hazards,
    and both levels must find the same number (from the same accesses)."""
    module = parse_module(random_program(seed), make_context())
    result = simulate_levels(module, _random_inputs(seed), TARGET, force_hivm=True, strict=False)
    assert result.hazards or seed not in (0, 1), "the generator should make these programs race"


def test_strict_faults_agree():
    """A racy program fails strictly at both levels, with the same kind of fault."""
    text = random_program(0)
    module = parse_module(text, make_context())
    with pytest.raises(SimulationError) as at_cce:
        simulate(module, _random_inputs(0), target=TARGET, strict=True)
    run_pipeline(module, "npu-lower-cce-to-hivm", TARGET)
    with pytest.raises(SimulationError) as at_hivm:
        simulate(module, _random_inputs(0), target=TARGET, strict=True)
    assert at_cce.value.kind == at_hivm.value.kind
    assert at_cce.value.where == at_hivm.value.where


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6, 60))
def test_random_synchronised_programs_agree_many_seeds(seed):
    test_random_synchronised_programs_agree(seed)
