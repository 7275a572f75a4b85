"""Attention with an additive mask of the scores [1, 1, S, S] (a decoder's
causal mask; GPT-2's exports combine it with the `attention_mask` at run
time into one tensor) fuses into one kernel that reads each step's tile of
the mask beside its scores (`npu.costmodel.attention.key_mask`). Checked
against onnxruntime: causal masks of finfo.min, -inf and a moderate value,
the mask before and after the scale, both softmax precisions, several key
tiles (online softmax: a tile whose rows are all masked), seqs of partial
16-row blocks, a mask that is not causal, a mask per head, and T5's bias
per head beside a key mask. Rows that are not whole 32-byte blocks stay
unfused and right."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest

import npu
from test_attention_key_mask import HEADS, DIM, masked_attention


def causal(seq: int, fill: float, heads: int = 1) -> np.ndarray:
    keep = np.tril(np.ones((seq, seq), bool))
    return np.broadcast_to(np.where(keep, 0.0, fill).astype(np.float32),
                           (1, heads, seq, seq)).copy()


def run(seq: int, mask: np.ndarray, options: str = "", mask_first: bool = False,
        fused: bool = True) -> dict:
    model = masked_attention(seq, mask_first, mask_shape=list(mask.shape))
    kernel = npu.compile(model, where="attention.onnx", cores=1,
                         pipeline=f"npu-lower{{{options}}}" if options else "npu-lower")
    rng = np.random.default_rng(seq)
    ins = {n: rng.standard_normal((1, HEADS, seq, DIM)).astype(np.float32) for n in "qkv"}
    ins["mask"] = mask
    (y,), report = kernel(*[ins[n] for n in kernel.input_names])
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, ins)
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=2e-2)
    names = {row["op"].split(" ")[0] for row in report["per_op"]}
    inside = not names & {"softmax", "mask_add", "scale_mul"}
    assert inside == fused, names
    return report


@pytest.mark.parametrize("softmax", ["f16", "f32"])
@pytest.mark.parametrize("fill", [float(np.finfo(np.float32).min), -np.inf, -3.0])
def test_causal_mask_after_the_scale(fill: float, softmax: str) -> None:
    run(48, causal(48, fill), f"attention-softmax={softmax}")


@pytest.mark.parametrize("softmax", ["f16", "f32"])
def test_mask_before_the_scale(softmax: str) -> None:
    run(64, causal(64, -1e4), f"attention-softmax={softmax}", mask_first=True)


FLT_MIN = float(np.finfo(np.float32).min)


@pytest.mark.parametrize("options,fill", [("attention-tile=fewest", FLT_MIN), ("", FLT_MIN),
                                          ("", -np.inf), ("attention-softmax=f32", -np.inf)])
def test_causal_mask_over_key_tiles(options: str, fill: float) -> None:
    """seq 512 in several query and key tiles (each step's tile of the mask
    read a step ahead): the key tiles above the diagonal are all masked for
    every row of their query tile."""
    run(512, causal(512, fill), options)


@pytest.mark.parametrize("seq", [160, 192])
def test_resident_mask_over_tiles(seq: int) -> None:
    """Several tiles a head, the whole mask kept in UB: each step reads its
    tile at its query rows and keys."""
    run(seq, causal(seq, -1e9))


def test_any_mask_values() -> None:
    """Not a triangle: random values, a masked key per row and a fully
    masked column, added as they are."""
    seq = 96
    rng = np.random.default_rng(3)
    mask = rng.uniform(-4.0, 4.0, (1, 1, seq, seq)).astype(np.float32)
    mask[0, 0, np.arange(seq), (np.arange(seq) * 7) % seq] = -1e9
    mask[..., 5] = float(np.finfo(np.float32).min)
    run(seq, mask)


def test_fused_beats_the_unfused_attention() -> None:
    mask = causal(128, float(np.finfo(np.float32).min))
    fused = run(128, mask)["cycles"]
    apart = run(128, mask, "fuse-attention=false", fused=False)["cycles"]
    assert fused < 0.5 * apart, (fused, apart)


@pytest.mark.parametrize("seq,options", [(48, ""), (48, "attention-softmax=f32"), (512, "")])
def test_a_mask_per_head(seq: int, options: str) -> None:
    """[1, H, S, S]: each head's tiles read from its own mask (different
    values per head)."""
    rng = np.random.default_rng(5)
    mask = np.concatenate([causal(seq, -1e9), rng.uniform(-3, 3, (1, 1, seq, seq))],
                          axis=1).astype(np.float32)
    run(seq, mask, options)


def relative_bias_attention(seq: int):
    """T5's self-attention: scores (no scale) + a position bias per head
    [1, H, S, S], + the key mask [1, 1, 1, S]."""
    from onnx import TensorProto, helper

    shape = [1, HEADS, seq, DIM]
    nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2], name="k_t"),
             helper.make_node("MatMul", ["q", "kt"], ["s"], name="scores"),
             helper.make_node("Add", ["s", "bias"], ["sb"], name="bias_add"),
             helper.make_node("Add", ["sb", "mask"], ["x"], name="mask_add"),
             helper.make_node("Softmax", ["x"], ["p"], axis=-1, name="softmax"),
             helper.make_node("MatMul", ["p", "v"], ["y"], name="context")]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in "qkv"]
    inputs += [helper.make_tensor_value_info("bias", TensorProto.FLOAT, [1, HEADS, seq, seq]),
               helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 1, 1, seq])]
    graph = helper.make_graph(nodes, "t5_attention", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("seq", [64, 256])
def test_a_bias_per_head_and_a_key_mask(seq: int) -> None:
    """Both masks in one attention (T5): the bias per head, then the key mask."""
    model = relative_bias_attention(seq)
    kernel = npu.compile(model, where="attention.onnx", cores=1)
    rng = np.random.default_rng(seq)
    ins = {n: rng.standard_normal((1, HEADS, seq, DIM)).astype(np.float32) for n in "qkv"}
    ins["bias"] = rng.uniform(-2, 2, (1, HEADS, seq, seq)).astype(np.float32)
    ins["mask"] = np.where(np.arange(seq) < seq - 5, 0.0, -1e9).astype(np.float32)[None, None,
                                                                                    None]
    (y,), report = kernel(*[ins[n] for n in kernel.input_names])
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, ins)
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=2e-2)
    names = {row["op"].split(" ")[0] for row in report["per_op"]}
    assert not names & {"softmax", "mask_add", "bias_add"}, names


@pytest.mark.parametrize("seq,options", [(72, ""), (200, "attention-softmax=f32"), (520, "")])
def test_a_seq_of_partial_blocks(seq: int, options: str) -> None:
    """Rows of whole 32-byte blocks but not whole 16-row blocks: the mask's
    rows are laid out a whole key block wide, the padding zeroed (72: the
    whole mask resident; 200 in f32 and 520: the last tiles read only
    their valid rows and keys)."""
    run(seq, causal(seq, -1e9), options)


@pytest.mark.parametrize("seq,options,per_head", [
    (36, "", False), (100, "attention-softmax=f32", False), (300, "", True),
    (300, "attention-softmax=f32", False)])
def test_rows_of_partial_32_byte_blocks(seq: int, options: str, per_head: bool) -> None:
    """A row of the mask is not whole 32-byte blocks (GPT-2 padded to the
    longest): a copy per row, each read to the end of its last block, the
    last row of each tile realigned in UB (36 and 100: the whole mask
    resident, in f16 through 16-row stagings or in f32; 300: the steps'
    tiles, a mask per head with values the causal triangle does not hide)."""
    mask = causal(seq, float(np.finfo(np.float32).min))
    if per_head:
        rng = np.random.default_rng(6)
        mask = np.concatenate([mask, rng.uniform(-3, 3, (1, 1, seq, seq))],
                              axis=1).astype(np.float32)
    run(seq, mask, options)
