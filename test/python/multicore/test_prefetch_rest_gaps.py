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
from helpers import l1_weights_of

import npu
from npu.ir import arg_attrs, int_attr, view_root


def _has_mad(op) -> bool:
    if op.name == "cce.mad":
        return True
    return any(_has_mad(o.operation) for r in op.regions for b in r.blocks for o in b.operations)


def _bursts(op, weights) -> int:
    """Bursts of the top-level or guarded (not in a loop) L1 copies of
    `weights` in `op`."""
    if op.name == "cce.copy_gm_to_l1" and view_root(op.operands[0]) in weights:
        return int_attr(op, "n_burst")
    if op.name == "scf.for":
        return 0
    return sum(_bursts(o.operation, weights) for r in op.regions for b in r.blocks
               for o in b.operations)


@pytest.mark.slow  # ~40 s: BERT-base seq 128 compiled on 32 cores, simulated twice
def test_ffn_ins_rest_fills_the_attentions_tail_with_the_same_bits() -> None:
    from npu.frontend.bert import bert_layer

    model = bert_layer(128, 768, 12, 3072).SerializeToString()
    emitted = npu.compile(model, cores=32, pipeline="builtin.module(npu-lower{emit=cce})")
    func = emitted.module.body.operations[0]
    args = list(func.regions[0].blocks[0].arguments)
    constants = {a for a in args if "npu.constant" in arg_attrs(func, a.arg_number)}
    tops = [o.operation for o in func.regions[0].blocks[0].operations]
    loop = next(k for k, op in enumerate(tops) if op.name == "scf.for"
                and '"ffn_in"' in str(op.location) and _has_mad(op))
    weights = l1_weights_of(tops[loop], constants)
    assert weights
    barriers = [k for k in range(loop) if tops[k].name == "cce.sync_all"]
    # barriers ahead of ffn_in: after the input cast, the projections, the
    # attention, out_proj and ln1; the attention's phase lies between the
    # second and the third
    assert len(barriers) == 5
    in_attention = sum(_bursts(tops[k], weights) for k in range(barriers[1] + 1, barriers[2]))
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
