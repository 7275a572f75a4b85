"""Self-attention whose input is a matmul's result (ELECTRA's and ALBERT's
embedding projection, 32 -> 64, before the first layer): npu-fuse chains
that result into the Q/K/V projection's L1, then the attention absorbs the
projection and reads X from GM; the chain is undone (the X store goes to
GM), where it left X with no GM address ("GM temporaries ... have no place
in the kernel's argument area")."""

from __future__ import annotations

import numpy as np
import onnxruntime
from onnx import helper, numpy_helper, TensorProto

import npu
from npu.frontend.bert import self_attention


def _projected_attention():
    model = self_attention(16, 64, 4)
    graph = model.graph
    rng = np.random.default_rng(3)
    graph.initializer.extend([
        numpy_helper.from_array((rng.standard_normal((32, 64)) / 6).astype(np.float32), "w_embed"),
        numpy_helper.from_array((rng.standard_normal(64) * 0.1).astype(np.float32), "b_embed")])
    front = [helper.make_node("MatMul", ["e", "w_embed"], ["e0"], name="embed_proj"),
             helper.make_node("Add", ["e0", "b_embed"], ["x"], name="embed_bias")]
    nodes = front + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    graph.input[0].CopyFrom(helper.make_tensor_value_info("e", TensorProto.FLOAT, [1, 16, 32]))
    return model


def test_attention_reading_a_projected_input_compiles_and_matches_onnxruntime():
    model = _projected_attention()
    kernel = npu.compile(model, cores=1)
    e = np.random.default_rng(4).standard_normal((1, 16, 32)).astype(np.float32)
    (y,), report = kernel(e)
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"e": e})
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=2e-2 * float(np.abs(want).max()))
    assert report["hazards"] == []
