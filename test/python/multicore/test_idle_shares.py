"""A row group right before a run of shares on fewer cores
(`passes/split_cores/idle_shares.py`): BERT seq 512's input cast goes on 16
cores, so that V's share (cores 24-31, the slowest in the model) loads its
first weights while the others cast: 101,412 -> 100,132 cycles on 32 cores
(bench/chip_phases.py). Seq 128's cast stays on 16 cores (on 8, Q's share
would be the slowest by more than K's early weights save)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

NOTE = "(the next shares' other cores load their weights meanwhile)"


def _split_remark(seq: int) -> str:
    from fusion_estimates import compile_with_remarks
    from npu.frontend.bert import bert_layer

    _, remarks = compile_with_remarks(bert_layer(seq, 768, 12, 3072), "bert_layer.onnx",
                                      "npu-lower{cores=32 split-cores-remarks=true}")
    found = [d.message for d in remarks if d.message.startswith("npu-split-cores: 32 of 32")]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("seq, cast", [(512, f"fused rows 16 {NOTE}"), (128, "fused rows 8x2")])
def test_the_cast_before_the_projections(seq: int, cast: str) -> None:
    units = _split_remark(seq).split("; ")[1:]  # after "32 of 32 cores, 7 chip barriers"
    assert units[0] == cast, units[0]
    # the projections keep their shares: Q and K on 12 cores each, V on 8
    assert [u.split(" on cores ")[1] for u in units[1:4]] == ["0-11", "12-23", "24-31"], units
    assert not any(NOTE in u for u in units[1:]), units


def test_phase_model() -> None:
    from npu.passes.split_cores.barriers import Unit
    from npu.passes.split_cores.idle_shares import _phase
    from npu.passes.split_cores.split import Split

    def share(base: int, cost: float) -> tuple:
        return (Unit(None, 8, base=base),
                Split((), (), cost=cost, slot=49152, slots=2, per_byte=1 / 64))
    run = [share(0, 11264.0), share(12, 11264.0), share(24, 13824.0)]
    assert _phase(run, 32, 1152.0) == 13824.0  # no core free
    assert _phase(run, 16, 2304.0) == 13824.0 - 1536.0  # V's slots load early
    assert _phase(run, 16, 1000.0) == 13824.0 - 1000.0  # at most the group's time
