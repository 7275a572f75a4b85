"""npu-prefetch on many cores puts a matmul's slots in the previous
matmul's own tail, not the tail of the op before it, when that tail holds
them all and the earlier op's phase already loads another matmul's
prefetched weights (`IdleGaps._own_tail_first`): BERT seq 512 on 32 cores,
ffn_out's two slots in ffn_in's last C tile instead of the first in ln1's
tail beside ffn_in's (107,141 -> 106,084 cycles, bench/chip.py). On the
unsplit ffn_out (`split-cores-split-k-model=false`): split by the model, its
partials run on shares of the cores under `scf.if`, with slots of their own."""

from __future__ import annotations

import pytest
from helpers import l1_weights_of

import npu
from npu.frontend.bert import bert_layer
from npu.ir import arg_attrs, view_root


@pytest.fixture(scope="module")
def program():
    kernel = npu.compile(bert_layer(512, 768, 12, 3072), cores=32,
                         pipeline="builtin.module(npu-lower{emit=cce "
                         "split-cores-split-k-model=false})")
    func = kernel.module.body.operations[0]
    args = list(func.regions[0].blocks[0].arguments)
    constants = {a for a in args if "npu.constant" in arg_attrs(func, a.arg_number)}
    yield [o.operation for o in func.regions[0].blocks[0].operations], constants
    del kernel


def test_ffn_outs_slots_load_in_ffn_ins_tail(program) -> None:
    tops, constants = program
    loops = {name: next(k for k, op in enumerate(tops) if op.name == "scf.for"
                        and f'"{name}"' in str(op.location)) for name in ("ffn_in", "ffn_out")}
    barriers = [k for k, op in enumerate(tops) if op.name == "cce.sync_all"]
    w1, w2 = (l1_weights_of(tops[loops[n]], constants) for n in ("ffn_in", "ffn_out"))
    assert w1 and w2 and not w1 & w2

    def early(roots) -> list[int]:  # top-level (prefetched) weight copies
        return [k for k, op in enumerate(tops) if op.name == "cce.copy_gm_to_l1"
                and view_root(op.operands[0]) in roots]

    # ln1's phase: from the barrier before ffn_in's barrier to that one
    ln1_end = max(k for k in barriers if k < loops["ffn_in"])
    ln1_start = max(k for k in barriers if k < ln1_end)
    assert any(ln1_start < k < ln1_end for k in early(w1)), "ffn_in's slot left ln1's phase"
    ffn_out = early(w2)
    assert ffn_out, "ffn_out's slots not prefetched"
    # all in ffn_in's phase after its loop (its last C tile), none in ln1's
    ffn_in_end = min(k for k in barriers if k > loops["ffn_in"])
    assert all(loops["ffn_in"] < k < ffn_in_end for k in ffn_out), (ffn_out, loops, barriers)
