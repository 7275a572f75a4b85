"""An attention's grid is its cost model's whatever bytes each core moves
(`SplitCoresPass._group`): a LLaMA's 8 heads x 128 rows were modelled
cheapest as 8x4 on 32 cores, then refused for moving under `min_bytes` a
core and run 8x2 on 16. Here 2 heads of 128 rows: 2x8 on 32 cores (was
2x4 on 8), bit for bit the one-core context and faster than 2x4 (3,941 ->
3,500 cycles)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_attention_runs import _inputs, _program, _split_remark  # noqa: E402
from helpers import compile_and_simulate  # noqa: E402


def test_two_heads_take_the_modelled_grid() -> None:
    text, ins = _program(2, 128), _inputs(2, 128)
    remark, parts = _split_remark(text, 32)
    assert remark.endswith("attention 2x8") and len(parts) == 1, remark
    one = compile_and_simulate(text, "npu-lower{cores=1}", ins)
    on_8 = compile_and_simulate(text, "npu-lower{cores=8}", ins)  # 2x4, as before
    on_32 = compile_and_simulate(text, "npu-lower{cores=32}", ins)
    assert on_8[2].report["block_dim"] == 8 and on_32[2].report["block_dim"] == 16
    assert on_32[2].hazards == []
    assert np.array_equal(one[0][3].view(np.uint16), on_32[0][3].view(np.uint16))
    assert on_32[2].cycles < on_8[2].cycles, (on_32[2].cycles, on_8[2].cycles)
