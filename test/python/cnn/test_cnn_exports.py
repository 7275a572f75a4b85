"""The tiny torchvision CNN exports (test/models/cnn/, made by
`make_exports.py --cnn` with the TorchScript and dynamo exporters) compile
unmodified and match onnxruntime, MobileNetV2's depthwise convs included,
MobileNetV3's and EfficientNet's hard activations, SiLU and
squeeze-excite scales, and ConvNeXt's LayerNorms over channels and
pointwise MatMuls on NHWC maps."""

from __future__ import annotations

import os

import numpy as np
import pytest

from cnn_onnx import compile_npu, ort_run

CNN = os.path.join(os.path.dirname(__file__), "..", "..", "models", "cnn")
EXPORTS = sorted(f[:-5] for f in os.listdir(CNN) if f.endswith(".onnx"))
# By default ResNet-18's two exports run (test_cnn_models runs tiny
# ResNet-50 bottlenecks); the other exports run with --runslow.
DEFAULT = {"resnet18_ts", "resnet18_dynamo"}


def test_the_corpus_is_there():
    assert {"resnet18_ts", "resnet18_dynamo", "resnet50_ts", "resnet50_dynamo", "mobilenetv2_ts",
            "mobilenetv2_dynamo", "mobilenetv3_ts", "mobilenetv3_dynamo", "efficientnet_ts",
            "efficientnet_dynamo", "convnext_ts", "convnext_dynamo", "unet_ts", "unet_dynamo"} <= set(EXPORTS)
    for name in EXPORTS:
        assert os.path.getsize(os.path.join(CNN, f"{name}.onnx")) < 1 << 20


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n in DEFAULT else pytest.mark.slow)
                                  for n in EXPORTS])
def test_export_compiles_and_matches_onnxruntime(name):
    import onnx

    path = os.path.join(CNN, f"{name}.onnx")
    shape = [d.dim_value for d in onnx.load(path).graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(0).uniform(-1, 1, shape).astype(np.float32)
    (got,), report = compile_npu(onnx.load(path))(x)
    want = ort_run(onnx.load(path), {"input": x})[0]
    assert report["cycles"] > 0 and got.shape == want.shape
    # The cube multiplies in f16 (accumulating in f32).
    np.testing.assert_allclose(got, want, rtol=3e-2, atol=3e-2)
