"""The attention kernel computing its own Q, K, V projection
(npu-fuse-attention-projection + npu-lower-attention) on the simulator:
BERT's self-attention block from ONNX (three projections with or without
bias, split into heads, softmax attention, heads merged) against
onnxruntime and against the same program with the projection apart
(`fuse-attention-projection=false`), on odd shapes: seqs that are not
whole 16-row blocks, 1, 2 and 12 heads, head dims 32, 64 and 128, hidden
sizes other than H*D, one tile a head, query tiles a head and query tiles
that do not divide the sequence. Simulation is strict (bounds,
uninitialised reads, races)."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import npu

FUSED, APART = "npu-lower{fuse-remarks=true}", "npu-lower{fuse-attention-projection=false}"


def self_attention(seq: int, hidden: int, heads: int, head_dim: int, bias: bool, seed: int = 0):
    """x [1, S, hidden] -> q, k, v = x W (+ b) -> heads -> softmax(q k^T /
    sqrt(D)) v -> heads merged -> y [1, S, H*D], and a feed of x."""
    rng = np.random.default_rng(seed)
    width = heads * head_dim
    inits = {"split": np.array([1, seq, heads, head_dim], np.int64),
             "merge": np.array([1, seq, width], np.int64),
             "scale": np.array(1 / np.sqrt(head_dim), np.float32)}
    nodes = []
    for q in "qkv":
        inits[f"w{q}"] = (rng.standard_normal((hidden, width)) / np.sqrt(hidden)).astype(np.float32)
        out = f"{q}0"
        nodes.append(helper.make_node("MatMul", ["x", f"w{q}"], [out], name=f"{q}_proj"))
        if bias:
            inits[f"b{q}"] = (rng.standard_normal(width) * 0.5).astype(np.float32)
            nodes.append(helper.make_node("Add", [out, f"b{q}"], [f"{q}1"], name=f"{q}_bias"))
            out = f"{q}1"
        nodes += [helper.make_node("Reshape", [out, "split"], [f"{q}2"], name=f"{q}_split"),
                  helper.make_node("Transpose", [f"{q}2"], [f"{q}h"], name=f"{q}_heads",
                                   perm=[0, 2, 3, 1] if q == "k" else [0, 2, 1, 3])]
    nodes += [helper.make_node("MatMul", ["qh", "kh"], ["s0"], name="scores"),
              helper.make_node("Mul", ["s0", "scale"], ["s1"], name="scale"),
              helper.make_node("Softmax", ["s1"], ["p"], name="softmax", axis=-1),
              helper.make_node("MatMul", ["p", "vh"], ["c0"], name="context"),
              helper.make_node("Transpose", ["c0"], ["c1"], name="merge_heads", perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["c1", "merge"], ["y"], name="merge")]
    graph = helper.make_graph(
        nodes, "self_attention", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, seq, width])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    x = rng.standard_normal((1, seq, hidden)).astype(np.float32)
    return model, x


def run(model, x, pipeline):
    kernel = npu.compile(model, target="ascend910", pipeline=pipeline)
    (y,), report = kernel(x)
    return y, report


def check(seq: int, hidden: int, heads: int, head_dim: int, bias: bool = True):
    """Fused and apart against onnxruntime (the inputs and weights are
    rounded to f16 on the way, as both programs do) and against each other."""
    model, x = self_attention(seq, hidden, heads, head_dim, bias)
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    fused, freport = run(model, x, FUSED)
    apart, areport = run(model, x, APART)
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(fused, want, rtol=2e-2, atol=1e-2 * scale)
    # The same values are rounded the same way: only the order of f32
    # accumulation inside the cube's pieces may differ.
    np.testing.assert_allclose(fused, apart, rtol=2e-3, atol=2e-3 * scale)
    return freport, areport


GROUPS = "builtin.module(npu-hoist-casts,npu-fuse-horizontal,npu-fuse-attention,npu-fuse,{})"


def projection_plan(model, pipeline: str = "npu-fuse-attention-projection") -> dict | None:
    """The `npu.projection` plan of the attention group once the fusion
    passes ran (None: the projection was left apart)."""
    from npu.attention_projection import PROJECTION_ATTR
    from npu.ir import dict_attr_items, walk

    kernel = npu.compile(model, target="ascend910", pipeline=GROUPS.format(pipeline))
    found = [op for op in walk(kernel.module.operation) if PROJECTION_ATTR in op.attributes]
    return dict_attr_items(found[0].attributes[PROJECTION_ATTR]) if found else None
