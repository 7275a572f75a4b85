"""The ResNet stem as torchvision exports it in f32 (Conv 7x7 stride 2 pad 3,
BatchNormalization, ReLU) on the whole chip: each core's band of output
rows starts with img2cols whose taps all fall in the pads, which read no
byte of the staged map (the simulator once counted two, a false race with
the staging copy on 32 cores only)."""

from __future__ import annotations

import numpy as np

from cnn_onnx import bn_params, compare_npu, make


def _stem(size: int):
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(5)
    w = (rng.standard_normal((64, 3, 7, 7)) * 0.1).astype(np.float32)
    inits = [numpy_helper.from_array(w, "conv1.weight")] + bn_params("bn1", 64, rng)
    nodes = [helper.make_node("Conv", ["input", "conv1.weight"], ["c"], name="/conv1/Conv",
                              kernel_shape=[7, 7], strides=[2, 2], pads=[3, 3, 3, 3]),
             helper.make_node("BatchNormalization", ["c", "bn1.scale", "bn1.bias", "bn1.mean",
                                                     "bn1.var"], ["b"], name="/bn1/BatchNormalization"),
             helper.make_node("Relu", ["b"], ["y"], name="/relu/Relu")]
    half = size // 2
    return make(nodes, [("input", 1, [1, 3, size, size])], [("y", 1, [1, 64, half, half])], inits)


def test_f32_stem_on_the_chip_matches_onnxruntime():
    model = _stem(224)
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    report = compare_npu(model, {"input": x}, atol=3e-2, rtol=3e-2, cores=32)
    assert report["hazards"] == [] and report["block_dim"] > 1, report.get("block_dim")
