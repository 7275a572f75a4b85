"""Attention with an additive key mask on the scores (HF BERT-style
encoders exported with an `attention_mask`: scores * scale + M, M [1,1,1,S]
of 0 and a large negative value) fuses into one kernel
(`npu.costmodel.attention.key_mask`). Checked against onnxruntime with the
mask after the scale (HF's order) and before it, masks of finfo.min, -inf
and moderate values, odd sequence lengths (padded keys on top of the
mask), both softmax precisions and several key tiles (online softmax).
A seq that is not a multiple of 8 (HF's padding to the longest: BERT at
seq 100) has a mask row of partial 32-byte blocks, whose last values the
kernel realigns in UB (`npu.passes.lower_attention.key_mask`)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper

import npu

HEADS, DIM = 2, 64


def masked_attention(seq: int, mask_first: bool = False, mask_shape=None) -> onnx.ModelProto:
    shape = [1, HEADS, seq, DIM]
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [], [DIM ** -0.5])
    scores = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2], name="k_t"),
              helper.make_node("MatMul", ["q", "kt"], ["s"], name="scores")]
    if mask_first:
        scores += [helper.make_node("Add", ["s", "mask"], ["sm"], name="mask_add"),
                   helper.make_node("Mul", ["sm", "scale"], ["x"], name="scale_mul")]
    else:
        scores += [helper.make_node("Mul", ["s", "scale"], ["ss"], name="scale_mul"),
                   helper.make_node("Add", ["ss", "mask"], ["x"], name="mask_add")]
    nodes = scores + [helper.make_node("Softmax", ["x"], ["p"], axis=-1, name="softmax"),
                      helper.make_node("MatMul", ["p", "v"], ["y"], name="context")]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in "qkv"]
    inputs.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT,
                                                mask_shape or [1, 1, 1, seq]))
    graph = helper.make_graph(nodes, "attention", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                              [scale])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def feeds(seq: int, fill: float, mask_shape=None) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seq)
    ins = {n: rng.standard_normal((1, HEADS, seq, DIM)).astype(np.float32) for n in "qkv"}
    mask = np.zeros(mask_shape or (1, 1, 1, seq), np.float32)
    mask[..., seq - seq // 4:] = fill  # the last quarter of the keys padded
    mask[..., 1] = fill
    ins["mask"] = mask
    return ins


def run(seq: int, fill: float, options: str = "", mask_first: bool = False) -> dict:
    model = masked_attention(seq, mask_first)
    kernel = npu.compile(model, where="attention.onnx",
                         pipeline=f"npu-lower{{{options}}}" if options else "npu-lower")
    ins = feeds(seq, fill)
    (y,), report = kernel(*[ins[n] for n in kernel.input_names])
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, ins)
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=2e-2)
    names = {row["op"].split(" ")[0] for row in report["per_op"]}
    assert not names & {"softmax", "mask_add", "scale_mul"}, names  # inside the attention
    return report


@pytest.mark.parametrize("softmax", ["f16", "f32"])
@pytest.mark.parametrize("fill", [float(np.finfo(np.float32).min), -np.inf, -3.0])
def test_key_mask_after_the_scale(fill, softmax):
    run(48, fill, f"attention-softmax={softmax}")


@pytest.mark.parametrize("softmax", ["f16", "f32"])
def test_key_mask_before_the_scale_and_padded_keys(softmax):
    run(40, -1e4, f"attention-softmax={softmax}", mask_first=True)


def test_key_mask_over_key_tiles():
    run(512, float(np.finfo(np.float32).min), "attention-tile=fewest")


@pytest.mark.parametrize("softmax", ["f16", "f32"])
@pytest.mark.parametrize("seq,fill,mask_first", [(20, float(np.finfo(np.float32).min), False),
                                                 (36, -np.inf, True), (100, -1e4, False),
                                                 (5, -3.0, False)])
def test_key_mask_of_partial_blocks(seq, fill, mask_first, softmax):
    # Rows of 20, 36, 100 f32 values end inside a 32-byte block (seq 5: the
    # whole mask is under one block, its burst runs into the GM granule's
    # padding); 100 is also partial 16-key blocks (padded keys beside the mask).
    run(seq, fill, f"attention-softmax={softmax}", mask_first=mask_first)


def test_key_mask_of_partial_blocks_over_key_tiles():
    run(300, float(np.finfo(np.float32).min), "attention-tile=fewest")


@pytest.mark.parametrize("seq", [40, 100])
def test_every_key_masked_weighs_the_real_keys(seq):
    # A row whose every key is masked by finfo.min (HF's value) gets the same
    # weight on each real key in onnxruntime; the padded keys of the last
    # 16-key block must stay below it (-inf, not -1e30, in the f32 softmax).
    model = masked_attention(seq)
    kernel = npu.compile(model, where="attention.onnx",
                         pipeline="npu-lower{attention-softmax=f32}")
    ins = feeds(seq, 0.0)
    ins["mask"][:] = np.finfo(np.float32).min
    (y,), _ = kernel(*[ins[n] for n in kernel.input_names])
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, ins)
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=2e-2)
