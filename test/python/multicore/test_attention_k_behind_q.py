"""A fused attention's first K tile loads right behind its first Q tile
(`passes/lower_attention/head_tiles.py`, `K_BEHIND_Q`): in a BERT layer on
several cores each core runs one head's run of query rows, whose Q.K^T
waited for K's loads, which queued behind the flag releasing Q (a set
waits for its pipe's earlier work: one GM latency)."""

from __future__ import annotations

import numpy as np

import npu
from npu.frontend.bert import bert_layer
from npu.ir import functions
from npu.passes.lower_attention import head_tiles

SEQ, HIDDEN, HEADS, FFN = 128, 256, 4, 512
X = np.random.default_rng(3).standard_normal((1, SEQ, HIDDEN)).astype(np.float32)


def _compile(cores: int, emit: str = "hivm"):
    return npu.compile(bert_layer(SEQ, HIDDEN, HEADS, FFN), cores=cores,
                       pipeline=f"builtin.module(npu-lower{{emit={emit}}})")


def _first_attention_loads(kernel) -> list[str]:
    """The cce instructions from the attention kernel's first GM -> L1 copy
    up to its first mad (flags and index arithmetic aside)."""
    func = functions(kernel.module)[0]
    seen: list[str] = []

    def walk(op) -> bool:
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    o = child.operation
                    if "attention" in str(o.location) or "scores" in str(o.location):
                        if o.name == "cce.copy_gm_to_l1" or (seen and o.name.startswith("cce.")
                                                             and "flag" not in o.name):
                            seen.append(o.name)
                        if o.name == "cce.mad" and seen:
                            return True
                    if walk(o):
                        return True
        return False
    walk(func)
    return seen


def test_k_loads_behind_q_under_one_flag(monkeypatch) -> None:
    on = _compile(8, "cce")
    loads = _first_attention_loads(on)
    # Q's copies straight to L1 (64-row tiles), then K's (its 128 rows staged
    # through UB, `core_start.staged_f16`), before the first move to L0A
    to_l0a = loads.index("cce.load_l1_to_l0a")
    assert loads[:4] == ["cce.copy_gm_to_l1"] * 4, loads
    assert "cce.copy_gm_to_ub" in loads[4:to_l0a], loads
    assert not {"cce.copy_gm_to_l1", "cce.copy_gm_to_ub"} & set(loads[to_l0a:]), loads
    ys, report = _compile(8)(X)
    assert report["hazards"] == []
    monkeypatch.setattr(head_tiles, "K_BEHIND_Q", False)
    old = _compile(8, "cce")
    old_loads = _first_attention_loads(old)
    # (before: K's copy after Q's moves to L0A)
    assert "cce.copy_gm_to_ub" in old_loads[old_loads.index("cce.load_l1_to_l0a"):], old_loads
    ys_old, report_old = _compile(8)(X)
    # the same instructions, K's loaded earlier: the outputs bit for bit
    for y, y_old in zip(ys, ys_old):
        np.testing.assert_array_equal(y, y_old)
    # measured 25,382 against 25,732 cycles (ascend910, 8 cores; 29,013 against
    # 29,354 with K loaded straight to L1)
    assert report["cycles"] <= report_old["cycles"] - 200, (report["cycles"],
                                                             report_old["cycles"])
