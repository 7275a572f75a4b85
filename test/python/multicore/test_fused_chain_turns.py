"""The kernel's last row group in whole chunks, then its short piece, when
its chunks outnumber the buffer sets (`LayoutChoice.short_last` with
`ChunkProfile.chain_end`'s `turns`): a chunk's loads then also wait until the chunk a
set before it is done with the set. The loop form runs the short piece
first and prices a steady state; with few chunks a core the chain decides.
BERT seq 512 on 32 cores: ln2 (16 rows a core, five f32 operands, at most
7 rows a chunk) 4 x 4 rows in a loop -> 7 + 7 + 2, its phase 7,270 ->
6,531 cycles. Rows are computed alone: the bits are the even loop's."""

from __future__ import annotations

import numpy as np
from helpers import simulate_options

from npu.costmodel.vector.chunk_pipeline import ChunkProfile

from test_fused_short_last import _last_phase_loads, _model


def test_a_chunk_waits_for_the_set_it_reuses() -> None:
    # one row: 100 cycles of loads into x, 160 of vector work reading it, a
    # 50-cycle store of y; 350 of GM latency a flag
    row = ChunkProfile(350, [("x", 100.0)], [(("x",), ("y",), 160.0)], [("y", 50.0, 0)])
    # 1 + 1 + 1 with two sets of x: the third chunk's load waits for the
    # first chunk's vector work (450 -> 610), which ends before the second
    # chunk's load lands (900): the chain as without sets
    slots = {"x": 2, "y": 2}
    assert row.chain_end([1, 1, 1], slots, 2) == row.chain_end([1, 1, 1], slots) == 1910
    # one set of x: each load waits for the previous chunk's vector work
    # (the second's lands at 610 + 450, its vector work ends at 1,220)
    one = {"x": 1, "y": 2}
    assert row.chain_end([1, 1, 1], one, 2) == 1220 + 100 + 350 + 160 + 50 + 350


def test_the_short_piece_goes_after_whole_chunks_with_the_same_bits() -> None:
    model = _model(rows=128, depth=64)
    x = np.random.default_rng(0).standard_normal((128, 64)).astype(np.float32)
    # 16 rows a core: at most 7 a chunk (5,376 elements) the pipeline model
    # takes 4 x 4 in a loop, the chain 7 + 7 + 2; at most 4 the loop stays (its
    # body's two chunks)
    options = {"cores=8 max-chunk=5376": [[5376], [5376], [1536]],
               "cores=8 max-chunk=3072": [[3072]] * 2}
    for opts, loads in options.items():
        assert _last_phase_loads(model, opts) == loads
    (chain, chain_cycles), (loop, loop_cycles) = simulate_options(model, x, options,
                                                                  target="ascend910")
    assert np.array_equal(chain.view(np.uint8), loop.view(np.uint8))
    assert chain_cycles < loop_cycles, (chain_cycles, loop_cycles)
