"""Swin's window attention: the scores of W windows x H heads [W, H, S, S]
plus a relative-position bias [1, H, S, S] (one per head, shared by the
windows) and, in a shifted block, a window mask [1, W, 1, S, S] between two
Reshapes. Both addends are constants, summed into one [W, H, S, S] bias
(`frontend/onnx_attention_bias`), which npu-fuse-attention takes as a mask
per head: one kernel, against onnxruntime. Before, the bias's shape was
refused and each block ran as two batch matmuls and a softmax. The bias is
added and normalised over the flat (window, head) pairs [1, W*H, S, S], the
heads npu-split-cores cuts the kernel by."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import sys
from pathlib import Path

import npu
from npu.frontend.onnx_attention_bias import merge_attention_biases
from npu.frontend.onnx_fold import inferred_types

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import compile_remarks  # noqa: E402

W, H, S, D = 4, 2, 49, 32
RNG = np.random.default_rng(11)


def window_attention(shifted: bool) -> onnx.ModelProto:
    bias = (RNG.standard_normal((1, H, S, S)) * 0.5).astype(np.float32)
    mask = np.where(RNG.random((1, W, 1, S, S)) < 0.3, -100.0, 0.0).astype(np.float32)
    inits = [numpy_helper.from_array(bias, "bias"),
             numpy_helper.from_array(np.array(D ** -0.5, np.float32), "scale")]
    nodes = [helper.make_node("Mul", ["q", "scale"], ["qs"], name="/attn/Mul"),
             helper.make_node("Transpose", ["k"], ["kt"], name="/attn/Transpose", perm=[0, 1, 3, 2]),
             helper.make_node("MatMul", ["qs", "kt"], ["s"], name="/attn/MatMul"),
             helper.make_node("Add", ["s", "bias"], ["a1"], name="/attn/Add")]
    scores = "a1"
    if shifted:
        inits += [numpy_helper.from_array(mask, "mask"),
                  numpy_helper.from_array(np.array([1, W, H, S, S], np.int64), "shape5"),
                  numpy_helper.from_array(np.array([W, H, S, S], np.int64), "shape4")]
        nodes += [helper.make_node("Reshape", ["a1", "shape5"], ["r1"], name="/attn/Reshape"),
                  helper.make_node("Add", ["r1", "mask"], ["a2"], name="/attn/Add_1"),
                  helper.make_node("Reshape", ["a2", "shape4"], ["r2"], name="/attn/Reshape_1")]
        scores = "r2"
    nodes += [helper.make_node("Softmax", [scores], ["p"], name="/attn/Softmax", axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["y"], name="/attn/MatMul_1")]
    info = lambda n, dims: helper.make_tensor_value_info(n, TensorProto.FLOAT, dims)  # noqa: E731
    graph = helper.make_graph(nodes, "g", [info(n, [W, H, S, D]) for n in "qkv"],
                              [info("y", [W, H, S, D])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("shifted", [False, True], ids=["bias", "bias-and-shift-mask"])
def test_window_attention_fuses_and_matches_onnxruntime(shifted):
    model = window_attention(shifted)
    kernel = npu.compile(model, cores=1)
    ins = {n: RNG.standard_normal((W, H, S, D)).astype(np.float32) for n in "qkv"}
    (y,), report = kernel(*[ins[n] for n in kernel.input_names])
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, ins)
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=2e-2)
    ops = [row["op"] for row in report["per_op"]]
    assert not [o for o in ops if "(Softmax)" in o or "(Add)" in o], ops  # inside the kernel


def test_the_addends_become_one_bias_of_the_scores_shape():
    model = window_attention(True)
    want = model.graph.initializer
    bias = numpy_helper.to_array(next(t for t in want if t.name == "bias"))
    mask = numpy_helper.to_array(next(t for t in want if t.name == "mask"))
    assert merge_attention_biases(model, inferred_types(model)) == ["/attn/Softmax"]
    assert [n.op_type for n in model.graph.node] == ["Mul", "Transpose", "MatMul", "Reshape",
                                                     "Add", "Softmax", "Reshape", "MatMul"]
    merged = numpy_helper.to_array(next(t for t in model.graph.initializer
                                        if t.name == "/attn/Add/window_bias"))
    expected = (np.broadcast_to(bias, (W, H, S, S)).reshape(1, W, H, S, S) + mask).reshape(1, W * H, S, S)
    np.testing.assert_array_equal(merged, expected)


@pytest.mark.parametrize("shifted", [False, True], ids=["bias", "bias-and-shift-mask"])
def test_the_window_heads_split_over_cores(shifted):
    """Each core takes W*H/4 of the (window, head) pairs, its slice of the
    bias with them (before: one core, no dim of [W, H, S, S] held W*H)."""
    model = window_attention(shifted)
    kernel, remarks = compile_remarks(model, cores=4)
    (split,) = [r for r in remarks if "npu-split-cores:" in r and "chip barriers" in r]
    assert split.endswith("attention 4"), split
    ins = {n: RNG.standard_normal((W, H, S, D)).astype(np.float32) for n in "qkv"}
    (y,), report = kernel(*[ins[n] for n in kernel.input_names])
    assert report["block_dim"] == 4 and report["hazards"] == []
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, ins)
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=2e-2)


def test_a_mask_the_kernel_takes_is_left_alone():
    """[1, H, S, S] beside scores [1, H, S, S] (T5's bias): one per head already."""
    model = window_attention(False)
    for vi in list(model.graph.input) + list(model.graph.output):
        vi.type.tensor_type.shape.dim[0].dim_value = 1
    assert merge_attention_biases(model, inferred_types(model)) == []
