"""A two-layer MLP from ONNX, compiled by `npu.compile`, simulated, and
compared with onnxruntime; the report maps cycles back to the ONNX nodes."""

from __future__ import annotations

import numpy as np
import onnxruntime

import npu
from onnx_models import mlp


def test_two_layer_mlp_matches_onnxruntime():
    model = mlp()
    kernel = npu.compile(model, target="ascend910")
    assert kernel.input_names == ["x"] and kernel.output_names == ["probs"]
    x = np.random.default_rng(1).standard_normal((6, 40)).astype(np.float32)
    (probs,), report = kernel(x)
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    # Matmul operands are rounded to f16 (2^-11 relative each) and
    # accumulated in f32; softmax is in f32 on the vector unit.
    np.testing.assert_allclose(probs, want, rtol=2e-2, atol=2e-3)
    np.testing.assert_allclose(probs.sum(axis=-1), 1.0, rtol=1e-5)
    assert report["cycles"] > report["bound_cycles"] > 0
    ops = {row["op"] for row in report["per_op"]}
    assert {"fc1 (Gemm)", "fc2 (MatMul)", "softmax (Softmax)"} <= ops
    assert all(row["bound_cycles"] <= row["span_cycles"] for row in report["per_op"])
    # Weights are laid out on the host: no fractalize of a constant at run time.
    assert kernel.stages["ascend"].count('"ascend.fractalize"') == 2  # the two activations
    assert "trace" in report and report["trace"]()["traceEvents"]
