"""A conv whose `npu.conv_epilogue` group has no members left once the
drain takes its own part (the f32 -> f16 cast, `drain_cast`; a ReLU on the
move, `stem_fold.drain_relu`) lowers as a conv with no epilogue where the
drain bounds it (`drains_as_none`): its tiling may take `one_store` (a
super tile's two halves in one store, one GM latency on MTE3) and the cube
bias, and the result's type is the drain's. ResNet's downsample convs are
such convs (no ReLU before the Add)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import npu

from conv_cases import ort_run


def _relu_then_1x1(size: int, cin: int = 64, cout: int = 256, stride: int = 1):
    """x -> Conv 1x1 cin -> cin -> Relu -> Conv 1x1 cin -> cout ("ds", no
    epilogue member: its input an NC1HWC0 conv result, as in a model)."""
    rng = np.random.default_rng(0)
    inits = []

    def conv(name: str, i: str, o: str, n_in: int, n_out: int, stride: int = 1):
        w = (rng.standard_normal((n_out, n_in, 1, 1)) / np.sqrt(n_in)).astype(np.float16)
        b = (rng.standard_normal(n_out) * 0.5).astype(np.float16)
        inits.extend([numpy_helper.from_array(w, f"{name}_w"), numpy_helper.from_array(b, f"{name}_b")])
        return helper.make_node("Conv", [i, f"{name}_w", f"{name}_b"], [o], kernel_shape=[1, 1],
                                strides=[stride, stride], name=name)

    nodes = [conv("c1", "x", "a", cin, cin), helper.make_node("Relu", ["a"], ["h"]),
             conv("ds", "h", "y", cin, cout, stride)]
    f16 = TensorProto.FLOAT16
    graph = helper.make_graph(nodes, "ds", [helper.make_tensor_value_info("x", f16, [1, cin, size, size])],
                              [helper.make_tensor_value_info("y", f16, [1, cout, -(-size // stride),
                                                                        -(-size // stride)])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def test_cast_only_epilogue_drains_as_no_epilogue():
    """ResNet-50's layer1 downsample (1x1 64 -> 256 at 56): with its cast
    taken for an epilogue it was tiled for an f32 result and drained each
    half on its own: 56 stores of 28 KB, each holding MTE3 for a GM latency
    (MTE3-bound, 45,038 cycles in the model); as a conv of no epilogue, one
    store of a band's whole super tile and the bias in the cube. Numerics
    against onnxruntime (the bias now rounded once with the sum)."""
    m = _relu_then_1x1(56)
    x = np.random.default_rng(1).standard_normal((1, 64, 56, 56)).astype(np.float16)
    (got,), report = npu.compile(m, cores=1)(x)
    want = ort_run(m, {"x": x})[0]
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=2e-2)
    ds = next(r for r in report["per_op"] if r["op"].startswith("ds "))
    assert ds["exclusive_cycles"] <= 38_200, ds


def test_only_a_drain_bound_conv_drains_as_none(monkeypatch):
    """The layer1 downsample (V and MTE3 its busiest pipes) drains as none;
    ResNet-18's layer4 downsample (1x1/2 256 -> 512 at 14, MTE2-bound)
    keeps its epilogue's tiling: as none it took one_store and smaller
    super tiles, and ResNet-18 ran ~1.5k cycles slower in all."""
    import npu.passes.lower_conv as lower_conv

    seen = []
    decide = lower_conv.drains_as_none

    def spy(epi, shape, *rest):
        seen.append((shape.c1, shape.co1, decide(epi, shape, *rest)))
        return seen[-1][2]

    monkeypatch.setattr(lower_conv, "drains_as_none", spy)
    for size, cin, cout, stride in ((56, 64, 256, 1), (14, 256, 512, 2)):
        npu.compile(_relu_then_1x1(size, cin, cout, stride), cores=1)
    assert (4, 16, True) in seen and (16, 32, False) in seen, seen
