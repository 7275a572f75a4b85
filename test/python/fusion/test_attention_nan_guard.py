"""Attention with sdpa's NaN guard on P (`Where(IsNaN(P), 0, P)` between the
softmax and P.V, as torch's dynamo exporter writes the default attention)
fuses into one kernel (`npu.costmodel.attention.guard`): the rows whose max
is not finite are zeroed in P, their context is 0 @ V. Checked against
onnxruntime with rows guarded by a NaN key (every row), a +inf query, and
an inf in V (0 @ V is NaN in that column), in both softmax precisions and
over several key tiles (online softmax)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

import npu

HEADS, DIM = 2, 64


def guarded_attention(seq: int) -> onnx.ModelProto:
    shape = [HEADS, seq, DIM]
    consts = [helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])]
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1], name="k_t"),
             helper.make_node("MatMul", ["q", "kt"], ["s"], name="scores"),
             helper.make_node("Softmax", ["s"], ["p"], axis=-1, name="softmax"),
             helper.make_node("IsNaN", ["p"], ["nan"], name="isnan"),
             helper.make_node("Where", ["nan", "zero", "p"], ["g"], name="guard"),
             helper.make_node("MatMul", ["g", "v"], ["y"], name="context")]
    graph = helper.make_graph(
        nodes, "attention", [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape)
                             for n in "qkv"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], consts)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def feeds(seq: int, case: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seq)
    q, k, v = (rng.standard_normal((HEADS, seq, DIM)).astype(np.float32) for _ in range(3))
    q *= DIM ** -0.5  # the attention's scale, on the host
    if case == "nan_key":        # head 0: every score row has a NaN: all guarded
        k[0, 3, 5] = np.nan
    elif case == "inf_query":    # head 1, row 7: +inf and -inf scores, max inf
        q[1, 7, :] = np.inf
    elif case == "inf_value":    # + a guarded row: its context is NaN in V's inf column
        q[1, 7, :] = np.inf
        v[1, 2, 9] = np.inf
    return {"q": q, "k": k, "v": v}


def run(seq: int, case: str, options: str = "") -> dict:
    model = guarded_attention(seq)
    kernel = npu.compile(model, where="attention.onnx",
                         pipeline=f"npu-lower{{{options}}}" if options else "npu-lower")
    ins = feeds(seq, case)
    (y,), report = kernel(*[ins[n] for n in kernel.input_names])
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, ins)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(y), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(y[finite], want[finite], rtol=2e-2, atol=2e-2)
    if case == "nan_key":
        assert not y[0].any()  # every row of head 0 guarded: 0 @ V
    if case == "inf_query":
        assert not y[1, 7].any()
    return report


@pytest.mark.parametrize("softmax", ["f16", "f32"])
@pytest.mark.parametrize("case", ["finite", "nan_key", "inf_query", "inf_value"])
def test_guarded_attention_is_one_kernel(case, softmax):
    report = run(48, case, f"attention-softmax={softmax}")
    names = {row["op"].split(" ")[0] for row in report["per_op"]}
    assert not names & {"softmax", "isnan", "guard"}, names  # all inside the attention


@pytest.mark.parametrize("case", ["nan_key", "inf_query"])
def test_guard_over_key_tiles(case):
    """Several key tiles a row: a tile whose running max is not finite
    zeroes alpha too, so the earlier tiles' context becomes 0 @ V."""
    run(512, case, "attention-tile=fewest")
