"""A Concat of every stride-2 phase of one tensor (Swin's patch merging over
NHWC, YOLOv5's Focus over NCHW) is one Reshape, Transpose, Reshape
(`frontend/onnx_space_to_depth`): against onnxruntime, and left as
exported where the pieces are not all the phases in a mixed-radix order."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import npu
from npu.frontend.onnx_fold import inferred_types
from npu.frontend.onnx_space_to_depth import concats_as_space_to_depth

RNG = np.random.default_rng(9)
# (the offsets of each piece along the two strided axes, in the Concat's order)
SWIN = [(0, 0), (1, 0), (0, 1), (1, 1)]


def _const(name: str, values) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def merging(shape: list[int], axes: tuple[int, int], concat: int, phases=SWIN) -> onnx.ModelProto:
    """x -> Concat(x[.., o0::2 (axes[0]), .., o1::2 (axes[1])] for each piece)
    -> Relu, the first axis sliced once per offset and shared (as torch exports)."""
    nodes, inits, outs = [], [], []
    for o0 in sorted({p[0] for p in phases}):
        inits += [_const(f"s{o0}", [o0]), _const("end", [1 << 62]), _const("a0", [axes[0]]),
                  _const("two", [2])]
        nodes.append(helper.make_node("Slice", ["x", f"s{o0}", "end", "a0", "two"], [f"h{o0}"],
                                      name=f"/Slice_h{o0}"))
    for k, (o0, o1) in enumerate(phases):
        inits += [_const(f"t{o1}", [o1]), _const("a1", [axes[1]])]
        nodes.append(helper.make_node("Slice", [f"h{o0}", f"t{o1}", "end", "a1", "two"], [f"p{k}"],
                                      name=f"/Slice_{k}"))
        outs.append(f"p{k}")
    nodes += [helper.make_node("Concat", outs, ["c"], name="/Concat", axis=concat),
              helper.make_node("Relu", ["c"], ["y"], name="/Relu")]
    unique = {t.name: t for t in inits}
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              list(unique.values()))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("shape,axes,concat", [([1, 8, 12, 32], (1, 2), 3), ([1, 3, 8, 12], (2, 3), 1)],
                         ids=["swin-nhwc", "focus-nchw"])
def test_the_phases_become_one_transpose(shape, axes, concat):
    model = merging(shape, axes, concat)
    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(model)
    assert concats_as_space_to_depth(rewritten, inferred_types(rewritten)) == ["/Concat"]
    assert [n.op_type for n in rewritten.graph.node] == ["Reshape", "Transpose", "Reshape", "Relu"]
    x = RNG.standard_normal(shape).astype(np.float32)
    run = lambda m: onnxruntime.InferenceSession(m.SerializeToString()).run(None, {"x": x})[0]  # noqa: E731
    np.testing.assert_array_equal(run(rewritten), run(model))  # data movement: exact
    (y,), report = npu.compile(model, cores=1)(x)
    assert not [r["op"] for r in report["per_op"] if "(Slice)" in r["op"]]
    np.testing.assert_array_equal(y, run(model))


@pytest.mark.parametrize("phases", [SWIN[:3], [(0, 0), (1, 1), (0, 1), (1, 0)]],
                         ids=["a-phase-missing", "no-mixed-radix-order"])
def test_other_concats_are_left_alone(phases):
    model = merging([1, 8, 12, 32], (1, 2), 3, phases)
    before = [n.op_type for n in model.graph.node]
    assert concats_as_space_to_depth(model, inferred_types(model)) == []
    assert [n.op_type for n in model.graph.node] == before
