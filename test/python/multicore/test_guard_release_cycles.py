"""A buffer after a core guard no longer shares bytes with a buffer the guard
used early on another pipe (`Buffer.release`, passes/buffer_placement.py):
npu-insert-sync's flags for such a hand-over are set after the whole guard,
so the later access waited for the guard's last work. In BERT-base's layer
at seq 512 on 32 cores the outputs are bit for bit the same and the layer is
faster. (A small layer, seq 256 x hidden 256 on 8 cores, showed it until
npu-plan-memory's windows gained their 128 step: its buffers no longer share
those bytes, and it runs 39,827 cycles either way.)"""

from __future__ import annotations

import numpy as np
import pytest

import npu
from npu.frontend.bert import bert_layer
from npu.passes import buffer_placement

SEQ, HIDDEN, HEADS, FFN, CORES = 512, 768, 12, 3072, 32
X = np.random.default_rng(5).standard_normal((1, SEQ, HIDDEN)).astype(np.float32)


def _run() -> tuple:
    kernel = npu.compile(bert_layer(SEQ, HIDDEN, HEADS, FFN), cores=CORES,
                         pipeline="builtin.module(npu-lower{emit=hivm})")
    return kernel(X)


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=(
    "since a chip barrier lets MTE2's loads stream through it (session 20) the release gains "
    "nothing here: 99,492 cycles with and without it (seq 128: 46,719 with, 46,655 without); "
    "whether to keep GUARD_RELEASE is open"))
def test_hand_over_after_a_guard_counts_from_its_end(monkeypatch) -> None:
    ys, report = _run()
    assert report["hazards"] == []
    monkeypatch.setattr(buffer_placement, "GUARD_RELEASE", False)
    ys_old, report_old = _run()
    for y, y_old in zip(ys, ys_old):
        np.testing.assert_array_equal(y, y_old)
    # measured 101,893 against 102,277 cycles (ascend910); the attention
    # phase 18,363 -> 18,000 when it was added
    assert report["cycles"] < report_old["cycles"], (report["cycles"], report_old["cycles"])
