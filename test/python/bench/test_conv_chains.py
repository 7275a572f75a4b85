"""bench/conv_chains.py finds the conv -> 1x1 conv pairs of a model's ONNX
graph through their epilogues (BatchNorm, Add's main path, ReLU): ResNet-50's
conv3 -> next block's conv1 across every block boundary but the stem's, and
each bottleneck's conv2 -> conv3; the map's other readers are the residual
Add or, at a stage's first block, the downsample."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from cnn import build  # noqa: E402
from conv_chains import pairs  # noqa: E402


def test_resnet50_pairs():
    found = pairs(build("resnet50", 32, 0.125))
    by_consumer = {cons: (prod, others) for prod, cons, _, others in found}
    conv1 = [c for c in by_consumer if c.endswith("/conv1/Conv")]
    conv3 = [c for c in by_consumer if c.endswith("/conv3/Conv")]
    assert len(found) == 31 and len(conv1) == 15 and len(conv3) == 16
    assert "/layer1/layer1.0/conv1/Conv" not in by_consumer  # it reads the stem's pool
    prod, others = by_consumer["/layer1/layer1.1/conv1/Conv"]
    assert prod == "/layer1/layer1.0/conv3/Conv" and others == ["/layer1/layer1.1/Add"]
    prod, others = by_consumer["/layer2/layer2.0/conv1/Conv"]
    assert prod == "/layer1/layer1.2/conv3/Conv"
    assert others == ["/layer2/layer2.0/downsample/downsample.0/Conv"]
    prod, others = by_consumer["/layer3/layer3.2/conv3/Conv"]
    assert prod == "/layer3/layer3.2/conv2/Conv" and others == []
