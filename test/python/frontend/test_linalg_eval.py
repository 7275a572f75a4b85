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
