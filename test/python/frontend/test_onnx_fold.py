"""ONNX-level constant folding (`npu.frontend.onnx_fold`): the static-shape
plumbing exporters leave in a graph is computed at compile time, dead nodes
go, the nodes left keep their names, and the folded model computes what
onnxruntime computes on the original."""

from __future__ import annotations

import os

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import npu
from npu.frontend.compile import CompileError
from npu.frontend.onnx_fold import FOLD_MAX_BYTES, fold_constants
from onnx_models import model

I64 = TensorProto.INT64
MODELS = os.path.join(os.path.dirname(__file__), "..", "..", "models")


def const(name: str, values, dtype=np.int64):
    return helper.make_node("Constant", [], [name], name=f"c_{name}",
                            value=numpy_helper.from_array(np.asarray(values, dtype), name))


def ort(m: onnx.ModelProto, **feeds) -> list[np.ndarray]:
    session = onnxruntime.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def folded(m: onnx.ModelProto) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(m)
    fold_constants(copy)
    onnx.checker.check_model(copy, full_check=True)
    return copy


def ops(m: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in m.graph.node]


def reshape_by_shape() -> onnx.ModelProto:
    """x[2,3,4] -> Reshape to [batch, -1] with the batch read by Shape: what
    torch.onnx writes for `x.view(x.size(0), -1)`."""
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             const("zero", 0),
             helper.make_node("Gather", ["s", "zero"], ["b"], name="gather", axis=0),
             const("ax", [0]),
             helper.make_node("Unsqueeze", ["b", "ax"], ["b1"], name="unsqueeze"),
             const("minus1", [-1]),
             helper.make_node("Concat", ["b1", "minus1"], ["shape2"], name="concat", axis=0),
             helper.make_node("Reshape", ["x", "shape2"], ["r"], name="reshape"),
             helper.make_node("Relu", ["r"], ["y"], name="relu")]
    return model(nodes, [("x", [2, 3, 4])], [("y", [2, 12])])


def test_shape_gather_unsqueeze_concat_reshape_folds():
    m = folded(reshape_by_shape())
    assert ops(m) == ["Reshape", "Relu"]
    assert [n.name for n in m.graph.node] == ["reshape", "relu"]  # names survive
    shape = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}["shape2"]
    assert shape.tolist() == [2, -1]
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(ort(m, x=x)[0], ort(reshape_by_shape(), x=x)[0])


def attention_mask_bias() -> onnx.ModelProto:
    """A causal mask built from constants (Range, Unsqueeze, Less/Equal,
    ConstantOfShape, Where, Cast, Expand, Sub/Mul): all of it folds; the
    Add on the scores is what is left."""
    seq = 6
    nodes = [const("start", 0), const("limit", seq), const("delta", 1),
             helper.make_node("Range", ["start", "limit", "delta"], ["pos"], name="range"),
             const("ax0", [0]), const("ax1", [1]),
             helper.make_node("Unsqueeze", ["pos", "ax0"], ["row"], name="row"),
             helper.make_node("Unsqueeze", ["pos", "ax1"], ["col"], name="col"),
             helper.make_node("Greater", ["row", "col"], ["future"], name="future"),
             const("dims", [1, seq, seq]),
             helper.make_node("ConstantOfShape", ["dims"], ["zeros"], name="zeros",
                              value=numpy_helper.from_array(np.array([0.0], np.float32))),
             const("neg", -1e4, np.float32),
             helper.make_node("Where", ["future", "neg", "zeros"], ["bias"], name="where"),
             helper.make_node("Cast", ["future"], ["futuref"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("Mul", ["futuref", "neg"], ["bias2"], name="mul"),
             helper.make_node("Sub", ["bias", "bias2"], ["zero_bias"], name="sub"),
             helper.make_node("Expand", ["bias", "dims"], ["bias3"], name="expand"),
             helper.make_node("Add", ["scores", "bias3"], ["masked"], name="add"),
             helper.make_node("Add", ["masked", "zero_bias"], ["y"], name="add2")]
    return model(nodes, [("scores", [1, seq, seq])], [("y", [1, seq, seq])])


def test_mask_built_from_constants_folds():
    original = attention_mask_bias()
    m = folded(original)
    assert ops(m) == ["Add", "Add"]
    assert {n.name for n in m.graph.node} == {"add", "add2"}
    assert {t.name for t in m.graph.initializer} == {"bias3", "zero_bias"}  # nothing dead left
    s = np.random.default_rng(1).standard_normal((1, 6, 6)).astype(np.float32)
    np.testing.assert_array_equal(ort(m, scores=s)[0], ort(original, scores=s)[0])


def test_identities_are_bypassed_unless_they_are_outputs():
    nodes = [helper.make_node("Identity", ["x"], ["a"], name="id1"),
             helper.make_node("Identity", ["a"], ["b"], name="id2"),
             helper.make_node("Neg", ["b"], ["c"], name="neg"),
             helper.make_node("Identity", ["c"], ["y"], name="id_out")]
    m = folded(model(nodes, [("x", [4])], [("y", [4])]))
    assert [(n.name, list(n.input)) for n in m.graph.node] == [("neg", ["x"]), ("id_out", ["c"])]


def test_dead_nodes_and_initializers_are_removed():
    w = np.ones((4, 4), np.float32)
    nodes = [helper.make_node("Relu", ["x"], ["unused"], name="dead_relu"),
             helper.make_node("MatMul", ["x", "w"], ["dead_mm"], name="dead_mm"),
             helper.make_node("Neg", ["x"], ["y"], name="neg")]
    m = folded(model(nodes, [("x", [4, 4])], [("y", [4, 4])], [("w", w)]))
    assert [n.name for n in m.graph.node] == ["neg"]
    assert not m.graph.initializer
    assert [v.name for v in m.graph.input] == ["x"]  # the interface stays


def test_folded_graph_output_stays_a_named_constant():
    nodes = [const("dims", [2, 3]),
             helper.make_node("ConstantOfShape", ["dims"], ["ones"], name="ones",
                              value=numpy_helper.from_array(np.array([1.0], np.float32))),
             helper.make_node("Add", ["x", "ones"], ["y"], name="add")]
    m = folded(model(nodes, [("x", [2, 3])], [("y", [2, 3]), ("ones", [2, 3])]))
    assert [(n.name, n.op_type) for n in m.graph.node] == [("ones", "Constant"), ("add", "Add")]


def test_too_large_results_stay_nodes():
    side = int(np.sqrt(FOLD_MAX_BYTES // 4)) + 1
    nodes = [const("dims", [side, side]),
             helper.make_node("ConstantOfShape", ["dims"], ["big"], name="big",
                              value=numpy_helper.from_array(np.array([1.0], np.float32))),
             helper.make_node("ReduceSum", ["big"], ["y"], name="sum", keepdims=0)]
    m = folded(model(nodes, [], [("y", [])]))
    assert "ConstantOfShape" in ops(m)


def test_random_ops_are_not_folded():
    nodes = [helper.make_node("RandomNormal", [], ["r"], name="rand", shape=[2, 3]),
             helper.make_node("Add", ["x", "r"], ["y"], name="add")]
    m = folded(model(nodes, [("x", [2, 3])], [("y", [2, 3])]))
    assert ops(m) == ["RandomNormal", "Add"]


def test_nodes_fold_at_the_models_own_opset():
    # Squeeze with an `axes` attribute exists up to opset 12 only.
    nodes = [const("c", np.zeros((1, 3)), np.float32),
             helper.make_node("Squeeze", ["c"], ["s"], name="squeeze", axes=[0]),
             helper.make_node("Add", ["x", "s"], ["y"], name="add")]
    m = folded(model(nodes, [("x", [3])], [("y", [3])], opset=11))
    assert ops(m) == ["Add"]


@pytest.mark.parametrize("start, end, want", [(None, None, [2, 3, 4]), (1, None, [3, 4]),
                                              (-1, None, [4]), (0, -1, [2, 3]), (5, None, [])])
def test_shape_start_end(start, end, want):
    attrs = {k: v for k, v in (("start", start), ("end", end)) if v is not None}
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape", **attrs),
             helper.make_node("Cast", ["s"], ["sf"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("ReduceSum", ["x"], ["t"], name="sum", keepdims=0),
             helper.make_node("Add", ["t", "sf"], ["y"], name="add")]
    m = folded(model(nodes, [("x", [2, 3, 4])], [("y", [len(want)])], opset=17))
    assert numpy_helper.to_array(m.graph.initializer[0]).tolist() == want


def test_a_node_the_evaluator_refuses_is_kept():
    # An index out of range: the model is invalid, and the check names it.
    nodes = [const("data", [1, 2, 3]), const("idx", 7),
             helper.make_node("Gather", ["data", "idx"], ["g"], name="gather"),
             helper.make_node("Cast", ["g"], ["gf"], name="cast", to=TensorProto.FLOAT),
             helper.make_node("Add", ["x", "gf"], ["y"], name="add")]
    m = folded(model(nodes, [("x", [3])], [("y", [3])]))
    assert "Gather" in ops(m)


def test_an_invalid_node_is_not_rewritten_out_of_sight():
    # A one-input Concat is an Identity, but not with an axis out of range:
    # it stays, and the checks name it.
    nodes = [helper.make_node("Concat", ["x"], ["c"], name="concat", axis=5),
             helper.make_node("Neg", ["c"], ["y"], name="neg")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    out = onnx.ModelProto()
    out.CopyFrom(m)
    fold_constants(out)
    assert ops(out) == ["Concat", "Neg"]
    with pytest.raises(CompileError, match="node 'concat' \\(Concat\\)"):
        npu.compile(m)


def test_folded_model_compiles_and_matches_onnxruntime():
    x = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    kernel = npu.compile(reshape_by_shape())
    (got,), _ = kernel(x)
    np.testing.assert_allclose(got, ort(reshape_by_shape(), x=x)[0], rtol=1e-6)


@pytest.mark.parametrize("name", ["bert_ts_eager", "gpt2_ts_sdpa", "vit_ts_eager"])
def test_exports_lose_their_shape_plumbing(name):
    m = onnx.load(os.path.join(MODELS, f"{name}.onnx"))
    out = folded(m)
    outputs = {o.name for o in out.graph.output}  # an Identity may write a graph output
    left = {n.op_type for n in out.graph.node if not set(n.output) & outputs}
    assert not left & {"Shape", "ConstantOfShape", "Range", "Size", "Identity", "Unsqueeze"}, left
    assert len(out.graph.node) < 0.85 * len(m.graph.node)
    feeds = {"pixel_values": np.random.default_rng(3).standard_normal((1, 3, 32, 32)).astype(np.float32)}
    if "vit" not in name:
        ids = np.random.default_rng(3).integers(0, 100, (1, 16))
        feeds = {"input_ids": ids, "attention_mask": (np.arange(16) < 12).astype(np.int64)[None]}
    for got, want in zip(ort(out, **feeds), ort(m, **feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_pad_of_zeros_is_an_identity_and_a_shifting_pad_is_kept():
    """Swin pads its map to whole windows; with whole windows already the
    pads (computed from shapes) fold to zeros and the Pad moves nothing. A
    Pad of -1 before and +1 after keeps the dims but shifts: kept."""
    def padded(pads):
        nodes = [const("pads", pads), helper.make_node("Pad", ["x", "pads"], ["p"], name="pad"),
                 helper.make_node("Relu", ["p"], ["y"], name="relu")]
        return model(nodes, [("x", [1, 8, 8, 4])], [("y", [1, 8, 8, 4])])

    m = folded(padded([0] * 8))
    assert ops(m) == ["Relu"] and m.graph.node[0].input[0] == "x"
    assert "Pad" in ops(folded(padded([0, -1, 0, 0, 0, 1, 0, 0])))


def test_shapes_read_block_after_block_fold_past_eight_rounds():
    """MobileViT reshapes each transformer layer by its input's Shape: a
    round of folding per block. Twelve such blocks fold whole."""
    nodes, x = [], "x"
    for i in range(12):
        nodes += [helper.make_node("Shape", [x], [f"s{i}"], name=f"shape{i}"),
                  helper.make_node("Reshape", [x, f"s{i}"], [f"r{i}"], name=f"reshape{i}"),
                  helper.make_node("Relu", [f"r{i}"], [f"a{i}"], name=f"relu{i}")]
        x = f"a{i}"
    m = model(nodes, [("x", [2, 3, 4])], [(x, [2, 3, 4])])
    # Reshape's output shape is unknown until its shape input is known:
    # shape inference leaves r{i} (and what follows) without dims.
    for value in list(m.graph.value_info):
        m.graph.value_info.remove(value)
    assert "Shape" not in ops(folded(m))


def window_pads(blocks: int) -> onnx.ModelProto:
    """Swin's shifted windows: each block pads H and W of its NHWC map to a
    multiple of the window, the pads computed from the map's shape as
    `(7 - W % 7) % 7` (Mod, which shape inference does not propagate), so a
    block's output shape is static only once its pads are folded: a round
    per block. At 14x14 every pad is 0."""
    nodes = [const("seven", 7), const("w_axis", 2), const("unsq", [0]),
             const("zeros", [0, 0, 0, 0, 0, 0]), const("tail", [0]),
             helper.make_node("Constant", [], ["k"], name="c_k",
                              value=numpy_helper.from_array(np.array(0.9, np.float32), "k"))]
    x = "x"
    for b in range(blocks):
        p = f"b{b}_"
        nodes += [helper.make_node("Shape", [x], [p + "s"], name=p + "shape"),
                  helper.make_node("Gather", [p + "s", "w_axis"], [p + "w"], name=p + "gather", axis=0),
                  helper.make_node("Mod", [p + "w", "seven"], [p + "r"], name=p + "mod"),
                  helper.make_node("Sub", ["seven", p + "r"], [p + "d"], name=p + "sub"),
                  helper.make_node("Mod", [p + "d", "seven"], [p + "pad"], name=p + "mod2"),
                  helper.make_node("Unsqueeze", [p + "pad", "unsq"], [p + "pad1"], name=p + "unsqueeze"),
                  helper.make_node("Concat", ["zeros", p + "pad1", "tail"], [p + "pads"],
                                   name=p + "concat", axis=0),
                  helper.make_node("Pad", [x, p + "pads"], [p + "padded"], name=p + "pad_node"),
                  helper.make_node("Mul", [p + "padded", "k"], [p + "y"], name=p + "mul")]
        x = p + "y"
    return model(nodes, [("x", [1, 14, 14, 8])], [(x, [1, 14, 14, 8])])


def test_shape_chains_fold_over_many_rounds():
    """Twelve blocks (Swin-T's count) fold whole: the folding runs until a
    round folds nothing (it stopped after 8 rounds, leaving Swin-T's last
    stages' Shape, Mod, Range and ScatterND nodes as unsupported operators),
    and a Pad of nothing is an Identity, bypassed."""
    m = window_pads(12)
    out = folded(m)
    assert [o for o in ops(out) if o != "Constant"] == ["Mul"] * 12, ops(out)
    x = np.random.default_rng(4).standard_normal((1, 14, 14, 8)).astype(np.float32)
    (got,), _ = npu.compile(m, cores=1)(x)
    np.testing.assert_allclose(got, ort(m, x=x)[0], rtol=1e-6)
