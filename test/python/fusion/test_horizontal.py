"""npu-fuse-horizontal on the simulator: sibling matmuls that read the same
x (Q/K/V-like projections) compiled fused (one matmul over concatenated
weights, its bias adds one add) and unfused (`fuse-horizontal=false`) from
ONNX, both against onnxruntime and against each other. The simulator runs
strict (bounds, initialised state and the race detector)."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import npu

FUSED, APART = "npu-lower", "npu-lower{fuse-horizontal=false}"


def siblings(m: int, k: int, ns: tuple[int, ...], constant: bool, bias: bool, seed: int = 0):
    """y_i = x @ W_i (+ b_i) for each N in `ns`; W_i initializers (constant)
    or graph inputs (computed on the device: cast and fractalized there)."""
    rng = np.random.default_rng(seed)
    weights = {f"w{i}": (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
               for i, n in enumerate(ns)}
    nodes, inits = [], []
    for i, n in enumerate(ns):
        out = f"y{i}" if not bias else f"h{i}"
        nodes.append(helper.make_node("MatMul", ["x", f"w{i}"], [out], name=f"proj{i}"))
        if bias:
            inits.append(numpy_helper.from_array((rng.standard_normal(n) * 0.1).astype(np.float32), f"b{i}"))
            nodes.append(helper.make_node("Add", [out, f"b{i}"], [f"y{i}"], name=f"bias{i}"))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])]
    if constant:
        inits += [numpy_helper.from_array(w, name) for name, w in weights.items()]
    else:
        inputs += [helper.make_tensor_value_info(name, TensorProto.FLOAT, list(w.shape))
                   for name, w in weights.items()]
    outputs = [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [m, n]) for i, n in enumerate(ns)]
    graph = helper.make_graph(nodes, "siblings", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    feeds = {"x": rng.standard_normal((m, k)).astype(np.float32)}
    if not constant:
        feeds.update(weights)
    return model, feeds


def run(model, feeds, pipeline):
    kernel = npu.compile(model, target="ascend910", pipeline=pipeline)
    outs, _ = kernel(*feeds.values())
    return outs


def matmul_columns_after_pass(model) -> list[int]:
    """The column blocks of each ascend.matmul once npu-fuse-horizontal ran
    on the frontend's ascend module."""
    from npu.frontend.compile import import_linalg, linalg_to_ascend_text
    from npu.ir import make_context, memref_shape, ops_named, parse_module
    from npu.pipeline import run_pipeline
    from npu.target import get_target

    ctx = make_context()
    linalg, ins, outs, locate = import_linalg(model, ctx, "m.onnx")
    module = parse_module(linalg_to_ascend_text(linalg, ins, outs, locate, "m.onnx"), ctx)
    run_pipeline(module, "npu-fuse-horizontal{remarks=false}", get_target("ascend910"))
    return [memref_shape(op.operands[1].type)[0] for op in ops_named(module.operation, "ascend.matmul")]


@pytest.mark.parametrize("m, k, ns, constant, bias", [
    (20, 48, (40, 24, 56), True, True),     # three siblings, odd N, constant weights and biases
    (33, 32, (70, 17), True, False),        # two siblings, odd M and N, no bias
    (24, 40, (36, 50, 20), False, True),    # weights computed on the device (graph inputs)
])
def test_fused_siblings_match_onnxruntime_and_unfused(m, k, ns, constant, bias):
    model, feeds = siblings(m, k, ns, constant, bias)
    want = onnxruntime.InferenceSession(model.SerializeToString()).run(None, feeds)
    # One matmul over every sibling's column blocks (each N padded to 16).
    assert matmul_columns_after_pass(model) == [sum(-(-n // 16) for n in ns)]
    fused = run(model, feeds, FUSED)
    apart = run(model, feeds, APART)
    for got, same, exp in zip(fused, apart, want):
        # f16 operands, f32 accumulation over K: ~1e-3 relative.
        np.testing.assert_allclose(got, exp, rtol=1e-2, atol=1e-2 * float(np.abs(exp).max()))
        # Each output column is the same f32 sum over the same K blocks in
        # the same order, fused or not: bit for bit.
        np.testing.assert_array_equal(got, same)


def test_small_bert_layer_fused_equals_unfused():
    """Q/K/V of a BERT layer: the fused layer gives the unfused layer's output."""
    from npu.frontend.bert import bert_layer

    model = bert_layer(16, 64, 2, 128)
    x = np.random.default_rng(1).standard_normal((1, 16, 64)).astype(np.float32)
    # Q, K and V (4 column blocks each) are one matmul; the other four stay.
    assert sorted(matmul_columns_after_pass(model)) == [4, 4, 8, 12]
    (fused,) = run(model, {"x": x}, FUSED)
    (apart,) = run(model, {"x": x}, APART)
    np.testing.assert_array_equal(fused, apart)


def test_on_several_cores_siblings_join_where_the_model_says_it_pays():
    """On several cores npu-fuse-horizontal forms the group only where each
    core computing its columns of every sibling models faster than the
    siblings apart (`passes/split_cores/qkv.py`; on 32 cores BERT's stay
    apart: test/python/multicore/test_horizontal_split.py): on 2 cores,
    three 256-wide siblings do, and the remark gives both figures; the
    outputs match onnxruntime."""
    from npu import diagnostics
    from npu.frontend.compile import import_linalg, linalg_to_ascend_text
    from npu.ir import make_context, parse_module
    from npu.pipeline import run_pipeline
    from npu.target import get_target

    model, feeds = siblings(256, 256, (256, 256, 256), True, True)
    many = "npu-lower{cores=2 fuse-remarks=true split-cores-min-bytes=0 split-cores-estimate=false}"
    ctx = make_context()
    linalg, ins, outs, locate = import_linalg(model, ctx, "m.onnx")
    module = parse_module(linalg_to_ascend_text(linalg, ins, outs, locate, "m.onnx"), ctx)
    with diagnostics.collecting() as engine:
        run_pipeline(module, many, get_target("ascend910"))
    (said,) = [d.message for d in engine if "npu-fuse-horizontal: matmuls" in d.message]
    assert "on 2 cores each its columns of every sibling: 2x1 models" in said, said
    assert "for 3 one after another on 2 cores apart" in said, said
    want = onnxruntime.InferenceSession(model.SerializeToString()).run(None, feeds)
    for got, exp in zip(run(model, feeds, many), want):
        np.testing.assert_allclose(got, exp, rtol=1e-2, atol=1e-2 * float(np.abs(exp).max()))
