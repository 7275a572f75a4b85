"""K^T by a transposed matmul operand: upstream linalg (what torch-mlir
makes of an ONNX model) where the scores' batch_matmul reads K's heads
[H, S, D] through a transposed indexing map instead of a transpose to
[H, D, S]. The conversion materialises the transposed operand as a second
transpose after the heads' one; npu-canonicalize composes them, and the
fused attention forms as for the one-Transpose spelling, with the same
cycles. Numerics against onnxruntime on the ONNX model the linalg came from.

Seq and head dim are equal (32), so the rewritten module keeps every type:
only the transpose's permutation and the batch_matmul's maps change."""

from __future__ import annotations

import re

import numpy as np
import onnxruntime

import npu
from npu.frontend import spellings as sp
from npu.frontend.compile import import_linalg
from npu.ir import make_context

TRANSPOSED_B = ("indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, "
                "affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>] ")


def linalg_texts(model) -> tuple[str, str]:
    """(torch-mlir's linalg for `model`, the same with K^T as a transposed
    batch_matmul operand)."""
    ctx = make_context()
    with ctx:
        text = str(import_linalg(model, ctx, "attention.onnx")[0])
    k_heads = re.search(r"(%\w+) = linalg\.transpose ins\((%\w+) : tensor<1x32x2x32xf32>\) "
                        r"outs\((%\w+) : tensor<1x2x32x32xf32>\) permutation = \[0, 2, 3, 1\]", text)
    assert k_heads, "torch-mlir no longer writes K^T as one linalg.transpose"
    collapsed = re.search(rf"(%\w+) = tensor\.collapse_shape {k_heads.group(1)} ", text)
    scores = re.search(rf"= linalg\.batch_matmul ins\((%\w+), {collapsed.group(1)} ", text)
    assert collapsed and scores
    rewritten = text.replace(k_heads.group(0), k_heads.group(0).replace("[0, 2, 3, 1]", "[0, 2, 1, 3]"))
    rewritten = rewritten.replace(scores.group(0), scores.group(0).replace(
        "linalg.batch_matmul ", "linalg.batch_matmul " + TRANSPOSED_B))
    return text, rewritten


def run(text: str, model, pipeline: str = "npu-lower") -> int:
    kernel = npu.compile(text, where="attention.mlir", pipeline=pipeline)
    x = np.random.default_rng(1).standard_normal((1, 32, 64)).astype(np.float32)
    (y,), report = kernel(x)
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=1e-2 * float(np.abs(want).max()))
    return report["cycles"]


def test_transposed_operand_reaches_the_fused_attention():
    model = sp.attention_block(32, 64, 2)
    one, transposed_b = linalg_texts(model)
    assert TRANSPOSED_B in transposed_b
    reference = run(one, model)
    assert run(transposed_b, model) == reference
    # Without npu-canonicalize the two transposes of K stay ops of their own
    # (10,883 cycles against 6,152 when this test was written).
    assert run(transposed_b, model, "npu-lower{canonicalize=false}") > 1.3 * reference
