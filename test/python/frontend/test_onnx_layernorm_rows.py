"""LayerNormalization over C of an NHWC map (ConvNeXt) is normalized over
one row dim (`onnx_layernorm_rows`): 14 x 14 = 196 rows, not whole 16-row
blocks, then split over the cores as whole blocks plus a peeled rest,
where the rows along two dims kept the group on one core."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import npu
from npu import diagnostics


def _model(shape: list[int]):
    """LayerNorm, then a pointwise layer: the row group stores the matmul's
    A in Nz, whose last row block is partial at 196 rows."""
    c = shape[-1]
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(rng.uniform(0.5, 1.5, c).astype(np.float32), "g"),
             numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "b"),
             numpy_helper.from_array((rng.standard_normal((c, 256)) / 16).astype(np.float32), "w")]
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["n"], name="ln", axis=-1,
                              epsilon=1e-6),
             helper.make_node("MatMul", ["n", "w"], ["y"], name="fc")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape[:-1] + [256])],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("cores", [1, 8])
def test_layernorm_of_an_nhwc_map_splits_and_matches_onnxruntime(cores):
    m = _model([1, 14, 14, 256])
    with diagnostics.collecting() as engine:
        kernel = npu.compile(m, cores=cores)
    x = np.random.default_rng(6).standard_normal((1, 14, 14, 256)).astype(np.float32) * 3 + 1
    (y,), report = kernel(x)
    (want,) = onnxruntime.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=2e-2)  # the cube's f16 operands
    assert report["hazards"] == []
    if cores > 1:
        said = " ".join(d.message for d in engine.diagnostics if "npu-split-cores:" in d.message)
        # whole row blocks on most cores, the peeled rest (4 rows) on one
        assert "fused rows: 1 core" in said and "on core" in said and "fused rows 1 core" not in said, said


def test_one_row_dim_is_left_as_it_is():
    """[1, S, C] (BERT's) already has its rows along one dim."""
    from npu.frontend.onnx_fold import inferred_types
    from npu.frontend.onnx_layernorm_rows import flatten_layernorm_rows

    m = _model([1, 20, 64])
    assert flatten_layernorm_rows(m, inferred_types(m)) == []
    m = _model([1, 14, 14, 64])
    assert flatten_layernorm_rows(m, inferred_types(m)) == ["ln"]
    assert [n.op_type for n in m.graph.node] == ["Reshape", "LayerNormalization", "Reshape", "MatMul"]


def _residual_model(shape: list[int]):
    """s = x + r (read by the LayerNorm and by another Add), then `_model`'s
    LayerNorm and pointwise layer: Swin's residual before norm2."""
    m = _model(shape)
    g = m.graph
    g.node[0].input[0] = "s"
    g.node.insert(0, helper.make_node("Add", ["x", "r"], ["s"], name="residual"))
    g.node.append(helper.make_node("Add", ["s", "s"], ["z"], name="again"))
    g.input.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, shape))
    g.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, shape))
    return m


def test_a_residual_add_before_the_layernorm_is_added_over_rows():
    """Fused with the LayerNorm, the Add's rows along two dims kept the
    group on one core; over rows it peels like the LayerNorm alone."""
    from npu.frontend.onnx_fold import inferred_types
    from npu.frontend.onnx_layernorm_rows import flatten_layernorm_rows

    shape = [1, 14, 14, 256]
    m = _residual_model(shape)
    rewritten = _residual_model(shape)
    assert flatten_layernorm_rows(rewritten, inferred_types(rewritten)) == ["ln"]
    assert [n.op_type for n in rewritten.graph.node] == ["Reshape", "Reshape", "Add", "Reshape",
                                                         "LayerNormalization", "Reshape", "MatMul", "Add"]
    with diagnostics.collecting() as engine:
        kernel = npu.compile(m, cores=8)
    rng = np.random.default_rng(7)
    x, r = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    (y, z), report = kernel(x, r)
    want = onnxruntime.InferenceSession(m.SerializeToString()).run(None, {"x": x, "r": r})
    np.testing.assert_allclose(y, want[0], rtol=2e-2, atol=2e-2)
    np.testing.assert_allclose(z, want[1], rtol=1e-6)
    assert report["hazards"] == []
    said = " ".join(d.message for d in engine.diagnostics if "npu-split-cores:" in d.message)
    lone = [part for part in said.split(";") if "fused rows: 1 core" in part]
    assert lone and all("on core" in part for part in lone), said  # only the peeled rest alone
