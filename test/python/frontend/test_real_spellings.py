"""Real exports of one layer reach the same kernels and cycles whichever way
they were exported (npu-canonicalize).

ViT (test/models/, made by a26's make_exports.py) has no attention mask, so
its first encoder layer, cut out of the whole model (the embeddings and the
pooling need ops of other work), is the real spelling of each exporter:
TorchScript with eager attention (GELU as `(x*(1+erf(x/sqrt2)))*0.5`, the
scale on the scores), TorchScript with sdpa (Q and K each scaled by
d^-1/4, K^T by two transposes) and dynamo with eager attention. Every
variant matches onnxruntime and runs within 3% of the TorchScript eager
one."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest

import npu
from npu.frontend import spellings as sp

MODELS = Path(__file__).resolve().parents[2] / "models"
SPREAD = 0.03
LAYERS = sp.EXPORT_LAYERS
SHAPE = (1, 17, 32)


def first_layer(name: str) -> onnx.ModelProto:
    """Layer 0 of the export as a model of its own, with static shapes."""
    return sp.subgraph(onnx.load(MODELS / f"{name}.onnx"), *LAYERS[name])


@functools.cache
def run(name: str, pipeline: str = "npu-lower") -> int:
    model = first_layer(name)
    kernel = npu.compile(model, where=f"{name}.onnx", pipeline=pipeline)
    x = np.random.default_rng(1).standard_normal(SHAPE).astype(np.float32)
    (y,), report = kernel(x)
    (want,) = onnxruntime.InferenceSession(model.SerializeToString()).run(
        None, {model.graph.input[0].name: x})
    # Matmuls with f16 operands and f32 accumulation: ~1e-3 relative each.
    np.testing.assert_allclose(y, want, rtol=2e-2, atol=1e-2 * float(np.abs(want).max()))
    return report["cycles"]


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_export_variants_of_one_layer_run_alike(name):
    reference = run("vit_ts_eager")
    assert abs(run(name) - reference) <= SPREAD * reference, (run(name), reference)


def test_sdpa_export_needed_the_canonicalisation():
    """Without npu-canonicalize, the sdpa export's split scale kept the
    attention unfused (twice the cycles of the eager export)."""
    off = "npu-lower{canonicalize=false}"
    assert run("vit_ts_sdpa", off) > 1.5 * run("vit_ts_eager", off)
