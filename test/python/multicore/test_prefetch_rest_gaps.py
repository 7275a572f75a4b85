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

import numpy as np
import pytest
from helpers import kernel_tops, matmul_site, unlooped_l1_copies

import npu


@pytest.mark.slow  # ~40 s: BERT-base seq 128 compiled on 32 cores, simulated twice
def test_ffn_ins_rest_fills_the_attentions_tail_with_the_same_bits() -> None:
    from npu.frontend.bert import bert_layer

    model = bert_layer(128, 768, 12, 3072).SerializeToString()
    emitted = npu.compile(model, cores=32, pipeline="builtin.module(npu-lower{emit=cce})")
    constants, tops = kernel_tops(emitted)
    _, weights, barriers = matmul_site(tops, constants, "ffn_in", "scf.for")
    # barriers ahead of ffn_in: after the input cast, the projections, the
    # attention, out_proj and ln1; the attention's phase lies between the
    # second and the third
    assert len(barriers) == 5
    in_attention = sum(unlooped_l1_copies(tops[k], weights, bursts=True)
                       for k in range(barriers[1] + 1, barriers[2]))
    assert in_attention >= 5, in_attention

    x = np.random.default_rng(0).standard_normal((1, 128, 768)).astype(np.float32)
    runs = []
    for options in ("prefetch-rest-phases=0", ""):
        kernel = npu.compile(model, target="ascend910",
                             pipeline=f"npu-lower{{cores=32 {options}}}")
        (out,), report = kernel(x)
        assert report["hazards"] == []
        runs.append((np.asarray(out), report["cycles"]))
    (off, off_cycles), (on, on_cycles) = runs
    assert np.array_equal(off.view(np.uint8), on.view(np.uint8))
    assert on_cycles < off_cycles, (on_cycles, off_cycles)
