"""The numpy evaluation of linalg on tensors (the `--check` oracle for a
linalg module, and the host folder) agrees with onnxruntime in f32."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest

from npu.passes.linalg_to_ascend.linalg_eval import evaluate
from npu.frontend.onnx_import import import_onnx
from npu.ir import functions, make_context, parse_module
from onnx_models import mlp
from test_onnx_ops import CASES, _inputs, POSITIVE


@pytest.mark.parametrize("case", ["MLP", "Softmax-axis0", "LayerNormalization", "ReduceMax-last",
                                  "Gelu-erf", "Where-Greater", "Transpose-3d", "Gemm-transB-bias"])
def test_evaluator_matches_onnxruntime(case):
    m = mlp() if case == "MLP" else CASES[case][0]
    imported = import_onnx(m)
    module = parse_module(imported.mlir, make_context())  # keeps the function alive
    func = functions(module)[0]
    feeds = _inputs(m, np.random.default_rng(3), case in POSITIVE)
    got = evaluate(func, [feeds[n] for n in imported.input_names])
    want = onnxruntime.InferenceSession(m.SerializeToString()).run(None, feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6 * max(1.0, float(np.abs(w).max())))


BROADCAST = """
#in = affine_map<(d0, d1, d2) -> (d1, d2)>
#out = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @f(%w: tensor<64x32xf32>) -> tensor<1x64x32xf32> {
  %e = tensor.empty() : tensor<1x64x32xf32>
  %b = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%w : tensor<64x32xf32>) outs(%e : tensor<1x64x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<1x64x32xf32>
  return %b : tensor<1x64x32xf32>
}
"""


def test_a_broadcast_of_a_weight_is_a_view_of_it():
    """torch-mlir broadcasts each of BERT's weights to its batch matmul's
    [1, K, N]: the folder returns a read-only view of the weight, not a copy
    (85M weights: 0.4 CPU s and 340 MB of peak memory)."""
    module = parse_module(BROADCAST, make_context())
    weight = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)
    (got,) = evaluate(functions(module)[0], [weight])
    assert got.shape == (1, 64, 32) and np.array_equal(got[0], weight)
    assert np.shares_memory(got, weight) and not got.flags.writeable
