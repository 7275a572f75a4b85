"""sdpa's guard after the softmax, `Where(IsNaN(p), 0, p)` (torch's dynamo
exporter with the default attention), joins the softmax's row kernel: its
compare writes an i8 mask that stays in UB, so rows whose i8 mask is not a
whole 32-byte block (16 keys) fuse as long as the mask never goes to GM.
Fully masked rows (all scores -inf) and rows with a NaN or +inf score are
all NaN after the softmax, and the guard makes them zero, as onnxruntime
does."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

import npu


def guarded_softmax(seq: int, heads: int = 4, mask_out: bool = False) -> onnx.ModelProto:
    shape = [1, heads, seq, seq]
    zero = helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])
    nodes = [helper.make_node("Add", ["x", "mask"], ["s"], name="mask_add"),
             helper.make_node("Softmax", ["s"], ["p"], axis=-1, name="softmax"),
             helper.make_node("IsNaN", ["p"], ["nan"], name="isnan"),
             helper.make_node("Where", ["nan", "zero", "p"], ["y"], name="guard")]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)]
    if mask_out:  # the mask leaves the kernel: an i8 tensor stored to GM
        outputs.append(helper.make_tensor_value_info("nan", TensorProto.BOOL, shape))
    graph = helper.make_graph(
        nodes, "guard", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape),
                         helper.make_tensor_value_info("mask", TensorProto.FLOAT,
                                                       [1, 1, 1, seq])], outputs, [zero])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def inputs(seq: int, heads: int = 4) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seq)
    x = rng.standard_normal((1, heads, seq, seq)).astype(np.float32)
    x[0, 1, 5, :] = -np.inf          # a fully masked row: every p is NaN
    x[0, 2, 7, 3] = np.nan           # a NaN score: the row is NaN
    x[0, 3, 2, 1] = np.inf           # +inf: the row max is inf, the row NaN
    mask = np.zeros((1, 1, 1, seq), np.float32)
    mask[..., seq - 3:] = -np.inf    # the last keys masked out everywhere
    return {"x": x, "mask": mask}


def run(model: onnx.ModelProto, seq: int):
    feeds = inputs(seq)
    kernel = npu.compile(model, where="guard.onnx")
    got, report = kernel(*[feeds[n] for n in kernel.input_names])
    want = onnxruntime.InferenceSession(model.SerializeToString()).run(kernel.output_names, feeds)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    y = got[0]
    for head, row in ((1, 5), (2, 7), (3, 2)):  # the NaN rows of the softmax
        assert not y[0, head, row].any(), (head, row)
    return report


@pytest.mark.parametrize("seq", [16, 48, 128])
def test_guard_joins_the_softmax_kernel(seq):
    report = run(guarded_softmax(seq), seq)
    guard_ops = [r for r in report["per_op"] if r["op"].startswith(("isnan", "guard"))]
    assert guard_ops == [], guard_ops  # no kernel of their own: they run in the softmax's


def test_mask_leaving_the_kernel_is_stored_whole_blocks_only():
    """At 16 keys a stored i8 mask row is half a block: the compare then
    runs outside the row kernel, and the results still match."""
    run(guarded_softmax(16, mask_out=True), 16)
    run(guarded_softmax(32, mask_out=True), 32)
