"""A LayerScale (`gamma * Linear(h)`) folded into the Linear's weights
(`onnx_layer_scale`): torchvision ConvNeXt's form through the Transpose back
to NCHW, and the plain form, checked against onnxruntime; a scale whose
weights would fall into f16 subnormals stays a Mul."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import npu
from npu.frontend.onnx_import import import_onnx
from npu.frontend.onnx_layer_scale import fold_layer_scales

C, H, W = 32, 4, 4


def _block(scale: np.ndarray, through_transpose: bool, bias: bool = True) -> onnx.ModelProto:
    """x -> [Transpose to NHWC] -> MatMul -> [+ b] -> [Transpose to NCHW] -> * scale -> + x."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal((C, C)).astype(np.float32) / 6, "w"),
             numpy_helper.from_array(rng.standard_normal(C).astype(np.float32), "b"),
             numpy_helper.from_array(scale.astype(np.float32), "gamma")]
    shape = [1, C, H, W] if through_transpose else [1, H * W, C]
    nodes = []
    h = "x"
    if through_transpose:
        nodes.append(helper.make_node("Transpose", ["x"], ["nhwc"], name="to_nhwc", perm=[0, 2, 3, 1]))
        h = "nhwc"
    nodes.append(helper.make_node("MatMul", [h, "w"], ["mm"], name="linear"))
    y = "mm"
    if bias:
        nodes.append(helper.make_node("Add", ["b", "mm"], ["biased"], name="bias"))
        y = "biased"
    if through_transpose:
        nodes.append(helper.make_node("Transpose", [y], ["nchw"], name="to_nchw", perm=[0, 3, 1, 2]))
        y = "nchw"
    nodes += [helper.make_node("Mul", ["gamma", y], ["scaled"], name="layer_scale"),
              helper.make_node("Add", ["scaled", "x"], ["out"], name="residual")]
    graph = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, shape)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _scales(shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(5).uniform(0.05, 1.0, shape)


@pytest.mark.parametrize("through_transpose,bias,scale_shape",
                         [(True, True, (C, 1, 1)), (False, True, (C,)), (False, False, (1, 1, C)),
                          (True, True, (1,))],
                         ids=["convnext-nchw", "plain", "plain-no-bias", "scalar"])
def test_layer_scale_folds_into_the_linear(through_transpose, bias, scale_shape):
    model = _block(_scales(scale_shape), through_transpose, bias)
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(7).standard_normal(dims).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    folded = onnx.ModelProto()
    folded.CopyFrom(model)
    assert fold_layer_scales(folded) == ["layer_scale"]
    assert [n.op_type for n in folded.graph.node].count("Mul") == 0
    onnx.checker.check_model(folded)
    again = ort.InferenceSession(folded.SerializeToString(),
                                 providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(again, want, rtol=1e-5, atol=1e-5)
    (got,), _ = npu.compile(model)(x)
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=2e-3)  # the cube in f16
    if through_transpose:  # the scaled weight's shape is known to the MatMul's rows rewrite
        assert "linear/mm" in import_onnx(model).node_types


def test_a_scale_that_would_flush_weights_to_subnormals_stays_a_mul():
    model = _block(np.full((C, 1, 1), 1e-6), through_transpose=True)  # ConvNeXt's initial scale
    assert fold_layer_scales(model) == []
    assert [n.op_type for n in model.graph.node].count("Mul") == 1


def test_a_scale_across_the_rows_or_a_shared_output_stays_a_mul():
    across_rows = _block(_scales((1, H, 1)), through_transpose=True)
    assert fold_layer_scales(across_rows) == []
    shared = _block(_scales((C, 1, 1)), through_transpose=True)
    shared.graph.output.append(helper.make_tensor_value_info("nchw", TensorProto.FLOAT, [1, C, H, W]))
    assert fold_layer_scales(shared) == []
