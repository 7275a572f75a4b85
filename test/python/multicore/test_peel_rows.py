"""A row group over rows that are not whole fractals (ViT's 197 tokens: a
prime, and an Nz store whose last row block holds 5 rows) splits by its
whole row blocks, the other 5 rows a group of their own on one core
(`passes/split_cores/peel.py`). Before, no even split took it and the
layernorm ran on one core (ViT-base's layer on 32 cores, transformers
export: 258,349 -> 179,393 cycles, checked against onnxruntime)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from helpers import assert_close, compile_remarks

ROWS, H = 197, 256


def _model() -> tuple[bytes, list[np.ndarray]]:
    rng = np.random.default_rng(4)
    w = (rng.standard_normal((H, H)) / 16).astype(np.float32)
    g = rng.uniform(0.5, 1.5, H).astype(np.float32)
    b = rng.standard_normal(H).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in ((w, "w"), (g, "g"), (b, "b"))]
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "b"], ["a"], axis=-1,
                              epsilon=1e-5, name="ln"),
             helper.make_node("MatMul", ["a", "w"], ["y"], name="proj")]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, ROWS, H]) for n in ("a", "y")]
    graph = helper.make_graph(nodes, "ln_proj", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, ROWS, H])], outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    return model.SerializeToString(), [w, g, b]


def test_a_layernorm_of_197_rows_splits_by_its_whole_blocks() -> None:
    model, (w, g, b) = _model()
    kernel, remarks = compile_remarks(model, target="ascend910", cores=8)
    split = remarks[0].split("; ")
    assert any(u.startswith("fused rows") and "1 core" not in u for u in split), remarks
    x = np.random.default_rng(5).standard_normal((1, ROWS, H)).astype(np.float32)
    (a, y), report = kernel(x)
    assert report["block_dim"] == 8 and report["hazards"] == []
    one, _ = compile_remarks(model, target="ascend910", cores=1)
    (a1, _), _ = one(x)
    np.testing.assert_array_equal(a, a1)  # each row by the same members, once
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    want = (x - mean) / np.sqrt(var + 1e-5) * g + b
    assert_close(a, want.astype(np.float32))
    assert_close(y, want.astype(np.float16).astype(np.float32) @ w.astype(np.float16).astype(np.float32),
                 np.float16)


def test_the_rest_writes_zeros_in_the_last_blocks_padding_rows() -> None:
    """The last row block's 11 padding rows are zeros, as the fractalize
    writes them (a matmul reading them as A, or K as an attention's keys,
    must not meet stale bytes): the rest's Nz store, a subview of the last
    block, pads it; a core's run of whole blocks does not."""
    import npu

    model, _ = _model()
    k = npu.compile(model, target="ascend910", cores=8,
                    pipeline="builtin.module(npu-lower{cores=8 emit=cce})")
    zeros = [line for line in str(k.module).splitlines()
             if '"cce.vdup"' in line and "scalar = 0.0" in line]
    assert len(zeros) == 1, zeros
