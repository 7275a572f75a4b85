"""The pipelined schedule's L0 slots: four where four fit (`l0_turns`), the
mads of two sub-steps back to back behind their loads, so one slot release
follows each pair. A set_flag after a mad holds M until the mad completes
(`mad_latency`), and with two slots the loads of the next sub-step waited
for the release of the one before: BERT seq 512's V share (256 x 768 x 192,
bias and cast to f16, 4 x 4 x 6-block mads) mads every 116 cycles for 96 of
work. Paired, the layer on 32 cores runs 103,109 -> 101,957 cycles
(bench/chip.py; Q/K/V phase 18,699 -> 18,066, ffn_in 17,627 -> 17,041 by
bench/chip_phases.py). Each C element's mads are the same, in the same
order: the bits do not move."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import compile_program, simulate_levels
from matmul_patterns import bias_epilogue_inputs, matmul_epilogue

import npu.passes.lower_matmul.pipelined as pipelined
from npu.costmodel.matmul.pipelined import l0_turns
from npu.ir import walk
from npu.reference import defractalize
from npu.target import get_target

TARGET = get_target("ascend910")
M, N, K = 256, 768, 192  # BERT seq 512's V share: rows, reduction, columns
PIPELINE = "npu-lower{cores=1 emit=cce matmul-col-strips=true}"


def test_four_slots_where_four_fit():
    assert l0_turns(4, 4, 6, TARGET) == 4  # the V share's 8 KB / 12 KB slots
    assert l0_turns(8, 8, 3, TARGET) == 2  # 32 KB of L0A a slot: two fill it


@pytest.fixture(scope="module")
def programs():
    text = matmul_epilogue(M, N, K, ("bias_row", "cast"), "f16", nd=(M, K))
    paired = compile_program(text, PIPELINE)
    keep = pipelined.l0_turns
    pipelined.l0_turns = lambda *_args: 2
    try:
        single = compile_program(text, PIPELINE)
    finally:
        pipelined.l0_turns = keep
    return {4: paired, 2: single}


def releases(module) -> int:
    """set_flags from the cube (M) to the L1 -> L0 loads (MTE1) in the program."""
    return sum(1 for op in walk(module.operation)
               if op.name == "cce.set_flag" and op.attributes["src"].value == "M"
               and op.attributes["dst"].value == "MTE1")


def paired_mads(module) -> tuple[int, int]:
    """(mads right behind another mad, mads) in program order, the flags
    npu-insert-sync put between them aside."""
    names = [op.name for op in walk(module.operation)
             if op.name not in ("cce.set_flag", "cce.wait_flag", "cce.pipe_barrier")]
    mads = [i for i, n in enumerate(names) if n == "cce.mad"]
    return sum(1 for i in mads if names[i - 1] == "cce.mad"), len(mads)


def test_pairs_release_the_slots_half_as_often_same_bits_fewer_cycles(programs):
    """Four slots: the loop's mads in pairs with one slot release each (the
    static count also holds the loop-carried flags), C bit for bit
    the two slots' (race-free, against numpy), in fewer cycles."""
    assert paired_mads(programs[2]) == (0, 48)
    assert paired_mads(programs[4]) == (24, 48)
    assert 0 < releases(programs[4]) + 16 <= releases(programs[2])
    runs = {}
    for turns, module in programs.items():
        a, b, bias, ins = bias_epilogue_inputs(module, M, N, K, 7)
        res = simulate_levels(module, ins, strict=True)
        assert not res.hazards
        runs[turns] = res
    np.testing.assert_array_equal(runs[4].outputs[3], runs[2].outputs[3])
    want = a.astype(np.float64) @ b.astype(np.float64) + defractalize(bias, M, K)[0]
    np.testing.assert_allclose(runs[4].outputs[3].astype(np.float64), want, rtol=2e-3, atol=2e-3)
    assert runs[4].cycles < 0.97 * runs[2].cycles
