"""Column strips' C piece count is a cost-model choice (`col_strips_or`,
`piece_counts`): BERT seq 512's 256 x 768 x 192 shares (V's projection on
8 of 32 cores, ffn_in's on 16 x 2) run as four row tiles of 64 rows that
keep the one tile's L0 sub-step (4 reduction blocks), so each of four
pieces paid a mad latency per sub-step; in two pieces the layer on 32
cores runs 105,380 -> 103,429 cycles (bench/chip.py). The count
only refines strips that beat the one tile at the default count: seq 128's
64-row shares stay one tile (its strips in fewer pieces were slower)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import compile_program, simulate_levels
from matmul_patterns import bias_epilogue_inputs, matmul_epilogue

from npu.costmodel.matmul.col_strips import col_strips_time, one_tile_sub, piece_counts
from npu.costmodel.matmul.fitting import MatmulShape
from npu.costmodel.matmul.pipelined import Drain
from npu.costmodel.matmul.tiling import choose_tiling
from npu.ir import walk
from npu.reference import defractalize
from npu.target import get_target

TARGET = get_target("ascend910")
M, N, K = 256, 768, 192  # BERT seq 512's V share: rows, reduction, columns
PIPELINE = "npu-lower{cores=1 emit=cce matmul-col-strips=true%s}"
V_DRAIN = Drain(384.0, 4608.0, True)  # bias and cast to f16 (npu-lower-matmul's drain_cost)


def choice(m: int, n: int, k: int, drain: Drain):
    return choose_tiling(MatmulShape(m, n, k, out_bytes=2), TARGET, "os", pipelined=True,
                         resident_a=True, drain=drain, epilogue_cycles=drain.vector_cycles)


def test_the_v_share_takes_two_pieces():
    c = choice(M, N, K, V_DRAIN)
    assert c.col_strips and c.tiles.m == 64 and c.pieces == 2
    assert piece_counts(12, True) == [4, 2, 1]


def test_the_estimate_mads_at_the_one_tiles_sub_step():
    """The strips keep the one 16 x 12-block tile's sub-step (4 blocks), not
    a 4 x 12-block row tile's own (12): three times the mads, each waiting
    out a mad latency, so the estimate of four pieces is the higher."""
    assert one_tile_sub(16, 12, 48, 4, [48, 24, 16, 12, 8, 6, 4, 3, 2, 1], TARGET) == 4
    shape = MatmulShape(M, N, K, out_bytes=2)
    four = col_strips_time(shape, 4, 12, 24, TARGET, V_DRAIN, pieces=4)
    two = col_strips_time(shape, 4, 12, 24, TARGET, V_DRAIN, pieces=2)
    assert two < four


@pytest.mark.parametrize("k, drain", [(128, Drain(64.0, 768.0, True)),  # q_proj at seq 128
                                      (192, Drain(1536.0, 384.0, True))])  # ffn_in + GELU
def test_seq_128_shares_stay_one_tile(k, drain):
    c = choice(64, N, k, drain)
    assert not c.col_strips and c.pieces == 0


def counts(module) -> int:
    return [op.name for op in walk(module.operation)].count("cce.mad")


@pytest.fixture(scope="module")
def programs():
    text = matmul_epilogue(M, N, K, ("bias_row", "cast"), "f16", nd=(M, K))
    return {p: compile_program(text, PIPELINE % ("" if p == 0 else f" c-pieces={p}"))
            for p in (0, 4)}


def test_two_pieces_halve_the_mads_with_the_same_bits(programs):
    """Two pieces: half the mads of four in the program (each over twice
    the columns at the same sub-step), and C bit for bit the four pieces', race-free and
    against numpy."""
    assert 2 * counts(programs[0]) == counts(programs[4]) > 0
    outs = []
    for p in (0, 4):
        a, b, bias, ins = bias_epilogue_inputs(programs[p], M, N, K, 7)
        res = simulate_levels(programs[p], ins, strict=True)
        assert not res.hazards
        outs.append(res.outputs[3])
    np.testing.assert_array_equal(outs[0], outs[1])
    want = a.astype(np.float64) @ b.astype(np.float64) + defractalize(bias, M, K)[0]
    np.testing.assert_allclose(outs[0].astype(np.float64), want,
                               rtol=2e-3, atol=2e-3)
