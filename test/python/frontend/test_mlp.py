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


def test_ffn_between_matmuls_stays_in_nz():
    """Whole-fractal shapes: bias add and GELU run on the Nz matmul result
    (one defractalize at the end) and still match onnxruntime."""
    from onnx import helper

    from onnx_models import model

    rng = np.random.default_rng(2)
    w1 = (rng.standard_normal((48, 64)) / 7).astype(np.float32)
    b1 = rng.standard_normal(64).astype(np.float32)
    w2 = (rng.standard_normal((64, 32)) / 8).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
             helper.make_node("Add", ["h", "b1"], ["hb"], name="bias"),
             helper.make_node("Gelu", ["hb"], ["a"], name="gelu", approximate="tanh"),
             helper.make_node("MatMul", ["a", "w2"], ["y"], name="fc2")]
    m = model(nodes, [("x", [32, 48])], [("y", [32, 32])], [("w1", w1), ("b1", b1), ("w2", w2)],
              opset=20)
    kernel = npu.compile(m)
    assert kernel.stages["ascend"].count('"ascend.defractalize"') == 1
    assert kernel.stages["ascend"].count('"ascend.fractalize"') == 1  # x only
    x = rng.standard_normal((32, 48)).astype(np.float32)
    (y,), _ = kernel(x)
    (want,) = onnxruntime.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=2e-2 * np.abs(want).max())


def test_pointwise_layers_on_an_nhwc_map_stay_in_nz():
    """ConvNeXt's pointwise layers: [1, H, W, C] rows (14 x 14 = 196, not
    whole fractals) against one matrix are one product, and the bias add,
    the Erf GELU and a per-position scale run on its Nz result viewed as
    [1, H, W, 4C]: one defractalize at the end, none between the matmuls."""
    from onnx import helper

    from onnx_models import model

    rng = np.random.default_rng(3)
    c = 32
    w1 = (rng.standard_normal((c, 4 * c)) / 6).astype(np.float32)
    b1 = rng.standard_normal(4 * c).astype(np.float32)
    pos = rng.uniform(0.5, 1.5, (1, 14, 14, 1)).astype(np.float32)
    w2 = (rng.standard_normal((4 * c, c)) / 11).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
             helper.make_node("Add", ["h", "b1"], ["hb"], name="bias"),
             helper.make_node("Gelu", ["hb"], ["g"], name="gelu"),
             helper.make_node("Mul", ["g", "pos"], ["a"], name="scale"),
             helper.make_node("MatMul", ["a", "w2"], ["y"], name="fc2")]
    m = model(nodes, [("x", [1, 14, 14, c])], [("y", [1, 14, 14, c])],
              [("w1", w1), ("b1", b1), ("pos", pos), ("w2", w2)], opset=20)
    kernel = npu.compile(m)
    assert kernel.stages["ascend"].count('"ascend.defractalize"') == 1
    assert kernel.stages["ascend"].count('"ascend.fractalize"') == 1  # x only
    x = rng.standard_normal((1, 14, 14, c)).astype(np.float32)
    (y,), _ = kernel(x)
    (want,) = onnxruntime.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=2e-2 * np.abs(want).max())
