"""The pipelined matmul with B's column strip resident
(`npu.costmodel.matmul.col_strips`, `npu.passes.lower_matmul.col_strips`):
one C tile cut into row tiles, B copied in parts during the first and kept
in L1 while the others stream only A, so each tile's drain overlaps the
next tile's work. Same traffic and reduction order as the one tile."""

from __future__ import annotations

import numpy as np
import pytest

from test_matmul_pipelined import BACKENDS, TARGET, compile_and_run, is_pipelined, lowering

from npu.costmodel.matmul.col_strips import a_turns, col_strip_chunks
from npu.costmodel.matmul.fitting import MatmulShape
from npu.costmodel.matmul.tiling import choose_tiling
from npu.ir import walk

M, N, K = 256, 256, 128  # one C tile by the search; two row tiles by the estimate


def guarded_b_copies(module) -> int:
    """GM -> L1 copies of B (%arg1) inside an scf.if: the strip's parts."""
    return sum(1 for op in walk(module.operation)
               if op.name == "cce.copy_gm_to_l1" and op.parent.name == "scf.if"
               and "%arg1" in str(op.operands[0].owner.operands[0].get_name()))


def test_one_tile_becomes_row_tiles_with_b_resident():
    choice = choose_tiling(MatmulShape(M, N, K), TARGET, "os", pipelined=True, resident_a=True)
    assert choice.col_strips and choice.tiles.m < M and choice.tiles.k == K
    # an explicit m keeps the search's tile
    fixed = choose_tiling(MatmulShape(M, N, K), TARGET, "os", m=M, pipelined=True,
                          resident_a=True)
    assert not fixed.col_strips and fixed.tiles.m == M


@pytest.mark.parametrize("backend", list(BACKENDS))
@pytest.mark.parametrize("out", ["f32", "f16"])
def test_col_strips_are_bit_identical_to_the_one_tile(backend, out):
    """Results match numpy with the race detector clean (compile_and_run),
    B's parts are copied under the column start's scf.if, A and B are read
    once, and C is bit for bit the one tile's."""
    module, res = compile_and_run(M, N, K, "npu-lower-matmul{schedule=pipelined col-strips=true},"
                                  + BACKENDS[backend], out)
    assert is_pipelined(module)
    if out == "f32":  # (f16 C: one tile by the estimate)
        assert guarded_b_copies(module) >= 2
    assert res.report["bytes"]["gm_to_l1"] == 2 * (M * N + N * K)
    _, one = compile_and_run(M, N, K, lowering(M, K) + "," + BACKENDS[backend], out)
    np.testing.assert_array_equal(res.outputs[2], one.outputs[2])


def test_where_col_strips_apply():
    """One matrix, one column of C tiles, at least two row tiles dividing M,
    the strip beside two A turns in L1, parts and turns within the event
    ids."""
    t = TARGET
    assert col_strip_chunks(MatmulShape(256, 768, 192), 4, 12, t)
    assert not col_strip_chunks(MatmulShape(256, 768, 192), 16, 12, t)  # one row tile
    assert not col_strip_chunks(MatmulShape(256, 768, 384), 4, 12, t)  # two columns
    assert not col_strip_chunks(MatmulShape(256, 768, 192, batch=2), 4, 12, t)
    assert not col_strip_chunks(MatmulShape(256, 768, 192), 3, 12, t)  # does not divide
    # a strip of 4096 x 192 f16 (1.5 MiB) does not fit L1
    assert not col_strip_chunks(MatmulShape(256, 4096, 192), 4, 12, t)
    for d in col_strip_chunks(MatmulShape(256, 768, 192), 4, 12, t):
        parts, turns = 48 // d, a_turns(4, 12, 48, d, t)
        assert 2 <= turns and parts % turns == 0
        assert parts + turns <= t.events_per_pipe_pair


def test_an_nz_store_share_takes_row_tiles():
    """BERT seq 512's V share on 32 cores (256 x 768 x 192, its f16 Nz store
    since the attention reads the projections' Nz: 384 cycles of epilogue,
    1,536 of stores): strips at the default 4 pieces are estimated 4.7%
    faster than the one tile (15,404 against 16,172); STORE_DRAIN_MARGIN
    (4%, stores outweigh the epilogue) takes them (simulated: the layer
    92,574 -> 90,142 cycles); a vector-heavy drain keeps COL_STRIPS_MARGIN."""
    from npu.costmodel.matmul.col_strips import (COL_STRIPS_MARGIN, STORE_DRAIN_MARGIN,
                                                 col_strips_or, one_tile_time)
    from npu.costmodel.matmul.pipelined import Drain

    shape, drain = MatmulShape(256, 768, 192), Drain(384, 1536.0, True)
    one = choose_tiling(shape, TARGET, "os", pipelined=True, resident_a=True, col_strips=False,
                        drain=drain)
    assert not one.col_strips and one.tiles.m == 256
    strips = col_strips_or(shape, one, TARGET, drain)
    assert strips.col_strips and strips.tiles.m < 256 and STORE_DRAIN_MARGIN < 0.047
    assert round(one_tile_time(shape, TARGET, drain)) == 16172
    # a vector-heavy drain at 4.5%: a small layer's GELU share (64 x 256 x
    # 256 of hidden 256 on 4 cores; 2,048 cycles of epilogue, 512 of stores)
    gelu, heavy = MatmulShape(64, 256, 256), Drain(2048, 512.0, True)
    assert COL_STRIPS_MARGIN == 0.05
    one = choose_tiling(gelu, TARGET, "os", pipelined=True, resident_a=True, col_strips=False,
                        drain=heavy)
    assert one.tiles.m == 64 and round(one_tile_time(gelu, TARGET, heavy)) == 5948
    assert not col_strips_or(gelu, one, TARGET, heavy).col_strips
