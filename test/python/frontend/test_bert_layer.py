"""One BERT encoder layer from ONNX (attention with its reshapes and
transposes, softmax, two layernorms, GELU) against onnxruntime.

The BERT-base layer (hidden 768, 12 heads, FFN 3072, sequence 128) takes
minutes to compile and simulate: it is marked slow (`--runslow`); a small
layer with the same graph runs by default."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest

import npu
from npu.frontend.bert import bert_layer


def run_layer(seq, hidden, heads, ffn, gelu="none"):
    model = bert_layer(seq, hidden, heads, ffn, gelu_approximation=gelu)
    kernel = npu.compile(model, where="bert_layer.onnx")
    x = np.random.default_rng(1).standard_normal((1, seq, hidden)).astype(np.float32)
    (y,), report = kernel(x)
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    # Six matmuls with f16 operands (f32 accumulation) feed two layernorms
    # that rescale to unit variance: ~1e-3 relative per matmul, compounded.
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=1e-2 * float(np.abs(want).max()))
    ops = {row["op"].split(" ")[0] for row in report["per_op"]}
    assert {"q_proj", "scores", "ln1", "ffn_in", "ffn_out", "ln2"} <= ops
    # Attention (scores, scale, softmax, context) is one kernel, reported as
    # the scores matmul (npu-fuse-attention); the bias add and GELU run in
    # ffn_in's drains (a matmul epilogue: the bias is a broadcast constant).
    assert "softmax" not in ops and "gelu" not in ops
    plan = report["gm_workspace"]
    assert plan["lower_bound"] <= plan["allocated"] < plan["sum"]
    return report


def test_small_bert_layer_matches_onnxruntime():
    run_layer(16, 64, 2, 128)


@pytest.mark.slow
def test_bert_base_layer_matches_onnxruntime():
    report = run_layer(128, 768, 12, 3072)
    assert report["cycles"] > report["per_op_bound_cycles"]


def test_bert_base_layer_verifies_at_cce():
    # Every stop of the pipeline is valid IR, not only its end: at BERT-base
    # sizes ffn_in's staged drain flattens a strided UB view, whose collapsed
    # type must keep the strided layout (memref.collapse_shape's verifier).
    kernel = npu.compile(bert_layer(128, 768, 12, 3072), where="bert_layer.onnx",
                         pipeline="npu-lower{emit=cce}")
    assert kernel.module.operation.verify()
