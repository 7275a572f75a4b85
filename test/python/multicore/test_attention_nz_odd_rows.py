"""At a seq of partial 16-row blocks (a transformers ViT's 197 tokens; 37
here) the fused attention on several cores reads Q, K and V as their
projections' Nz too (`passes/attention_nz.py`): before, the projections
stored their 37 rows, the head transposes ran on one core (no equal,
32-byte aligned slices of 37 rows) and the fractalizes apart. The padding
rows of the projections' last block (0 @ W plus the bias) are masked as
keys and never stored as queries: the same bits as the rows' program.
ViT-base (the export, 224x224) on 32 cores: 178,982 -> 132,326 cycles."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
import npu.passes.lower as lower

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import compile_remarks  # noqa: E402

SEQ, HIDDEN, HEADS, CORES = 37, 512, 4, 4
X = np.random.default_rng(3).standard_normal((1, SEQ, HIDDEN)).astype(np.float32)


def _model(projection_exp: bool = False) -> bytes:
    from npu.frontend.bert import self_attention

    model = self_attention(SEQ, HIDDEN, HEADS, out_projection=True)
    if projection_exp:  # q = exp(x Wq + bq): its padding rows need not stay finite
        from onnx import helper

        g = model.graph
        at = next(i for i, n in enumerate(g.node) if n.name == "q_split")
        g.node[at].input[0] = "q_exp"
        g.node.insert(at, helper.make_node("Exp", ["q1"], ["q_exp"], name="q_exp"))
    return model.SerializeToString()


def _compile(nz: bool, monkeypatch, model: bytes | None = None) -> tuple:
    monkeypatch.setattr(lower, "ATTENTION_NZ", nz)
    kernel, remarks = compile_remarks(
        model or _model(), target="ascend910",
        pipeline=f"npu-lower{{cores={CORES} fuse-remarks=true split-cores-remarks=true "
                 "fuse-horizontal=false}")
    (fused,) = [r for r in remarks if "fused attention" in r]
    (split,) = [r for r in remarks if "npu-split-cores:" in r and "chip barriers" in r]
    return kernel, fused, split


def test_the_attention_reads_the_projections_nz_at_37_rows(monkeypatch) -> None:
    kernel, fused, split = _compile(True, monkeypatch)
    # K^T's transpose of K's Nz is a member; no head transpose or fractalize left
    assert "(17 ops; Q, K, V read as f16 fractals)" in fused and "seq 37" in fused
    assert "transpose" not in split and "fractalize" not in split, split
    (out,), report = kernel(X)
    assert report["block_dim"] == CORES and report["hazards"] == []
    (want,) = onnxruntime.InferenceSession(_model()).run(None, {"x": X})
    np.testing.assert_allclose(out, want, rtol=2e-2, atol=1e-2)


def test_a_projection_of_unknown_padding_stays_rows(monkeypatch) -> None:
    # exp of Q's projection: its padding rows (exp of the bias here) are not
    # known finite, so Q, K and V stay rows (all three or none), read by the
    # attention as rows, their heads' transposes with them
    _, fused, split = _compile(True, monkeypatch, _model(projection_exp=True))
    assert "Q, K, V read as f16 rows and laid out on chip" in fused and "(22 ops;" in fused


def test_nz_at_37_rows_bit_for_bit(monkeypatch) -> None:
    # (out_proj's epilogue whole: its peeled blocks' grid, and so its mads'
    # depth, may differ between the two programs: docs/multicore.md "Bits")
    from npu.passes.split_cores import peel

    monkeypatch.setattr(peel, "PEEL_EPILOGUES", False)
    rows_kernel, _, _ = _compile(False, monkeypatch)
    nz_kernel, _, _ = _compile(True, monkeypatch)
    (rows,), r0 = rows_kernel(X)
    (nz,), r1 = nz_kernel(X)
    assert np.array_equal(rows.view(np.uint32), nz.view(np.uint32))
    assert r1["cycles"] < r0["cycles"]  # 46,646 -> 21,654


@pytest.mark.slow
def test_flat_runs_at_197_rows(monkeypatch) -> None:
    # 12 heads of 13 row blocks (the last of 5 rows) in 26 flat runs of 6
    # blocks: the context leaves as whole Nz blocks, so a run's last block
    # of a head needs no row count (before: heads only, 12 cores; ViT-base's
    # attention phase on 32 cores 10,150 -> 7,385 cycles)
    from npu.costmodel.attention import flat_runs
    from npu.frontend.bert import self_attention

    model = self_attention(197, 384, 12, out_projection=True).SerializeToString()
    x = np.random.default_rng(3).standard_normal((1, 197, 384)).astype(np.float32)

    def run() -> tuple:
        kernel, remarks = compile_remarks(
            model, target="ascend910",
            pipeline="npu-lower{cores=32 split-cores-remarks=true fuse-horizontal=false}")
        (said,) = [r for r in remarks if "npu-split-cores:" in r and "chip barriers" in r]
        (y,), report = kernel(x)
        assert report["hazards"] == []
        return y, report["cycles"], said

    y, cycles, said = run()
    assert "attention 26 runs of 96 (head, query) rows across heads" in said, said
    (want,) = onnxruntime.InferenceSession(model).run(None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=1e-2)
    monkeypatch.setattr(flat_runs, "runs_fit", lambda *args: False)
    heads, before, said = run()
    assert "attention 12;" in said
    assert np.array_equal(y.view(np.uint32), heads.view(np.uint32))
    assert cycles < before  # 19,312 against 22,248 on 12 cores
