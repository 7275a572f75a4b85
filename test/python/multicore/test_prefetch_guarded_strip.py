"""npu-prefetch and a resident weight strip in a share's guard
(`passes/prefetch/guarded.py`): BERT seq 512 on 32 cores runs Q, K and V's
projections as column strips on shares of the cores, each loop keeping
its strip of B resident in a function-level L1 buffer outside the guard.
The pass used to refuse those loops outright ("a resident weight part is
not a function-level buffer"); now they are candidates and the gap model
decides (at seq 512 the cast before the barrier leaves ~288 idle MTE2
cycles, a part takes ~2.3-3k, so it refuses with its figures)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))


def test_strips_in_share_guards_are_candidates() -> None:
    from fusion_estimates import compile_with_remarks
    from npu.frontend.bert import bert_layer

    _, remarks = compile_with_remarks(bert_layer(512, 768, 12, 3072), "bert_layer.onnx",
                                      "npu-lower{cores=32 prefetch-remarks=true}")
    messages = [(d.line, d.message) for d in remarks if d.message.startswith("npu-prefetch:")]
    assert not any("not a function-level buffer" in m for _, m in messages), messages
    # The ops on shares of the cores (their rows moved before the barrier):
    # Q, K and V. Each one's strip is judged by the gap model, with figures.
    shares = {line for line, m in messages if "of this op on cores" in m}
    assert len(shares) == 3, messages
    for line in shares:
        assert any(l == line and "a chunk of" in m and "estimated MTE2 idle gaps" in m
                   for l, m in messages), (line, messages)
