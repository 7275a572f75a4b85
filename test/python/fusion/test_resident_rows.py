"""Vocabulary-sized rows (BERT's 30,522, LLaMA's 32,000 f32 columns) that
fit UB twice over stay resident: one row a chunk in two slots, stored from
the buffer it was loaded into, moved in pieces so that the next row's load
follows the stores (`npu.kernels.resident_rows`). One GM read and one write
per element, one exp: within 1.3x of the GM bound (read once + written
once over the GM bandwidth), where the two-pass kernel read every element
twice and took the exp twice (16x32000: 2.09x). Rows that are not whole
32-byte blocks (30,522) are their whole blocks plus one block ending the
row, whose repeated lanes hold each reduction's identity in UB and are
written by the whole blocks' store after the tail's. Rows of more than half
of UB share a piece between the two slots, or (rows that are not whole
blocks) take one slot (`npu.kernels.resident_fit`)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import assert_outputs_close, compile_and_simulate
from row_patterns import softmax
from test_fused_kernels import groups, inputs_for
from test_long_rows import gm_bound


def run(text: str, ins=None):
    ins = inputs_for(text) if ins is None else ins
    out, expected, res = compile_and_simulate(text, "npu-lower", ins)
    assert_outputs_close(out, expected)
    assert res.hazards == [], res.hazards
    return res


@pytest.mark.parametrize("n", [30522, 32000])
def test_vocabulary_softmax_streams_at_gm_speed(n):
    text = softmax((16,), n)
    ideal = 2 * 16 * n * 4  # x read and y written once
    (g,) = groups(text)
    assert g["gm_bytes"] == ideal  # one pass
    res = run(text)
    assert res.cycles <= 1.3 * gm_bound(ideal), (res.cycles, gm_bound(ideal))


def test_rows_over_half_of_ub_share_a_piece():
    """16 x 32768 f32: rows of 128 KB do not fit UB twice. The two-pass
    kernel took 1.94x the GM bound on one core (two reads, two exps per
    element); the two slots now share the bytes of the row's last stored
    piece and each row loads them last (83,494 cycles: 1.27x)."""
    text = softmax((16,), 32768)
    ideal = 2 * 16 * 32768 * 4
    (g,) = groups(text)
    assert g["gm_bytes"] == ideal  # one pass
    out, expected, res = compile_and_simulate(text, "npu-lower{cores=1}", inputs_for(text))
    assert_outputs_close(out, expected)
    assert res.hazards == [], res.hazards
    assert res.cycles <= 1.3 * gm_bound(ideal), (res.cycles, gm_bound(ideal))


def test_rows_not_whole_blocks_that_fit_ub_once():
    """GPT-2's vocabulary (50257 f32 columns, not whole blocks, 201 KB a row)
    was refused: the two-pass kernel moves whole blocks and two rows do not
    fit UB. One slot: each row's loads follow the previous row's stores."""
    text = softmax((3,), 50257)
    (g,) = groups(text)
    assert g["gm_bytes"] == 2 * 3 * 50257 * 4
    out, expected, res = compile_and_simulate(text, "npu-lower{cores=1}", inputs_for(text))
    assert_outputs_close(out, expected)
    assert res.hazards == [], res.hazards


@pytest.mark.parametrize("text", [
    softmax((3,), 4001),               # a 1-lane tail: 7 repeated lanes
    softmax((2, 2), 2047),             # 7 of 8 lanes new
    softmax((3,), 8001, "f16"),        # a 16-lane f16 tail block
])
def test_rows_not_whole_blocks(text):
    """Rows past the repeat stride that are not whole blocks were refused by
    npu-fuse and by the unfused reductions and broadcasts alike."""
    (g,) = groups(text)
    run(text)


def test_negative_rows_with_a_tail():
    """The repeated lanes hold -inf for the max, not a value of the row."""
    text = softmax((4,), 4001)
    x = -np.abs(inputs_for(text)[0]) - 1.0
    run(text, [x, np.zeros_like(x)])

