"""npu-prefetch loads a matmul's odd last chunk (the one-trip loop
npu-double-buffer leaves after the two slots', with its own buffer) in
the MTE2 tails of earlier phases, more than one chip barrier ahead of the
op (`passes/prefetch/remainder.py`). BERT seq 128 on 32 cores: ffn_out's
third 98 KB chunk a core loaded in its own MTE2-bound phase; now in
out_proj's and earlier phases: 45,311 -> 43,775 cycles, 12 layers
528,191 -> 505,599 (bench/chip.py), outputs bit for bit the same. With
ffn_in's rest (`prefetch-rest-phases`) in earlier phases too: 43,071 and
500,991."""

from __future__ import annotations

import pytest
from helpers import (assert_same_bits_and_faster, has_mad, kernel_tops, l1_weights_of,
                     unlooped_l1_copies)

import npu


@pytest.mark.slow  # ~40 s: BERT-base seq 128 compiled and simulated twice on 32 cores
def test_ffn_outs_last_chunk_loads_phases_ahead_with_the_same_bits() -> None:
    from npu.frontend.bert import bert_layer

    model = bert_layer(128, 768, 12, 3072).SerializeToString()
    emitted = npu.compile(model, cores=32, pipeline="builtin.module(npu-lower{emit=cce})")
    constants, tops = kernel_tops(emitted)
    loops = [k for k, op in enumerate(tops) if op.name == "scf.for"
             and '"ffn_out"' in str(op.location) and has_mad(op)]
    assert len(loops) == 2, "ffn_out: the slots' loop and the remainder's"
    weights = l1_weights_of(tops[loops[1]], constants)
    assert weights
    barriers = [k for k in range(loops[0]) if tops[k].name == "cce.sync_all"]
    # its chunk's copies come before the barrier ahead of ln1 (the third
    # before ffn_out), i.e. in out_proj's phase or earlier
    early = sum(unlooped_l1_copies(tops[k], weights) for k in range(barriers[-3]))
    assert early >= 1

    assert_same_bits_and_faster(model, 128, "prefetch-remainder-phases=0 prefetch-rest-phases=0")
