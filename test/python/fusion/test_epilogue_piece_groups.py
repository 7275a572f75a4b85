"""Matmul epilogues that store f16: the pipelined schedule's C pieces share
one L0A sub-tile (`PipelinedPlanning.piece_group`) when the drain, counted
in the bytes it stores, is light next to the cube.

BERT seq 512's V projection on 8 of 32 cores is a 256x768x192 share in four
row tiles with B's strip resident; its epilogue (bias, cast to f16) stores
f16. Its drain was counted as C's f32 bytes (3,072 cycles, over a quarter
of the 9,216 cube cycles), so each of its 192 mads released its L0 slots
alone and the cube stalled a mad latency after each: 20,280 cycles for the
Q/K/V phase, 19,578 with the pieces paired (bench/chip_phases.py).
The strips' piece count is now the cost model's (two for this share:
test/python/fusion/test_col_strips_pieces.py); these tests ask for the
four pieces whose pairing they check (`c-pieces=4`).
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers import compile_program, simulate_levels
from matmul_patterns import bias_epilogue_inputs, matmul_epilogue

from npu.ir import walk
from npu.reference import defractalize

M, N, K = 256, 768, 192  # the V share: rows, reduction, columns
PIPELINE = "npu-lower{cores=1 emit=cce matmul-col-strips=true c-pieces=4}"


def counts(module) -> tuple[int, int]:
    """(L1 -> L0A loads, mads) of the lowered program."""
    names = [op.name for op in walk(module.operation)]
    return names.count("cce.load_l1_to_l0a"), names.count("cce.mad")


@pytest.fixture(scope="module")
def programs():
    return {out: compile_program(matmul_epilogue(M, N, K, ("bias_row", "cast") if out == "f16"
                                                 else ("bias_row",), out, nd=(M, K)), PIPELINE)
            for out in ("f16", "f32")}


def test_f16_stores_pair_the_pieces(programs):
    """Stored as f16 the pieces share their L0A sub-tiles (half the loads per
    mad); stored as f32 (twice the GM write) they do not."""
    a16, m16 = counts(programs["f16"])
    a32, m32 = counts(programs["f32"])
    assert m16 == m32 > 0
    assert 2 * a16 == a32


def test_paired_pieces_compute_the_matmul(programs):
    """Against numpy (the pairing moves no arithmetic: each mad is the one
    tile's), race-free, at the cce level and (when due) the hivm level."""
    module = programs["f16"]
    a, b, bias, ins = bias_epilogue_inputs(module, M, N, K, 5)
    res = simulate_levels(module, ins, strict=True)
    assert not res.hazards
    want = a.astype(np.float64) @ b.astype(np.float64) + defractalize(bias, M, K)[0]
    np.testing.assert_allclose(res.outputs[3].astype(np.float64), want, rtol=2e-3, atol=2e-3)
