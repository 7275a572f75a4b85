"""Gathers with constant indices that only move data (`onnx_indexing`):
written as a Reshape or a Slice, the same values as onnxruntime computes on
the original; any other gather is kept."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

import npu
from npu.frontend.onnx_fold import fold_constants
from onnx_models import model


def ort(m: onnx.ModelProto, **feeds) -> list[np.ndarray]:
    session = onnxruntime.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def rewritten(m: onnx.ModelProto) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(m)
    fold_constants(copy)
    onnx.checker.check_model(copy, full_check=True)
    return copy


def gather(op: str, indices: np.ndarray, data_shape, out_shape, **attrs) -> onnx.ModelProto:
    nodes = [helper.make_node(op, ["x", "idx"], ["g"], name="gather", **attrs),
             helper.make_node("Relu", ["g"], ["y"], name="relu")]
    return model(nodes, [("x", list(data_shape))], [("y", list(out_shape))],
                 [("idx", indices.astype(np.int64))])


def dynamo_mask_gathernd() -> onnx.ModelProto:
    # mask[:, None, None, :] as dynamo writes it: index pairs (0, j).
    j = np.arange(16)
    idx = np.stack([np.zeros_like(j), j], axis=-1).reshape(1, 1, 1, 16, 2)
    return gather("GatherND", idx, [1, 16], [1, 1, 1, 16])


CASES = {
    "gathernd_mask": (dynamo_mask_gathernd(), ["Reshape", "Relu"]),
    "gather_arange": (gather("Gather", np.arange(16).reshape(1, 1, 1, 16), [16], [1, 1, 1, 16]),
                      ["Reshape", "Relu"]),
    "gather_rows_box": (gather("Gather", np.array([2, 3, 4]), [6, 8], [3, 8], axis=0), ["Slice", "Relu"]),
    "gather_cols_box": (gather("Gather", np.array([[1, 2], [3, 4]]), [3, 6], [3, 2, 2], axis=1),
                        ["Slice", "Reshape", "Relu"]),
    "gather_elements_identity": (gather("GatherElements", np.tile(np.arange(5), (4, 1)), [4, 5], [4, 5],
                                        axis=1), ["Relu"]),  # an Identity, bypassed
    "gather_negative": (gather("Gather", np.array([-2, -1]), [6, 8], [2, 8], axis=0), ["Slice", "Relu"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gather_by_constant_indices_becomes_data_movement(name):
    original, want = CASES[name]
    m = rewritten(original)
    assert [n.op_type for n in m.graph.node] == want
    assert m.graph.node[0].name == ("gather" if len(want) > 1 else "relu")  # locations stay
    shape = [d.dim_value for d in original.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(ort(m, x=x)[0], ort(original, x=x)[0])


@pytest.mark.parametrize("indices, out", [(np.array([3, 1]), [2, 8]), (np.array([0, 0]), [2, 8]),
                                          (np.array([0, 2]), [2, 8])])
def test_other_gathers_are_kept(indices, out):
    m = rewritten(gather("Gather", indices, [6, 8], out, axis=0))
    assert [n.op_type for n in m.graph.node] == ["Gather", "Relu"]


def test_embedding_lookup_is_kept():
    # Constant data, indices from the input: the embedding lookup is a real gather.
    table = np.arange(40, dtype=np.float32).reshape(10, 4)
    nodes = [helper.make_node("Gather", ["table", "ids"], ["y"], name="embed", axis=0)]
    m = rewritten(model(nodes, [("ids", [3], TensorProto.INT32)], [("y", [3, 4])], [("table", table)]))
    assert [n.op_type for n in m.graph.node] == ["Gather"]


def test_mask_gather_compiles_and_matches():
    original = dynamo_mask_gathernd()
    x = np.random.default_rng(1).standard_normal((1, 16)).astype(np.float32)
    (got,), _ = npu.compile(original)(x)
    np.testing.assert_array_equal(got, ort(original, x=x)[0])


def one_node(op: str, extra: list[tuple[str, np.ndarray]], shape=(2, 1, 5), out=None, **attrs):
    names = ["x"] + [n for n, _ in extra]
    nodes = [helper.make_node(op, names, ["m"], name="moved", **attrs),
             helper.make_node("Neg", ["m"], ["y"], name="neg")]
    return model(nodes, [("x", list(shape))], [("y", list(out or shape))], extra)


I64 = np.int64
NOTHING_MOVED = {
    "expand_same": one_node("Expand", [("s", np.array([2, 1, 5], I64))]),
    "expand_broadcast_same": one_node("Expand", [("s", np.array([1, 5], I64))]),
    "reshape_same": one_node("Reshape", [("s", np.array([2, -1, 5], I64))]),
    "tile_ones": one_node("Tile", [("r", np.array([1, 1, 1], I64))]),
    "slice_all": one_node("Slice", [("st", np.array([0], I64)), ("en", np.array([99], I64)),
                                    ("ax", np.array([2], I64)), ("sp", np.array([1], I64))]),
    "transpose_identity": one_node("Transpose", [], perm=[0, 1, 2]),
    "concat_one": one_node("Concat", [], axis=1),
    "cast_same": one_node("Cast", [], to=TensorProto.FLOAT),
}
MOVED = {
    "slice_reversed": one_node("Slice", [("st", np.array([-1], I64)), ("en", np.array([-99], I64)),
                                         ("ax", np.array([2], I64)), ("sp", np.array([-1], I64))]),
    "expand_grows": one_node("Expand", [("s", np.array([2, 3, 5], I64))], out=(2, 3, 5)),
    "transpose_swaps": one_node("Transpose", [], out=(5, 1, 2), perm=[2, 1, 0]),
}


@pytest.mark.parametrize("name", sorted(NOTHING_MOVED))
def test_data_movement_that_moves_nothing_is_an_identity(name):
    original = NOTHING_MOVED[name]
    m = rewritten(original)  # an Identity, which its reader then bypasses
    assert [(n.name, n.op_type, list(n.input)) for n in m.graph.node] == [("neg", "Neg", ["x"])]
    x = np.random.default_rng(2).standard_normal((2, 1, 5)).astype(np.float32)
    np.testing.assert_array_equal(ort(m, x=x)[0], ort(original, x=x)[0])


@pytest.mark.parametrize("name", sorted(MOVED))
def test_data_movement_that_moves_something_is_kept(name):
    m = rewritten(MOVED[name])
    assert m.graph.node[0].op_type == MOVED[name].graph.node[0].op_type
