"""Shape inference and the checker run on a model's skeleton (the graph with
its large float weights declared, not carried): the types they find are the
full model's, the small constants data propagation reads stay, and the
weights' bytes are neither copied nor changed."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from npu.frontend.onnx_checks import value_types
from npu.frontend.onnx_skeleton import WEIGHT_MIN_BYTES, infer_shapes, is_weight, skeleton

from onnx_models import model


def _reshaping_mlp() -> onnx.ModelProto:
    """MatMul by a large weight, then a Reshape whose shape is a small int64
    initializer (shape inference must read its values)."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((64, 96)).astype(np.float32)  # 24 KiB: a weight
    bias = rng.standard_normal(4).astype(np.float32)  # 16 bytes: kept
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Reshape", ["h", "shape"], ["r"]),
             helper.make_node("Add", ["r", "b"], ["y"])]
    return model(nodes, [("x", [8, 64])], [("y", [192, 4])],
                 [("w", w), ("shape", np.array([192, 4], np.int64)), ("b", bias)])


def test_the_skeleton_declares_weights_and_keeps_small_constants() -> None:
    full = _reshaping_mlp()
    skel = skeleton(full)
    kept = {t.name for t in skel.graph.initializer}
    assert kept == {"shape", "b"}
    declared = {v.name: v for v in skel.graph.input}
    assert "w" in declared and [d.dim_value for d in
                                declared["w"].type.tensor_type.shape.dim] == [64, 96]
    assert is_weight(full.graph.initializer[0]) and 64 * 96 * 4 >= WEIGHT_MIN_BYTES
    assert skel.ByteSize() < full.ByteSize() - 64 * 96 * 4 + 1024


def test_inference_on_the_skeleton_finds_the_full_models_types() -> None:
    full = _reshaping_mlp()
    before = full.SerializeToString()
    mine = value_types(infer_shapes(full, data_prop=True))
    theirs = value_types(onnx.shape_inference.infer_shapes(full, data_prop=True))
    assert mine == theirs
    assert mine["r"] == ([192, 4], TensorProto.FLOAT)  # read through the kept shape constant
    assert full.SerializeToString() == before  # the model itself is untouched
