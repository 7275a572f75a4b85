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

import numpy as np
import pytest
from helpers import kernel_tops, matmul_site, unlooped_l1_copies

import npu


@pytest.mark.slow  # ~1 min: BERT-base seq 512 compiled on 32 cores, simulated twice
def test_ffn_ins_strip_part_loads_phases_ahead_with_the_same_bits() -> None:
    from npu.frontend.bert import bert_layer

    model = bert_layer(512, 768, 12, 3072).SerializeToString()
    emitted = npu.compile(model, cores=32, pipeline="builtin.module(npu-lower{emit=cce})")
    constants, tops = kernel_tops(emitted)
    _, weights, barriers = matmul_site(tops, constants, "ffn_in", "scf.for")
    # barriers ahead of ffn_in: after the input cast, the projections, the
    # attention, out_proj and ln1; the projections' and the attention's
    # phases lie between the first and the third
    assert len(barriers) == 5
    ahead = sum(unlooped_l1_copies(tops[k], weights, bursts=True)
                for k in range(barriers[0] + 1, barriers[2]))
    assert ahead >= 4, ahead

    x = np.random.default_rng(0).standard_normal((1, 512, 768)).astype(np.float32)
    runs = []
    for options in ("prefetch-strip-phases=0", ""):
        kernel = npu.compile(model, target="ascend910",
                             pipeline=f"npu-lower{{cores=32 {options}}}")
        (out,), report = kernel(x)
        assert report["hazards"] == []
        runs.append((np.asarray(out), report["cycles"]))
    (off, off_cycles), (on, on_cycles) = runs
    assert np.array_equal(off.view(np.uint8), on.view(np.uint8))
    assert on_cycles < off_cycles, (on_cycles, off_cycles)
