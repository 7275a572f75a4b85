"""`npu-lower{ub-fraction=...}` on ResNet-50's parts that broke under it, on
one core against onnxruntime: a share of UB is room left for others, never
a reason for a program to overflow UB or for a map to be refused."""

from __future__ import annotations

import numpy as np
import pytest

import npu
from npu.target import get_target
from cnn_onnx import make, ort_run
from helpers import compile_remarks

RNG = np.random.default_rng(5)


@pytest.mark.parametrize("fraction", [0.5, 0.8, 0.9])
def test_gap_head_plans_within_ub_at_any_ub_fraction(fraction):
    """ResNet-50's f16 head on one core under `npu-lower{ub-fraction=...}`:
    at 0.8 the global pool's reduction took 303,104 bytes of UB's 262,144
    (its outer batches charged the buffers two ping-pong slots share at half
    weight, with no second slot to fit). Against onnxruntime."""
    from onnx import helper, numpy_helper

    c, cin = 2048, 16
    inits = [numpy_helper.from_array((RNG.standard_normal((c, cin, 1, 1)) * 0.3).astype(np.float16), "w")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="/conv/Conv"),
             helper.make_node("Relu", ["c"], ["r"], name="/relu/Relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["y"], name="/avgpool/GlobalAveragePool")]
    model = make(nodes, [("x", 10, [1, cin, 7, 7])], [("y", 10, [1, c, 1, 1])], inits)
    x = RNG.standard_normal((1, cin, 7, 7)).astype(np.float16)
    kernel = npu.compile(model, cores=1, pipeline=f"npu-lower{{ub-fraction={fraction}}}")
    (got,), _ = kernel(x)
    np.testing.assert_allclose(got.astype(np.float64), ort_run(model, {"x": x})[0].astype(np.float64),
                               atol=2e-3, rtol=1e-2)


@pytest.mark.parametrize("fraction", [0.25, 0.5])
def test_stem_with_its_pool_tiles_at_a_small_ub_fraction(fraction):
    """ResNet-50's stem at 224 (7x7/2 conv, ReLU, the 3x3/2 max pool on its
    drain): the NCHW image's staging and the pool's row buffers left no
    tiling in half of UB, and the conv was refused ("no tiling fits");
    tiled in all of UB instead."""
    from onnx import helper, numpy_helper

    w = (RNG.standard_normal((64, 3, 7, 7)) * 0.1).astype(np.float16)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="/conv1/Conv", kernel_shape=[7, 7],
                              strides=[2, 2], pads=[3, 3, 3, 3]),
             helper.make_node("Relu", ["c"], ["r"], name="/relu/Relu"),
             helper.make_node("MaxPool", ["r"], ["y"], name="/maxpool/MaxPool", kernel_shape=[3, 3],
                              strides=[2, 2], pads=[1, 1, 1, 1])]
    model = make(nodes, [("x", 10, [1, 3, 224, 224])], [("y", 10, [1, 64, 56, 56])],
                 [numpy_helper.from_array(w, "w")])
    x = RNG.standard_normal((1, 3, 224, 224)).astype(np.float16)
    kernel, said = compile_remarks(model, cores=1, pipeline=f"npu-lower{{ub-fraction={fraction}}}")
    # the share exceeded reaches the caller: the option was theirs
    share = int(get_target("ascend910").capacity("ub") * fraction)
    assert any(f"npu-lower-conv: no tiling fits ub-fraction={fraction:g} "
               f"({share} bytes); tiled in all of UB" in m for m in said), said
    (got,), _ = kernel(x)
    np.testing.assert_allclose(got.astype(np.float64), ort_run(model, {"x": x})[0].astype(np.float64),
                               atol=1e-2, rtol=1e-2)
