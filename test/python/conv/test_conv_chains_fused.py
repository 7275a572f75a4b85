"""Conv chains formed by npu-fuse (`conv-chains`) and lowered band by band
(`lower_conv.conv_chain`): a conv's result kept on chip as the next 1x1
stride-1 conv's input map. Numerics against onnxruntime (f16), with and
without another reader of the map (a residual: then it still reaches GM),
no hazard, and the chains off (fuse-conv-chains=false) for comparison."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npu
from conv_cases import ort_run

CUBE = dict(rtol=3e-2, atol=3e-2)
ONE = "builtin.module(npu-lower{cores=1 fuse-conv-chains=true})"
OFF = "builtin.module(npu-lower{cores=1 fuse-conv-chains=false})"


def _w(rng, name, cout, cin, k):
    return numpy_helper.from_array((rng.standard_normal((cout, cin, k, k)) /
                                    np.sqrt(cin * k * k)).astype(np.float16), name)


def _b(rng, name, c):
    return numpy_helper.from_array((rng.standard_normal(c) * 0.1).astype(np.float16), name)


def _model(nodes, inits, c_in, c_out, h, w) -> onnx.ModelProto:
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, c_out, h, w])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT16, [1, c_in, h, w])], outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def two_convs(c=64, mid=256, h=28, w=28, seed=0) -> onnx.ModelProto:
    """1x1 conv c -> mid + bias, ReLU, 1x1 conv mid -> c + bias (ResNet's
    conv3 -> next conv1)."""
    rng = np.random.default_rng(seed)
    inits = [_w(rng, "w1", mid, c, 1), _b(rng, "b1", mid), _w(rng, "w2", c, mid, 1),
             _b(rng, "b2", c)]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["y"], name="conv2")]
    return _model(nodes, inits, c, c, h, w)


def bottlenecks(c=64, mid=16, h=14, w=14, blocks=2, seed=0) -> onnx.ModelProto:
    """A 3x3 conv + ReLU (the stem: NC1HWC0 from there on), then `blocks`
    ResNet bottleneck blocks (1x1 c->mid, ReLU, 3x3 mid->mid, ReLU, 1x1
    mid->c, + the block's input, ReLU): each block's result is the next
    one's conv1 map and its residual."""
    rng = np.random.default_rng(seed)
    inits = [_w(rng, "w0", c, 16, 3), _b(rng, "b0", c)]
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], name="stem", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["r0"])]
    x = "r0"
    for k in range(blocks):
        p = f"b{k}_"
        inits += [_w(rng, p + "w1", mid, c, 1), _b(rng, p + "b1", mid),
                  _w(rng, p + "w2", mid, mid, 3), _b(rng, p + "b2", mid),
                  _w(rng, p + "w3", c, mid, 1), _b(rng, p + "b3", c)]
        y = "y" if k == blocks - 1 else p + "out"
        nodes += [helper.make_node("Conv", [x, p + "w1", p + "b1"], [p + "c1"], name=p + "conv1"),
                  helper.make_node("Relu", [p + "c1"], [p + "r1"]),
                  helper.make_node("Conv", [p + "r1", p + "w2", p + "b2"], [p + "c2"],
                                   name=p + "conv2", pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [p + "c2"], [p + "r2"]),
                  helper.make_node("Conv", [p + "r2", p + "w3", p + "b3"], [p + "c3"],
                                   name=p + "conv3"),
                  helper.make_node("Add", [p + "c3", x], [p + "s"]),
                  helper.make_node("Relu", [p + "s"], [y])]
        x = y
    return _model(nodes, inits, 16, c, h, w)


def _run(m, pipeline):
    x = np.random.default_rng(1).standard_normal(
        [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]).astype(np.float16)
    kernel = npu.compile(m, pipeline=pipeline)
    (got, *_), report = kernel(x)
    return kernel, got, report, ort_run(m, {"x": x})[0]


def _copies_to_l1(kernel) -> int:
    """UB -> L1 copies in the lowered program (a chain's producer's band maps, a cube
    bias's map of ones)."""
    return kernel.stages["lowered"].count("copy_ub_to_l1")


@pytest.mark.slow
def test_two_convs_chained():
    """conv3 -> next conv1 (1x1 64 -> 256 -> 64 at 28x28): the map, read by
    the second conv only, never reaches GM."""
    m = two_convs()
    kernel, got, report, want = _run(m, ONE)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), **CUBE)
    assert not report["hazards"]
    assert _copies_to_l1(kernel) > 0
    assert "1x256x28x28" not in kernel.stages["lowered"]  # no NCHW copy, no GM map
    off, got_off, _, _ = _run(m, OFF)
    # one copy: the 64 -> 256 conv's map of ones (unchained, its bias in the
    # cube and its ReLU on the move: `cube_bias.move_relu`), no band map
    assert _copies_to_l1(off) == 1
    np.testing.assert_allclose(got_off.astype(np.float32), want.astype(np.float32), **CUBE)


@pytest.mark.slow
def test_bottleneck_blocks_chained():
    """Two bottleneck blocks after a 3x3 conv: the stem's and block 0's
    results (read again as the residual, so still stored to GM) and block
    1's conv2 result (read by conv3 only) stay on chip for the next 1x1
    conv; faster than with the chains off."""
    m = bottlenecks()
    kernel, got, report, want = _run(m, ONE)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), **CUBE)
    assert not report["hazards"]
    assert _copies_to_l1(kernel) > 0
    off, got_off, report_off, _ = _run(m, OFF)
    assert _copies_to_l1(off) == 0
    np.testing.assert_allclose(got_off.astype(np.float32), want.astype(np.float32), **CUBE)
    assert report["cycles"] < report_off["cycles"], (report["cycles"], report_off["cycles"])
