"""A Transpose that moves only unit axes is a Reshape (`onnx_unit_transposes`):
ConvNeXt's classifier LayerNorm on its pooled [1, C, 1, 1] map, against
onnxruntime; a Transpose that reorders two long axes stays one."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import npu
from npu.frontend.onnx_unit_transposes import rewrite_unit_transposes


def _model(shape: list[int], perm: list[int], back: list[int], norm: bool) -> onnx.ModelProto:
    inner = [shape[a] for a in perm]
    nodes = [helper.make_node("Transpose", ["x"], ["t"], name="to_last", perm=perm)]
    inits = []
    if norm:
        c = inner[-1]
        inits = [numpy_helper.from_array(np.linspace(0.5, 1.5, c, dtype=np.float32), "g"),
                 numpy_helper.from_array(np.linspace(-1, 1, c, dtype=np.float32), "b")]
        nodes.append(helper.make_node("LayerNormalization", ["t", "g", "b"], ["n"], name="ln", axis=-1))
    nodes.append(helper.make_node("Transpose", ["n" if norm else "t"], ["y"], name="back", perm=back))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_the_pooled_maps_layernorm_reads_a_reshape():
    model = _model([1, 96, 1, 1], [0, 2, 3, 1], [0, 3, 1, 2], norm=True)
    x = np.random.default_rng(2).standard_normal((1, 96, 1, 1)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(model)
    assert rewrite_unit_transposes(rewritten) == ["to_last", "back"]
    assert [n.op_type for n in rewritten.graph.node] == ["Reshape", "LayerNormalization", "Reshape"]
    (got,), _ = npu.compile(model)(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_transpose_of_two_long_axes_stays():
    model = _model([1, 4, 1, 8], [0, 3, 2, 1], [0, 3, 2, 1], norm=False)
    assert rewrite_unit_transposes(model) == []
    assert [n.op_type for n in model.graph.node] == ["Transpose", "Transpose"]
