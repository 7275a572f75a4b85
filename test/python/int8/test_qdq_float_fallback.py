"""QDQ graphs we do not run on the int8 cube run in float, with a remark:
results against onnxruntime on the same quantised model."""

from __future__ import annotations

import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from qdq_models import cnn, mlp, quantized, reference

NPU_RUN = ".venv/bin/npu-run"


def _run(model: onnx.ModelProto, x: np.ndarray, tmp_path) -> tuple[np.ndarray, np.ndarray, str]:
    """(npu-run's y, onnxruntime's y, npu-run's stderr)."""
    path, inp, out = tmp_path / "m.onnx", tmp_path / "in.npz", tmp_path / "out.npz"
    onnx.save(model, path)
    np.savez(inp, x=x)
    r = subprocess.run([NPU_RUN, str(path), "--inputs", str(inp), "-o", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    # The reference runs node by node (`reference`): on one CI machine
    # onnxruntime's fused int8 kernels put the quantize_static MLP 5 output
    # steps from the unfused run, while ours stays within one step of it.
    (want,) = reference(model, {"x": x})
    return np.load(out)["y"], want, r.stderr


def _fake_quant(scale, zp: np.ndarray, axis: int | None = None) -> onnx.ModelProto:
    attrs = {} if axis is None else {"axis": axis}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quant", **attrs),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dequant", **attrs)]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 5])],
        [numpy_helper.from_array(np.asarray(scale, np.float32), "s"), numpy_helper.from_array(zp, "z")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)


@pytest.mark.parametrize("zp", [np.array(0, np.int8), np.array(-20, np.int8), np.array(130, np.uint8)])
def test_fake_quantisation_is_exact_with_ties_and_saturation(zp, tmp_path) -> None:
    x = np.linspace(-40, 40, 30, dtype=np.float32).reshape(6, 5)
    x[0, :] = [0.125, 0.375, -0.125, -0.375, 0.625]  # ties at scale 0.25: half to even
    y, want, err = _run(_fake_quant(0.25, zp), x, tmp_path)
    np.testing.assert_array_equal(y, want)  # both ends saturate at +-40 / 0.25
    assert "remark: node 'quant' (QuantizeLinear) and 'dequant' (DequantizeLinear): run in float" in err


def test_per_channel_fake_quantisation(tmp_path) -> None:
    x = np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32) * 3
    y, want, _ = _run(_fake_quant(np.array([0.5, 0.25, 0.125, 0.02, 1.0]),
                                  np.array([0, 3, -5, 10, 127], np.int8), axis=1), x, tmp_path)
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("per_channel", [False, True])
def test_quantize_static_mlp_within_one_step(per_channel: bool, tmp_path) -> None:
    """uint8 activations: the MatMuls do not take the int8 cube's form
    (test_int8_models.py has the int8 ones), so everything runs in float."""
    model = quantized(mlp(8, 24, 40, 10), (8, 24), per_channel, "QUInt8")
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    last = next(n for n in reversed(model.graph.node) if n.op_type == "DequantizeLinear")
    step = float(consts[last.input[1]])
    rng = np.random.default_rng(1)
    y, want, err = _run(model, rng.standard_normal((8, 24)).astype(np.float32), tmp_path)
    # The matmuls run in f16 on the cube: the output's QuantizeLinear may land one step
    # away (plus float rounding of the dequantised values: 1e-4 of a step).
    assert np.abs(y - want).max() <= step * (1 + 1e-4)
    assert np.mean(y == want) > 0.8
    assert "run in float" in err
    # npu-run --check takes the same node-by-node reference.
    r = subprocess.run([NPU_RUN, str(tmp_path / "m.onnx"), "--inputs", str(tmp_path / "in.npz"),
                        "--check"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "check: passed" in r.stdout + r.stderr, r.stdout + r.stderr
    assert "quantised outputs within one step of their grid" in r.stdout


def test_quantize_static_cnn_with_uint8_activations(tmp_path) -> None:
    """uint8 activations: no conv takes an int8 product, so both convs run in
    float between fake quantisations, their int8 weights and int32 biases
    dequantised once, on the host (folded: onnx's own evaluator has no
    DequantizeLinear before opset 19); within one output step (the convs run
    on dequantised f16 operands). With int8 activations the stem is exact
    (`test_qdq_conv.py`)."""
    model = quantized(cnn(16), (1, 3, 16, 16), activations="QUInt8")
    x = np.random.default_rng(2).standard_normal((1, 3, 16, 16)).astype(np.float32)
    y, want, err = _run(model, x, tmp_path)
    assert "node 'x_QuantizeLinear' (QuantizeLinear) and 'x_DequantizeLinear'" in err
    for conv in ("conv1", "conv2"):
        assert f"node '{conv}' (Conv) between" in err and "stays in float: its input is not a " \
            "run-time int8 tensor" in err
    assert "node 'w1_DequantizeLinear'" not in err and "node 'b1_DequantizeLinear'" not in err
    assert "(ConvInteger)" not in err
    consts = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    last = next(n for n in reversed(model.graph.node) if n.op_type == "DequantizeLinear")
    assert np.abs(y - want).max() <= float(consts[last.input[1]]) * (1 + 1e-4)


@pytest.mark.parametrize("axis", [0, 1])
def test_constant_dequantize_folds_at_opset_17(axis: int) -> None:
    """A per-axis DequantizeLinear of a constant becomes a constant, equal to
    onnxruntime's (int32 biases: test_quantize_static_cnn)."""
    from npu.frontend.onnx_fold import fold_constants

    rng = np.random.default_rng(axis)
    w = rng.integers(-128, 128, (4, 6), dtype=np.int8)
    scale = (rng.random((4, 6)[axis]) + 0.01).astype(np.float32)
    zp = rng.integers(-5, 5, (4, 6)[axis], dtype=np.int8)
    node = helper.make_node("DequantizeLinear", ["w", "s", "z"], ["y"], name="dq", axis=axis)
    graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(scale, "s"),
                               numpy_helper.from_array(zp, "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    (want,) = reference(model, {})
    fold_constants(model)
    (node,) = model.graph.node  # a graph output stays a node, by name: a Constant
    assert node.op_type == "Constant"
    np.testing.assert_array_equal(numpy_helper.to_array(node.attribute[0].t), want)
