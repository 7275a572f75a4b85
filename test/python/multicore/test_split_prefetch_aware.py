"""npu-split-cores ranks a matmul's grids with the weights npu-prefetch
loads before its chip barrier (`passes/split_cores/prefetched.py`): BERT
seq 128 on 32 cores, out_proj takes 8x4 (all 147,456 weight bytes of a
core in its slots, loaded in attention's idle MTE2) over 16x2, and ffn_in
16x2 (one C tile per core: its tail loads both of ffn_out's slots) over
32x1, both of which the prefetch-blind cost ranked first (50,751 -> 50,367
-> 49,151 cycles, bench/chip.py)."""

from __future__ import annotations

import pytest

from npu.frontend.bert import bert_layer
from npu.costmodel.matmul.fitting import MatmulShape
from npu.costmodel.matmul.tiling import choose_tiling
from npu.passes.split_cores.prefetched import NONE, Lookahead, early_bytes, ranked, tail_cycles
from npu.target import get_target

from helpers import compile_remarks


def _grids(seq: int, cores: int) -> list[str]:
    """The units of npu-split-cores' remark, in program order, with ffn_out
    unsplit (`split-cores-split-k-model=false`: the grids ranked here are
    the unsplit matmul's; test_split_k_rows.py covers the split)."""
    _, remarks = compile_remarks(bert_layer(seq, 768, 12, 3072), target="ascend910",
                                 where="bert_layer.onnx",
                                 pipeline=f"npu-lower{{cores={cores} split-cores-remarks=true "
                                          "split-cores-split-k-model=false}")
    text = next(m for m in remarks if "npu-split-cores: " in m and " cores, " in m)
    return [u.strip() for u in text.split(";")[1:]]


def test_bert_seq128_out_proj_takes_the_grid_its_prefetch_hides() -> None:
    units = _grids(128, 32)
    at = units.index("attention 12x2")
    assert units[at + 1] == "matmul epilogue 8x4", units  # out_proj (was 16x2)
    # ffn_in (was 32x1), ffn_out (as before: its weights stream past its slots)
    assert units[at + 3:at + 5] == ["matmul epilogue 16x2", "matmul epilogue 16x2"], units


@pytest.mark.slow
def test_bert_seq512_grids_stay_the_simulators_best() -> None:
    """At seq 512 every grid was the simulator's best (docs/multicore.md):
    out_proj 4x8 would hide 196,608 of its 294,912 weight bytes, and
    measured 110,628 cycles against 8x4's 110,405."""
    units = _grids(512, 32)
    # (the attention on all 32 cores since flat runs: 12 x 2 on 24 before)
    at = units.index("attention 32 runs of 192 (head, query) rows across heads")
    assert [units[at + 1], units[at + 3], units[at + 4]] == [
        "matmul epilogue 8x4", "matmul epilogue 16x2", "matmul epilogue 8x4"], units


def test_ranked_counts_whole_slots_within_the_gap() -> None:
    t = get_target("ascend910")
    rate = t.path("gm_to_l1").bytes_per_cycle
    blind, _ = ranked(576, 208_896, 147_456, True, 0.0, 32, NONE, t)
    cost, rank = ranked(576, 208_896, 147_456, True, 0.0, 32, Lookahead(gap=1920.0), t)
    # the gap bounds what loads early: 1,920 cycles of the mover's rate
    assert rank == cost < blind
    assert cost == pytest.approx(32 * (208_896 - 1920 * rate) / t.gm_chip_bytes_per_cycle)
    # a longer gap: the slots alone
    assert ranked(576, 208_896, 147_456, True, 0.0, 32, Lookahead(gap=9000.0), t)[0] == \
        pytest.approx(32 * (208_896 - 147_456) / t.gm_chip_bytes_per_cycle)
    # slots short of the weights: nothing counted (they stream on after the barrier)
    assert ranked(576, 208_896, 98_304, False, 0.0, 32, Lookahead(gap=1920.0), t)[0] == blind


def test_ranked_counts_the_next_matmuls_slots_its_tail_loads() -> None:
    t = get_target("ascend910")
    rate = t.path("gm_to_l1").bytes_per_cycle
    look = Lookahead(next_slot=98_304, next_slots=2, next_per_byte=0.5)
    cost, _ = ranked(2304, 393_216, 0, False, 0.0, 32, NONE, t)
    # npu-prefetch's slots: the first with half of it in the tail, the second whole
    for tail_bytes, early in ((40_000, 0), (49_152, 98_304), (190_000, 98_304),
                              (196_608, 196_608), (900_000, 196_608)):
        assert early_bytes(tail_bytes, 98_304, 2) == early
        assert ranked(2304, 393_216, 0, False, tail_bytes / rate, 32, look, t) == \
            (cost, cost - 0.5 * early)


def test_tail_follows_the_tiles_the_epilogue_gets() -> None:
    """BERT seq 128's ffn_in per core with its GELU (1,536 vector cycles):
    32x1 runs two row tiles (B's strip resident), 16x2 one, so MTE2 idles
    twice as long after 16x2's last load."""
    t = get_target("ascend910")
    rows, cols = (tail_cycles(s, choose_tiling(s, t), t, 1536.0) for s in (
        MatmulShape(128, 768, 96, 1, 2, 4, 2), MatmulShape(64, 768, 192, 1, 2, 4, 2)))
    assert cols == pytest.approx(2 * rows)
    assert rows == pytest.approx((2304 + 128 * 96 * 4 / t.path("l0c_to_ub").bytes_per_cycle
                                  + 1536) / 2)
