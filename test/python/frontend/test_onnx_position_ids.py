"""RoBERTa's (and XLM-R's, MPNet's) position ids, computed from the token
ids, against onnxruntime: `CumSum` (`onnx_cumsum`: shifted adds) of the
bool-to-int `Cast` of the tokens that are not padding, then a `Gather` of
the position table by those computed ids (`onnx_computed_gather`: a
one-hot matmul), and the buffered token types read at the positions (a
gather from constant zeros: folded, `onnx_indexing`)."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

import npu
from onnx_models import model

PAD = 1


def _positions_model(seq: int = 16, rows: int = 40, hidden: int = 32):
    rng = np.random.default_rng(0)
    inits = [("pad", np.array(PAD, np.int64)), ("axis", np.array(1, np.int64)),
             ("table", (rng.standard_normal((rows, hidden)) * 0.5).astype(np.float32)),
             ("types", np.zeros((1, rows), np.int64)),
             ("type_table", (rng.standard_normal((2, hidden)) * 0.5).astype(np.float32))]
    nodes = [helper.make_node("Equal", ["ids", "pad"], ["is_pad"], name="eq"),
             helper.make_node("Not", ["is_pad"], ["token"], name="not"),
             helper.make_node("Cast", ["token"], ["t32"], name="cast", to=TensorProto.INT32),
             helper.make_node("CumSum", ["t32", "axis"], ["count"], name="cumsum"),
             helper.make_node("Mul", ["count", "t32"], ["masked"], name="mul"),
             helper.make_node("Cast", ["masked"], ["m64"], name="cast64", to=TensorProto.INT64),
             helper.make_node("Add", ["m64", "pad"], ["positions"], name="add"),
             helper.make_node("Gather", ["table", "positions"], ["pos_emb"], name="pos_gather"),
             helper.make_node("GatherElements", ["types", "positions"], ["type_ids"], name="types_at",
                              axis=1),
             helper.make_node("Gather", ["type_table", "type_ids"], ["type_emb"], name="type_gather"),
             helper.make_node("Add", ["pos_emb", "type_emb"], ["y"], name="sum")]
    return model(nodes, [("ids", [1, seq], TensorProto.INT64)], [("y", [1, seq, hidden])], inits)


def test_roberta_position_embeddings_match_onnxruntime():
    m = _positions_model()
    ids = np.random.default_rng(1).integers(2, 30, (1, 16)).astype(np.int64)
    ids[0, -4:] = PAD  # padding at the end: positions stop counting there
    kernel = npu.compile(m, cores=1)
    (y,), report = kernel(ids)
    (want,) = onnxruntime.InferenceSession(m.SerializeToString()).run(None, {"ids": ids})
    np.testing.assert_allclose(y, want, rtol=2e-3, atol=2e-3)  # the table as f16 cube operands
    assert report["hazards"] == []


@pytest.mark.parametrize("reverse,exclusive", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum_of_floats_along_an_inner_axis_matches_onnxruntime(reverse, exclusive):
    """[2, 11, 8] along axis 1 (11: not a power of two)."""
    nodes = [helper.make_node("CumSum", ["x", "axis"], ["y"], name="scan", reverse=reverse,
                              exclusive=exclusive)]
    m = model(nodes, [("x", [2, 11, 8])], [("y", [2, 11, 8])], [("axis", np.array(-2, np.int32))])
    x = np.random.default_rng(2).standard_normal((2, 11, 8)).astype(np.float32)
    (y,), _ = npu.compile(m, cores=1)(x)
    (want,) = onnxruntime.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_a_gather_of_a_large_table_by_computed_ids_stays_a_located_error():
    """Past MAX_ROWS rows the one-hot form is not taken: npu-lower-gather
    names the node whose indices the device computes."""
    from npu.frontend.compile import CompileError
    from npu.frontend.onnx_computed_gather import MAX_ROWS

    rows = MAX_ROWS + 1
    nodes = [helper.make_node("Add", ["ids", "one"], ["shifted"], name="shift"),
             helper.make_node("Gather", ["table", "shifted"], ["y"], name="big_gather")]
    m = model(nodes, [("ids", [1, 4], TensorProto.INT32)], [("y", [1, 4, 8])],
              [("one", np.array(1, np.int32)), ("table", np.random.default_rng(3).standard_normal((rows, 8)).astype(np.float32))])
    with pytest.raises(CompileError, match=r"node 'big_gather' \(Gather\): the indices are computed "
                                           r"on the device"):
        npu.compile(m, cores=1)
