"""Streamed conv weights laid out super tile by super tile on the host
(`passes/lower_conv/compact_weights.py`, `tile_major_data`): each super
tile's weights are one GM run and one burst instead of one burst per K1 row.
Numerics against onnxruntime; the layout against numpy; the time against
the same conv reading fractal-Z weights that are a plain argument."""

from __future__ import annotations

import numpy as np

from cnn_onnx import make, ort_run


def test_tile_major_data_puts_each_super_tile_in_one_run():
    """The tile at Cout block s0 starts at s0 * K1 * 256 elements and holds
    [K1, its blocks, 16, 16] of the fractal-Z array (the last tile narrower)."""
    from npu.passes.lower_conv.compact_weights import tile_major_data

    wz = np.arange(4 * 5 * 16 * 16, dtype=np.float32).reshape(4, 5, 16, 16)
    flat = tile_major_data(wz, 2)
    assert flat.shape == (wz.size,)
    for s0 in (0, 2, 4):
        ns = min(2, 5 - s0)
        start = s0 * 4 * 256
        np.testing.assert_array_equal(flat[start:start + 4 * ns * 256].reshape(4, ns, 16, 16),
                                      wz[:, s0:s0 + ns])


def test_streamed_3x3_conv_matches_onnxruntime():
    """A 3x3 256 -> 528 conv with bias and ReLU on a 5x5 map: 2.4 MB of
    constant weights (more than L1), streamed in super tiles of tile-major
    weights, the last one narrower (33 Cout blocks)."""
    from onnx import TensorProto, helper, numpy_helper

    import npu

    rng = np.random.default_rng(3)
    cin, cout = 256, 528
    w = (rng.standard_normal((cout, cin, 3, 3)) / np.sqrt(cin * 9)).astype(np.float16)
    b = rng.standard_normal(cout).astype(np.float16)
    model = make([helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", ["c"], ["y"])],
                 [("x", TensorProto.FLOAT16, [1, cin, 5, 5])],
                 [("y", TensorProto.FLOAT16, [1, cout, 5, 5])],
                 [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    x = rng.standard_normal((1, cin, 5, 5)).astype(np.float16)
    kernel = npu.compile(model, target="ascend910", cores=1)  # one core: the whole Cout
    (got,), report = kernel(x)
    (want,) = ort_run(model, {"x": x})
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), atol=2e-2, rtol=2e-2)
    # the weights streamed: GM -> L1 moved them more than once would not fit L1
    assert report["bytes"]["gm_to_l1"] >= w.size * 2


def test_layer4_3x3_streams_faster_from_tile_major_weights():
    """ResNet-50's layer4 3x3 512 -> 512 on 7x7 (4.7 MB of weights, twelve
    super tiles of 288 K1 rows): 86,267 cycles reading fractal-Z weights
    (3,456 bursts on MTE2, its bound pipe), 83,110 from tile-major ones."""
    import sys
    from pathlib import Path

    from npu.ir import constant_argument, functions, make_context, parse_module
    from npu.pipeline import run_pipeline
    from npu.simulator import simulate
    from npu.target import get_target

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
    import conv as conv_bench

    t = get_target("ascend910")
    text, inputs = conv_bench.conv_module(512, 7, 7, 512, 3, 1, 1)
    t_w = 'memref<288x32x16x16xf16, "gm">'
    const = text.replace(f"%w: {t_w}", f"%w: {t_w} {{npu.constant = dense<0.0> : "
                                       f"tensor<288x32x16x16xf16>}}")
    cycles = []
    for src in (text, const):
        module = parse_module(src, make_context())
        run_pipeline(module, "npu-lower{cores=1}", t)
        w = constant_argument(functions(module)[0].regions[0].blocks[0].arguments[1])
        if src is const:
            assert w is not None and w.shape == (288 * 32 * 256,)
        args = list(inputs) if w is None else [inputs[0], w, *inputs[2:]]
        cycles.append(simulate(module, args, target=t, numerics=False).cycles)
    plain, tiled = cycles
    assert tiled <= plain - 3000, cycles
