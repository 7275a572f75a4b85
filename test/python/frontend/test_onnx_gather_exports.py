"""The token embeddings of real exports (test/models/, made by a26's
make_exports.py from HuggingFace BERT and GPT-2): the subgraph from
`input_ids` to the word-embedding Gather, with the ids given as i32 (what
the boundary narrows int64 ids to), compiled and compared with onnxruntime."""

from __future__ import annotations

import os

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, utils

import npu

MODELS = os.path.join(os.path.dirname(__file__), "..", "..", "models")


def embedding_subgraph(name: str) -> onnx.ModelProto:
    m = onnx.shape_inference.infer_shapes(onnx.load(os.path.join(MODELS, f"{name}.onnx")))
    tables = {i.name for i in m.graph.initializer if list(i.dims) == [100, 32]}  # vocab x hidden
    node = next(n for n in m.graph.node if n.op_type == "Gather" and n.input[0] in tables)
    sub = utils.Extractor(m).extract_model(["input_ids"], [node.output[0]])
    sub.graph.name = "embedding"
    sub.graph.input[0].type.tensor_type.elem_type = TensorProto.INT32
    del sub.graph.value_info[:]  # inferred for int64 ids
    return sub


@pytest.mark.parametrize("name,ops", [("bert_ts_eager", ["Gather"]),
                                      ("gpt2_ts_eager", ["Constant", "Reshape", "Gather"])])
def test_word_embedding_of_real_exports(name, ops):
    sub = embedding_subgraph(name)
    assert [n.op_type for n in sub.graph.node] == ops
    ids = np.random.default_rng(0).integers(-100, 100, (1, 16)).astype(np.int32)
    kernel = npu.compile(sub)
    (got,), report = kernel(ids)
    (want,) = onnxruntime.InferenceSession(sub.SerializeToString()).run(None, {"input_ids": ids})
    np.testing.assert_array_equal(got, want)
    assert "ascend.gather" in kernel.stages["ascend"]


def test_bert_style_embedding_block():
    """Word + position embeddings and LayerNorm (BERT's embeddings with the
    token types folded): the gather feeds the fused row kernels."""
    from onnx import helper
    from onnx_models import model

    rng = np.random.default_rng(9)
    words = rng.standard_normal((100, 64)).astype(np.float32)
    pos = rng.standard_normal((1, 16, 64)).astype(np.float32)
    scale, bias = rng.standard_normal(64).astype(np.float32), rng.standard_normal(64).astype(np.float32)
    nodes = [helper.make_node("Gather", ["words", "input_ids"], ["w"], name="word_embeddings"),
             helper.make_node("Add", ["w", "pos"], ["e"], name="add"),
             helper.make_node("LayerNormalization", ["e", "scale", "bias"], ["y"], name="ln",
                              axis=-1, epsilon=1e-12)]
    m = model(nodes, [("input_ids", [1, 16], TensorProto.INT32)], [("y", [1, 16, 64])],
              [("words", words), ("pos", pos), ("scale", scale), ("bias", bias)])
    ids = rng.integers(0, 100, (1, 16)).astype(np.int32)
    (got,), report = npu.compile(m)(ids)
    (want,) = onnxruntime.InferenceSession(m.SerializeToString()).run(None, {"input_ids": ids})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
