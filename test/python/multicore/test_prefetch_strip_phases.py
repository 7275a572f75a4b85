"""A resident column strip's parts that the gaps before its op (the
previous op's MTE2 tail and the one before it) do not hold load in the
MTE2 tails of earlier phases (`prefetch-strip-phases`,
`RemainderSlots._strip_earlier`), where L1 holds them up to the loop. BERT
seq 512 on 32 cores: ffn_in's share (256x768x192 a core, B's 295 KB strip
resident in two parts) loaded its second part after its barrier, the
phase's cube idle meanwhile; now half of its bursts load in the
projections' and the attention's phases: 98,404 -> 97,252 cycles
(bench/chip.py), the ffn_in phase 16,698 -> 15,593."""

from __future__ import annotations

import pytest
from helpers import assert_same_bits_and_faster, bert_ffn_in_bursts


@pytest.mark.slow  # ~1 min: BERT-base seq 512 compiled on 32 cores, simulated twice
def test_ffn_ins_strip_part_loads_phases_ahead_with_the_same_bits() -> None:
    # barriers ahead of ffn_in: after the input cast, the projections, the
    # attention, out_proj and ln1; the projections' and the attention's
    # phases lie between the first and the third
    model, ahead = bert_ffn_in_bursts(512, 0, 2)
    assert ahead >= 4, ahead
    assert_same_bits_and_faster(model, 512, "prefetch-strip-phases=0")


@pytest.mark.slow  # ~15 s: BERT-base seq 512 compiled on 32 cores
def test_ffn_ins_strip_part_loads_in_the_attentions_tail() -> None:
    # The attention there is an scf.if with an else (a body for the cores
    # that span two heads); its MTE2 tail (~4.2k idle cycles a core before
    # its barrier) is now its branches' least, so the second part's 12
    # bursts all load in the attention's phase, none in the projections'
    # (before: 3 and 3, and 6 in ffn_in's first row tile; 84,551 -> 83,079)
    assert bert_ffn_in_bursts(512, 1, 2)[1] == 12
    assert bert_ffn_in_bursts(512, 0, 1)[1] == 0
