"""npu-prefetch's bus check for a run of shares (`passes/prefetch/tail_bus.py`,
`prefetch-tail-bus`): in BERT-base seq 128 on 32 cores, from the second
layer on, Q's, K's and V's projections loaded their first slots in the
previous layer's ffn_out tail, where their L2 misses (1,280 B/cycle of
movers) outran the chip's bus (1,200) while the cores it serves last stored
ffn_out's rows; and V's odd last chunk loaded in the ffn_in phase before,
behind ffn_out's slots, so V's cores began ffn_out late. Now Q's slot
loads in ln2's tail (what that does not hold still in ffn_out's) and V's
chunk where no core streams other weights: 3 layers 114,575 -> 114,127
cycles, 12 layers 455,567 -> 452,879."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import kernel_tops, matmul_site, simulate_options, unlooped_l1_copies

import npu


def _bursts_by_phase(model: bytes, options: str) -> dict[str, list[int]]:
    """For layer 2's projections, the bursts of their weights' L1 copies
    outside loops in each phase (between chip barriers) of the kernel."""
    emitted = npu.compile(model, cores=32,
                          pipeline=f"builtin.module(npu-lower{{emit=cce {options}}})")
    constants, tops = kernel_tops(emitted)
    barriers = [k for k, op in enumerate(tops) if op.name == "cce.sync_all"]
    spans = list(zip([-1] + barriers, barriers + [len(tops)]))
    found = {}
    for name in ("l1_q_proj", "l1_k_proj", "l1_v_proj"):
        _, weights, _ = matmul_site(tops, constants, name, "scf.if")
        found[name] = [sum(unlooped_l1_copies(tops[k], weights, bursts=True)
                            for k in range(a + 1, b))
                       for a, b in spans]
    return found


@pytest.mark.slow  # ~30 s: two layers of BERT-base seq 128 on 32 cores, compiled 4x, run 2x
def test_the_run_of_shares_keeps_the_bus_below_its_rate() -> None:
    from npu.frontend.bert import bert_layer

    model = bert_layer(128, 768, 12, 3072, layers=2).SerializeToString()
    # layer 1's phases: cast, projections, attention, out_proj, ln1,
    # ffn_in (5), ffn_out (6), ln2 (7)
    off = _bursts_by_phase(model, "prefetch-tail-bus=false")
    on = _bursts_by_phase(model, "")
    assert all(off[name][6] for name in off), "all three slots in ffn_out's tail before"
    q_off, q_on = off["l1_q_proj"], on["l1_q_proj"]
    assert q_on[7] > q_off[7] and q_on[6] < q_off[6], "Q's bursts move into ln2's tail"
    assert q_on[6] + q_on[7] == q_off[6] + q_off[7], "the same bursts ahead of the barrier"
    for name in ("l1_k_proj", "l1_v_proj"):  # K's and V's stay
        assert on[name][6:8] == off[name][6:8], name
    assert off["l1_v_proj"][5], "V's odd last chunk in the ffn_in phase before"
    # now after V's own projection in layer 1, streaming into the attention's
    # phase, where V's cores run nothing
    assert on["l1_v_proj"][5] == 0 and on["l1_v_proj"][1], "now in the projections' phase"

    x = np.random.default_rng(0).standard_normal((1, 128, 768)).astype(np.float32)
    (off_out, off_cycles), (on_out, on_cycles) = simulate_options(
        model, x, ("cores=32 prefetch-tail-bus=false", "cores=32"), target="ascend910")
    assert np.array_equal(off_out.view(np.uint8), on_out.view(np.uint8))
    assert on_cycles < off_cycles, (on_cycles, off_cycles)
