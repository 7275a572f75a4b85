"""The MTE2 tail of an earlier phase, where npu-prefetch sends a partly
prefetched slot's rest (`prefetch-rest-phases`), is the tail of its last
op with loads of its own: a host constant's load an earlier prefetch put
there (out_proj's bias row, moved before the barrier that ends the
attention's phase) waits for nothing and ends no work, so it is passed
over like the weight copies (`RemainderSlots._phase_gaps`). BERT seq 128
on 32 cores: the attention's phase was estimated at the barrier's 700
idle cycles behind that row, so one of the five bursts of ffn_in's rest
went there; now all five (the attention's own tail, ~2.2k): 43,071 ->
42,233 cycles, 12 layers 498,239 -> 491,711 (bench/chip.py)."""

from __future__ import annotations

import pytest
from helpers import assert_same_bits_and_faster, bert_ffn_in_bursts


@pytest.mark.slow  # ~40 s: BERT-base seq 128 compiled on 32 cores, simulated twice
def test_ffn_ins_rest_fills_the_attentions_tail_with_the_same_bits() -> None:
    # barriers ahead of ffn_in: after the input cast, the projections, the
    # attention, out_proj and ln1; the attention's phase lies between the
    # second and the third
    model, in_attention = bert_ffn_in_bursts(128, 1, 2)
    assert in_attention >= 5, in_attention
    assert_same_bits_and_faster(model, 128, "prefetch-rest-phases=0")
