"""Pad (`npu.frontend.onnx_pad`): written as a Slice for the negative pads
and a Concat per padded axis of blocks (constants, or slices of the tensor
for the edge, reflect and wrap modes), against onnxruntime. Swin's window padding at 256x256 ([1, 64, 64, 96] -> 70x70)
was refused as an unsupported operator."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import helper

import npu
from npu.frontend.compile import CompileError
from onnx_models import model


def padded(pads: list[int], shape: list[int], value: float | None = None, mode: str | None = None):
    inits = [("pads", np.array(pads, np.int64))]
    inputs = ["x", "pads"]
    if value is not None:
        inits.append(("value", np.array(value, np.float32)))
        inputs.append("value")
    rank = len(shape)
    out = [d + a + b for d, a, b in zip(shape, pads[:rank], pads[rank:])]
    nodes = [helper.make_node("Pad", inputs, ["p"], name="pad", **({"mode": mode} if mode else {})),
             helper.make_node("Relu", ["p"], ["y"], name="relu")]
    return model(nodes, [("x", shape)], [("y", out)], inits)


def check(m, shape, cores=1) -> dict:
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    want = onnxruntime.InferenceSession(m.SerializeToString(),
                                        providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    kernel = npu.compile(m, cores=cores)
    assert '"ascend.' in kernel.stages["ascend"]
    (got,), report = kernel(x)
    np.testing.assert_array_equal(got, want)  # data movement and a Relu: exact
    return report


@pytest.mark.parametrize("pads, value", [
    ([0, 0, 0, 0, 0, 5, 5, 0], None),         # Swin's: H and W after, zeros
    ([0, 1, 2, 0, 0, 5, 5, 0], 1.5),          # both sides, a value
    ([0, -1, 0, 3, 0, 2, -2, 0], 0.5),        # crops and pads
], ids=["swin", "both-sides", "crop"])
def test_constant_pad_matches_onnxruntime(pads, value):
    check(padded(pads, [1, 9, 9, 8], value), [1, 9, 9, 8])


def test_swin_window_pad_on_all_cores():
    check(padded([0, 0, 0, 0, 0, 6, 6, 0], [1, 64, 64, 96]), [1, 64, 64, 96], cores=None)


@pytest.mark.parametrize("mode", ["edge", "reflect", "wrap"])
def test_other_modes_match_onnxruntime(mode):
    """Slices next to the edge (expanded, reversed) or at the other end."""
    check(padded([0, 1, 2, 0, 0, 3, 0, 0], [1, 9, 9, 8], mode=mode), [1, 9, 9, 8])


def test_a_reflection_wider_than_its_axis_is_refused_by_name():
    with pytest.raises(CompileError, match="node 'pad' \\(Pad\\): unsupported operator"):
        npu.compile(padded([0, 0, 0, 0, 0, 4, 0, 0], [1, 4, 9, 8], mode="reflect"))
