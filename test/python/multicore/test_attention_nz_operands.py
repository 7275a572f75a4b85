"""On several cores the fused attention reads Q, K and V as their
projections' Nz (`passes/attention_nz.py`, npu-fuse-attention's
nz-operands): the projections store Nz blocks, no rows, head transposes or
fractalizes; the same bits as the rows' program, fewer cycles, and
npu-fuse-horizontal's siblings (cut by their row-major columns) left as rows."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnxruntime
import pytest

import npu.passes.lower as lower

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import compile_remarks  # noqa: E402

X = np.random.default_rng(3).standard_normal((1, 64, 256)).astype(np.float32)


def _model() -> bytes:
    from npu.frontend.bert import bert_layer

    return bert_layer(seq=64, hidden=256, heads=4, ffn=1024).SerializeToString()


def _compile(nz: bool, options: str, monkeypatch) -> tuple:
    monkeypatch.setattr(lower, "ATTENTION_NZ", nz)
    kernel, remarks = compile_remarks(_model(), target="ascend910",
                                      pipeline=f"npu-lower{{cores=4 fuse-remarks=true {options}}}")
    fused = [r for r in remarks if "fused attention" in r]
    assert len(fused) == 1
    return kernel, fused[0]


def _run(nz: bool, options: str, monkeypatch) -> tuple:
    kernel, said = _compile(nz, options, monkeypatch)
    (out,), report = kernel(X)
    return out, report, said


def test_the_attention_reads_the_projections_nz(monkeypatch) -> None:
    # Q, K and V apart on 4 cores (fuse-horizontal off); K^T's transpose of
    # K's Nz is a member (17 ops; the rows' prologue took 22)
    kernel, said = _compile(True, "fuse-horizontal=false", monkeypatch)
    assert "(17 ops; Q, K, V read as f16 fractals)" in said
    text = str(kernel.module)
    assert "ascend." not in text and "copy_ub_to_l1" in text  # (P and V's ones)


@pytest.mark.slow
def test_the_attention_reads_the_projections_nz_bit_for_bit(monkeypatch) -> None:
    # Q, K and V apart on 4 cores (fuse-horizontal off): rows before, Nz now
    rows, r0, said0 = _run(False, "fuse-horizontal=false", monkeypatch)
    nz, r1, said1 = _run(True, "fuse-horizontal=false", monkeypatch)
    assert "read as f16 rows and laid out on chip" in said0
    assert "(17 ops; Q, K, V read as f16 fractals)" in said1  # K's transpose a member
    assert r1["hazards"] == [] and r1["block_dim"] == 4
    assert np.array_equal(rows.view(np.uint32), nz.view(np.uint32))
    (want,) = onnxruntime.InferenceSession(_model()).run(None, {"x": X})
    np.testing.assert_allclose(nz, want, rtol=2e-2, atol=1e-2)
    assert r1["cycles"] < r0["cycles"]  # 29,609 -> 29,274


def test_horizontally_fused_projections_stay_rows(monkeypatch) -> None:
    # npu-fuse-horizontal's siblings write views of one C: not rewritten
    _, said = _compile(True, "", monkeypatch)
    assert "read as f16 rows and laid out on chip" in said


def test_nz_operands_plan_keeps_k_and_v_in_l1(monkeypatch) -> None:
    # 4 heads at seq 256 on 2 cores: the cost's best tile, 96 rows, does not
    # divide the 16 row blocks and reloads K and V per query tile; resident
    # tiles come first with Nz operands (`plan._by_cost`): 64 rows, K and V
    # once (BERT-base seq 512 on 2 cores: 48-row tiles, 851,212 cycles,
    # against 768,736)
    from npu.frontend.bert import bert_layer

    monkeypatch.setattr(lower, "ATTENTION_NZ", True)
    model = bert_layer(seq=256, hidden=256, heads=4, ffn=1024).SerializeToString()
    _, remarks = compile_remarks(model, target="ascend910",
                                 pipeline="npu-lower{cores=2 fuse-remarks=true fuse-horizontal=false}")
    (said,) = [r for r in remarks if "fused attention" in r]
    assert "read as f16 fractals" in said and "query tiles of 64 rows" in said
    assert "GM traffic 19423232 -> 524288 bytes" in said
