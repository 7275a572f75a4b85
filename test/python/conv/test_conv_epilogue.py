"""Conv epilogues (`npu.conv_epilogue`): the elementwise ops after a conv
(ReLU, ReLU6, a residual Add, the cast to f16 for the next conv) run on
each drained tile, checked against onnxruntime, and only the last one's
result is stored."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import npu
from conv_cases import ELEM, ort_run

CUBE = dict(rtol=3e-2, atol=3e-2)


def bottleneck_end(c=24, h=7, w=9, dtype=np.float16, act="Relu", seed=0) -> onnx.ModelProto:
    """conv -> (+ a 1x1 'downsample' conv of the input, made after it) -> act:
    the end of a ResNet-50 bottleneck, with odd spatial sizes (a band's
    pixels are not whole fractals) and channels that are not whole blocks."""
    rng = np.random.default_rng(seed)

    def weight(name, cout, cin, k):
        return numpy_helper.from_array((rng.standard_normal((cout, cin, k, k)) /
                                        np.sqrt(cin * k * k)).astype(dtype), name)

    inits = [weight("w1", c, c, 3), weight("wd", c, c, 1),
             numpy_helper.from_array((rng.standard_normal(c) * 0.1).astype(dtype), "b1")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["x", "wd"], ["d"], name="downsample"),
             helper.make_node("Add", ["c1", "d"], ["s"], name="add")]
    if act == "Relu":
        nodes.append(helper.make_node("Relu", ["s"], ["y"], name="act"))
    else:
        inits += [numpy_helper.from_array(np.array(0, dtype), "lo"),
                  numpy_helper.from_array(np.array(6, dtype), "hi")]
        nodes.append(helper.make_node("Clip", ["s", "lo", "hi"], ["y"], name="act"))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", ELEM[dtype], [1, c, h, w])],
                              [helper.make_tensor_value_info("y", ELEM[dtype], [1, c, h, w])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
@pytest.mark.parametrize("act", ["Relu", "Clip"])
def test_residual_and_activation_join_the_drain(dtype, act):
    m = bottleneck_end(dtype=dtype, act=act)
    fused = npu.compile(m, pipeline="npu-canonicalize,npu-fuse").stages["lowered"]
    members = [int(k) for k in re.findall(r"npu.conv_epilogue = \{[^}]*members = (\d+)", fused)]
    # the add and the activation (Clip: maxs, mins), after the f32 -> f16 cast
    # in f16, join one conv
    assert max(members) == (dtype == np.float16) + 1 + (2 if act == "Clip" else 1), members
    x = np.random.default_rng(1).uniform(-2, 2, (1, 24, 7, 9)).astype(dtype)
    kernel = npu.compile(m)
    (got,), report = kernel(x)
    assert not report["hazards"]
    want = ort_run(m, {"x": x})[0]
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), **CUBE)
    # the members' work moved into the drain: faster than the same ops apart
    apart = npu.compile(m, pipeline="npu-lower{fuse-epilogues=false}")
    (again,), apart_report = apart(x)
    np.testing.assert_allclose(again.astype(np.float32), want.astype(np.float32), **CUBE)
    assert report["cycles"] < apart_report["cycles"]
