"""ONNX Gather (the embedding lookup) compiled, simulated and compared with
onnxruntime: the scalar unit reads each id and copies its row (exact: the
values only move)."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

import npu
from npu.frontend.onnx_import import SUPPORTED_OPS
from npu.simulator.errors import SimulationError
from onnx_models import model

F, H, I32, I64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT32, TensorProto.INT64
NUMPY = {F: np.float32, H: np.float16}


def embedding(vocab, hidden, ids_shape, dtype=F, table_input=False, axis=0, seed=0):
    """Gather(table, ids): the table an initializer (a weight) or an input."""
    table = np.random.default_rng(seed).standard_normal((vocab, hidden)).astype(NUMPY[dtype])
    out = list(ids_shape) + [hidden] if axis == 0 else [vocab] + list(ids_shape)
    node = helper.make_node("Gather", ["table", "ids"], ["y"], name="emb", axis=axis)
    inputs = [("ids", list(ids_shape), I32)]
    inits = []
    if table_input:
        inputs.insert(0, ("table", [vocab, hidden], dtype))
    else:
        inits.append(("table", table))
    return model([node], inputs, [("y", out, dtype)], inits), table


def run(m, feeds):
    kernel = npu.compile(m)
    outputs, report = kernel(*[feeds[n] for n in kernel.input_names])
    want = onnxruntime.InferenceSession(m.SerializeToString()).run(None, feeds)
    for got, expected in zip(outputs, want):
        assert got.shape == expected.shape and got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)  # a gather moves values: exact
    return report


def test_supported():
    assert {"Gather", "GatherElements", "GatherND"} <= SUPPORTED_OPS


@pytest.mark.parametrize("vocab,hidden,ids_shape,dtype", [
    (101, 48, (2, 7), F),     # odd vocab, batch x seq
    (30, 16, (9,), H),        # f16 rows of one block
    (101, 48, (3, 5), H),     # 96-byte f16 rows
    (7, 8, (1, 1), F),        # one id, one block
])
def test_embedding_weights(vocab, hidden, ids_shape, dtype):
    m, _ = embedding(vocab, hidden, ids_shape, dtype)
    rng = np.random.default_rng(1)
    ids = rng.integers(-vocab, vocab, size=ids_shape).astype(np.int32)
    ids.flat[0] = ids.flat[-1]  # a repeat
    ids.flat[min(1, ids.size - 1)] = -1  # the last row, counted from the end
    report = run(m, {"ids": ids})
    assert report["cycles"] > 0


def test_table_as_input_and_repeats():
    m, _ = embedding(30, 24, (4, 6), table_input=True)
    rng = np.random.default_rng(2)
    table = rng.standard_normal((30, 24)).astype(np.float32)
    ids = np.array([[0, 29, -30, -1, 5, 5]] * 4, np.int32)
    run(m, {"table": table, "ids": ids})


def test_axis_one():
    """Gather along axis 1 of [8, 40, 16]: rows of 16 f32 per outer index."""
    table = np.random.default_rng(3).standard_normal((8, 40, 16)).astype(np.float32)
    node = helper.make_node("Gather", ["table", "ids"], ["y"], name="emb", axis=1)
    m = model([node], [("table", [8, 40, 16]), ("ids", [3, 2], I32)], [("y", [8, 3, 2, 16])])
    run(m, {"table": table, "ids": np.array([[1, -1], [39, 0], [7, 7]], np.int32)})


def test_constant_int64_ids_with_runtime_table():
    """Constant (int64) position ids on a table that is an input: the ids are
    narrowed to i32 on the host, the lookup runs on the device."""
    ids = np.array([3, 0, -2, 9], np.int64)
    node = helper.make_node("Gather", ["table", "pos"], ["y"], name="emb", axis=0)
    m = model([node], [("table", [10, 32])], [("y", [4, 32])], [("pos", ids)])
    table = np.random.default_rng(4).standard_normal((10, 32)).astype(np.float32)
    run(m, {"table": table})


def test_out_of_range_id_is_a_located_error():
    m, _ = embedding(30, 16, (2, 3))
    kernel = npu.compile(m)
    ids = np.array([[0, 1, 2], [3, 30, 4]], np.int32)
    with pytest.raises(SimulationError) as e:
        kernel(ids)
    assert "bounds" in str(e.value) and "outside [-30, 29]" in str(e.value)
    assert "emb" in str(e.value)  # the ONNX node
    with pytest.raises(SimulationError, match="outside"):
        kernel(np.array([[0, 1, 2], [3, -31, 4]], np.int32))


@pytest.mark.parametrize("vocab,hidden,ids_shape,dtype", [
    (30, 20, (2, 3), F),      # 80-byte rows: realigned in UB
    (30, 20, (4, 7), H),
    (13, 5, (9,), F),         # rows under one block
    (7, 3, (2, 50), H),       # 100 rows of 6 bytes
])
def test_embedding_unaligned_rows(vocab, hidden, ids_shape, dtype):
    m, _ = embedding(vocab, hidden, ids_shape, dtype)
    rng = np.random.default_rng(5)
    ids = rng.integers(-vocab, vocab, size=ids_shape).astype(np.int32)
    ids.flat[0], ids.flat[-1] = vocab - 1, -vocab  # the last row (its burst ends at the table's end), the first
    run(m, {"ids": ids})


def test_gather_last_axis():
    """Axis 1 of a [6, 40] table: rows of one element."""
    node = helper.make_node("Gather", ["table", "ids"], ["y"], name="emb", axis=1)
    m = model([node], [("table", [6, 40]), ("ids", [5], I32)], [("y", [6, 5])])
    table = np.random.default_rng(6).standard_normal((6, 40)).astype(np.float32)
    run(m, {"table": table, "ids": np.array([39, 0, -1, 7, 7], np.int32)})


@pytest.mark.parametrize("data,ids,axis,dtype", [
    ((4, 6), (3, 5), 1, F),
    ((5, 3), (7, 3), 0, H),
    ((2, 3, 4), (2, 3, 2), 2, F),
])
def test_gather_elements(data, ids, axis, dtype):
    node = helper.make_node("GatherElements", ["x", "i"], ["y"], name="ge", axis=axis)
    m = model([node], [("x", list(data), dtype), ("i", list(ids), I32)], [("y", list(ids), dtype)])
    rng = np.random.default_rng(7)
    x = rng.standard_normal(data).astype(NUMPY[dtype])
    size = data[axis]
    run(m, {"x": x, "i": rng.integers(-size, size, size=ids).astype(np.int32)})


def test_gather_of_a_runtime_bool_mask():
    """The TorchScript BERT export's mask path: Cast(mask, bool), Flatten,
    Gather with constant indices; one-byte rows go through f16 (exact)."""
    nodes = [helper.make_node("Cast", ["m"], ["b"], to=TensorProto.BOOL, name="cast"),
             helper.make_node("Gather", ["b", "pos"], ["g"], axis=1, name="emb"),
             helper.make_node("Cast", ["g"], ["y"], to=TensorProto.FLOAT, name="back")]
    pos = np.array([0, 3, -1, 5, 5], np.int64)
    m = model(nodes, [("m", [2, 16])], [("y", [2, 5])], [("pos", pos)])
    mask = (np.random.default_rng(8).random((2, 16)) > 0.5).astype(np.float32)
    run(m, {"m": mask})


def test_scalar_index():
    """A rank-0 index drops the axis: a runtime one, and a constant int64 one
    (the last column of a runtime table)."""
    t = np.random.default_rng(0).standard_normal((5, 32)).astype(np.float32)
    node = helper.make_node("Gather", ["table", "ids"], ["y"], name="emb", axis=0)
    m = model([node], [("table", [5, 32]), ("ids", [], I32)], [("y", [32])])
    run(m, {"table": t, "ids": np.array(-2, np.int32)})
    node = helper.make_node("Gather", ["table", "ids"], ["y"], name="emb", axis=1)
    m = model([node], [("table", [5, 32])], [("y", [5])], [("ids", np.array(-1, np.int64))])
    run(m, {"table": t})


@pytest.mark.parametrize("splat", [False, True])
def test_constant_gathers_fold_on_the_host(splat):
    """The dynamo BERT export's token types: GatherElements of two
    initializers, then Gather of the token-type table: both fold on the host
    (a splat table folds to its element)."""
    rng = np.random.default_rng(10)
    buf, idx = np.zeros((1, 64), np.int64), np.arange(16, dtype=np.int64).reshape(1, 16)
    tt = np.ones((2, 32), np.float32) if splat else rng.standard_normal((2, 32)).astype(np.float32)
    nodes = [helper.make_node("GatherElements", ["buf", "idx"], ["tok"], axis=1, name="ge"),
             helper.make_node("Gather", ["tt", "tok"], ["e"], axis=0, name="emb"),
             helper.make_node("Add", ["e", "x"], ["y"], name="add")]
    m = model(nodes, [("x", [1, 16, 32])], [("y", [1, 16, 32])],
              [("buf", buf), ("idx", idx), ("tt", tt)])
    kernel = npu.compile(m)
    assert "gather" not in kernel.stages["ascend"]
    x = rng.standard_normal((1, 16, 32)).astype(np.float32)
    (got,), _ = kernel(x)
    (want,) = onnxruntime.InferenceSession(m.SerializeToString()).run(None, {"x": x})
    np.testing.assert_array_equal(got, want)


def test_constant_out_of_range_index_is_a_compile_error():
    node = helper.make_node("Gather", ["tt", "ids"], ["y"], axis=0, name="emb")
    m = model([node], [("tt", [2, 32])], [("y", [3, 32])], [("ids", np.array([0, 2, 1], np.int64))])
    with pytest.raises(Exception) as e:
        npu.compile(m)
    assert "node 'emb' (Gather)" in str(e.value) and "index 2 is out of range" in str(e.value)


@pytest.mark.parametrize("data,idx,out,identity", [
    # the dynamo exports' mask: [0, k] pairs over a [1, 16] bool mask (an identity)
    ((1, 16), np.stack([np.zeros(16, np.int64), np.arange(16)], -1).reshape(1, 1, 1, 16, 2),
     (1, 1, 1, 16), True),
    ((4, 5, 8), np.array([[1], [3], [-4]], np.int64), (3, 5, 8), False),
    ((4, 5, 8), np.array([[1, 2], [3, 4]], np.int64), (2, 8), False),
])
def test_gather_nd_with_constant_indices(data, idx, out, identity):
    nodes = [helper.make_node("Cast", ["x"], ["b"], to=TensorProto.BOOL, name="mask"),
             helper.make_node("GatherND", ["b", "idx"], ["g"], name="gnd"),
             helper.make_node("Cast", ["g"], ["y"], to=F, name="back")]
    m = model(nodes, [("x", list(data))], [("y", list(out))], [("idx", idx)])
    x = (np.random.default_rng(11).standard_normal(data) > 0).astype(np.float32)
    run(m, {"x": x})
    assert ("ascend.gather" in npu.compile(m).stages["ascend"]) != identity


def test_npu_run_random_ids_stay_in_range(tmp_path):
    """`npu-run model.onnx --check` with its random inputs: ids of a 3-row
    table are drawn in [-3, 3), so the check runs instead of faulting."""
    import onnx

    from npu.tools.npu_run import main

    m, _ = embedding(3, 16, (2, 5))
    path = tmp_path / "small.onnx"
    onnx.save(m, str(path))
    assert main([str(path), "--check", "--json"]) == 0
