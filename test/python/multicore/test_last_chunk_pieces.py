"""A core's one C tile with A in shrinking parts (`last_chunk.py`) drains
in pieces (`PipelinedPlanning.drained_pieces`): the C tile in column slabs
sharing each A sub-tile, each slab drained right after its own mad of the
last sub-step, so the drain of the first ones overlaps the later mads and
their stores leave one by one. BERT seq 128 on 32 cores: ffn_out's phase
9,398 -> 9,142 cycles, the layer 39,935 -> 39,679 (bench/chip.py). The
sub-step is the one piece's: the bits are the same."""

from __future__ import annotations

import numpy as np

import npu
from npu.ir import walk

from test_last_chunk_parts import _model


def test_the_last_sub_step_drains_piece_by_piece_with_the_same_bits() -> None:
    rows, depth, cols = 128, 3072, 768
    model = _model(rows, depth, cols)
    grid = f"split-cores-grids={rows}x{depth}x{cols}:16x2"
    x = np.random.default_rng(0).standard_normal((rows, depth)).astype(np.float32)
    runs = {}
    # c-pieces=1: the C tile (64 x 48 a core) as one piece, as before
    for pieces in ("c-pieces=1", ""):
        options = f"cores=32 {grid} {pieces}"
        emitted = npu.compile(model, pipeline=f"builtin.module(npu-lower{{{options} emit=cce}})")
        l0c = [op for op in walk(emitted.module.operation, lambda o: o.name == "memref.alloc")
               if '"l0c"' in str(op.result.type)]
        kernel = npu.compile(model, target="ascend910", pipeline=f"npu-lower{{{options}}}")
        (out,), report = kernel(x)
        assert report["hazards"] == []
        runs[pieces] = (np.asarray(out), report["cycles"], len(l0c))
    (one, one_cycles, one_l0c), (three, three_cycles, three_l0c) = runs.values()
    assert (one_l0c, three_l0c) == (1, 3)  # three slabs of one column block
    assert np.array_equal(one.view(np.uint8), three.view(np.uint8))
    assert three_cycles < one_cycles, (three_cycles, one_cycles)  # 17,246 -> 16,995
