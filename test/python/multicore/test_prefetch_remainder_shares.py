"""npu-prefetch's remainder chunk in a phase that ends with ops on shares
of the cores (`RemainderSlots._remainder_runs`): BERT seq 128 on 32 cores
loads a third of ffn_out's odd last chunk in the projections' phase, whose
Q, K and V run on cores 0-11, 12-23 and 24-31. Cloned after the last share
on every core, the copy waited for the shares' exit flags (outside the
guards) and so for the landing of out_proj's slot loaded in each guard:
~350 cycles of MTE2 per core, and in the 12-layer model it ran ~540 past
the barrier ahead of the attention's first loads. It now loads in each
share's guard after its op: 12 layers 464,079 -> 461,135 cycles."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import has_mad, kernel_tops, l1_weights_of, unlooped_l1_copies

import npu


def _phase_of_shares(tops: list) -> tuple[list, list]:
    """The top-level ops of the projections' phase (between the first two
    chip barriers): its share guards, and the others."""
    barriers = [k for k, op in enumerate(tops) if op.name == "cce.sync_all"]
    phase = tops[barriers[0] + 1:barriers[1]]
    guards = [op for op in phase if op.name == "scf.if" and has_mad(op)]
    return guards, [op for op in phase if op not in guards]


@pytest.mark.slow  # ~25 s: BERT-base seq 128 compiled on 32 cores twice, simulated twice
def test_a_remainder_after_shares_loads_in_each_share() -> None:
    from npu.frontend.bert import bert_layer

    model = bert_layer(128, 768, 12, 3072).SerializeToString()
    emitted = npu.compile(model, cores=32, pipeline="builtin.module(npu-lower{emit=cce})")
    constants, tops = kernel_tops(emitted)
    loops = [op for op in tops if op.name == "scf.for" and '"ffn_out"' in str(op.location)
             and has_mad(op)]
    assert len(loops) == 2, "ffn_out: the slots' loop and the remainder's"
    weights = l1_weights_of(loops[1], constants)
    guards, others = _phase_of_shares(tops)
    assert len(guards) == 3, "Q, K and V on their shares"
    # one copy of the remainder's part in each share's guard, none after them
    assert [unlooped_l1_copies(g, weights) for g in guards] == [1, 1, 1]
    assert sum(unlooped_l1_copies(op, weights) for op in others) == 0

    x = np.random.default_rng(0).standard_normal((1, 128, 768)).astype(np.float32)
    outs = []
    for options in ("prefetch-remainder-phases=0", ""):
        kernel = npu.compile(model, target="ascend910",
                             pipeline=f"npu-lower{{cores=32 {options}}}")
        (out,), report = kernel(x)
        assert report["hazards"] == []
        outs.append(np.asarray(out))
    assert np.array_equal(outs[0].view(np.uint8), outs[1].view(np.uint8))
