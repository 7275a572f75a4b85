"""A 1x1 conv whose drain bounds it (ResNet-50's conv3: + residual, ReLU)
adds its bias in the cube (`passes/lower_conv/cube_bias.py`): one more K
fractal, ones on the A side, the bias in its weights. Numerics against
onnxruntime and, at the cce and hivm levels, against the program's numpy
reference; a cube-bound 1x1 keeps the bias on the drain."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import npu
from npu import ir as nir
from npu.ir import make_context, parse_module

from conv_cases import ort_run
from helpers import compile_program

SIZE = 16


def _bottleneck_end(rng: np.random.Generator, cin: int, cout: int):
    """ResNet's block end in ONNX: h = Relu(Conv 1x1 cin -> cin (x)), then
    Relu(Conv 1x1 cin -> cout (h) + Relu(Conv 1x1 cin -> cout (x))), the
    second conv's Add + Relu its epilogue (the residual another conv's
    NC1HWC0 result, as in a model; its ReLU keeps the import from summing
    the two 1x1 convs into one over both maps, `onnx_conv_sums`, which
    leaves no residual). Returns (model, the second conv's bias)."""
    def conv(name: str, i: str, o: str, n_in: int, n_out: int):
        w = (rng.standard_normal((n_out, n_in, 1, 1)) / np.sqrt(n_in)).astype(np.float16)
        b = (rng.standard_normal(n_out) * 0.5).astype(np.float16)
        inits.extend([numpy_helper.from_array(w, f"{name}_w"), numpy_helper.from_array(b, f"{name}_b")])
        return helper.make_node("Conv", [i, f"{name}_w", f"{name}_b"], [o], kernel_shape=[1, 1]), b

    inits: list = []
    c1, _ = conv("c1", "x", "a", cin, cin)
    c3, b = conv("c3", "h", "c", cin, cout)
    ds, _ = conv("ds", "x", "e", cin, cout)
    nodes = [c1, helper.make_node("Relu", ["a"], ["h"]), c3, ds, helper.make_node("Relu", ["e"], ["d"]),
             helper.make_node("Add", ["c", "d"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    f16 = TensorProto.FLOAT16
    graph = helper.make_graph(
        nodes, "conv3", [helper.make_tensor_value_info("x", f16, [1, cin, SIZE, SIZE])],
        [helper.make_tensor_value_info("y", f16, [1, cout, SIZE, SIZE])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), b


def _ascend(m):
    from npu.frontend.compile import import_linalg, linalg_to_ascend_text

    linalg, ins, outs, locate = import_linalg(m, make_context(), "conv3.onnx")
    return linalg_to_ascend_text(linalg, ins, outs, locate, "conv3.onnx")


def _weights(module) -> list[np.ndarray]:
    """The compiled program's fractal-Z weight constants."""
    func = nir.functions(module)[0]
    found = [nir.constant_argument(a) for a in func.regions[0].blocks[0].arguments]
    return [w for w in found if w is not None and w.ndim == 4]


def _channel_vadds(module) -> int:
    """Vector adds of a per-channel pattern (repeat stride 0): the drain's bias."""
    return len([op for op in nir.ops_named(module.operation, "cce.vadd")
                if nir.int_attr(op, "src1_rep_stride") == 0])


def test_conv3_at_56_takes_the_bias_fractal():
    """ResNet-50's layer1 conv3 (64 -> 256 at 56, + residual, ReLU), V the
    busiest pipe of its estimate: 4 K fractals + the bias's (row 0 of each
    block the bias, the rest zero), an L1 map of ones for its img2col, and
    no drain's vadd left where cube-bias=never has them. The downsample
    beside it (64 -> 256) and the 64 -> 64, each with its ReLU, whose
    stores bound them, take it too and apply the ReLU on the move
    (`move_relu`: cnn/test_move_relu.py)."""
    global SIZE
    SIZE, size = 56, SIZE
    try:
        m, b = _bottleneck_end(np.random.default_rng(0), 64, 256)
        text = _ascend(m)
    finally:
        SIZE = size
    # (the residual on the drain: with it in the cube too, test_cube_residual)
    module = compile_program(text, "npu-lower{cores=1 emit=cce conv-cube-residual=never}")
    shapes = sorted(w.shape for w in _weights(module))
    assert shapes == [(5, 4, 16, 16), (5, 16, 16, 16), (5, 16, 16, 16)]
    (conv3,) = [w for w in _weights(module) if w.shape[1] == 16
                and np.array_equal(w[4, :, :, 0].reshape(-1), b)]
    assert not conv3[4, :, :, 1:].any()
    assert len(nir.ops_named(module.operation, "cce.copy_ub_to_l1")) == 3
    never = compile_program(text, "npu-lower{cores=1 emit=cce conv-cube-bias=never "
                                  "conv-cube-residual=never}")
    assert sorted(w.shape for w in _weights(never)) == [(4, 4, 16, 16), (4, 16, 16, 16),
                                                        (4, 16, 16, 16)]
    assert _channel_vadds(module) < _channel_vadds(never)


def test_cube_bound_1x1_keeps_the_bias_on_the_drain():
    """256 -> 64 at 28 (K1 = 16: the cube's work four times the drain's):
    V is not the busiest pipe, so no conv takes the bias fractal."""
    m, _ = _bottleneck_end(np.random.default_rng(0), 256, 64)
    module = compile_program(_ascend(m), "npu-lower{cores=1 emit=cce}")
    assert all(w.shape[0] == 16 for w in _weights(module))
    assert not nir.ops_named(module.operation, "cce.copy_ub_to_l1")


def test_cube_bias_matches_onnxruntime():
    """Every conv with its bias in the cube (cube-bias=always)."""
    rng = np.random.default_rng(2)
    m, _ = _bottleneck_end(rng, 64, 256)
    x = rng.standard_normal((1, 64, SIZE, SIZE)).astype(np.float16)
    (got,), _ = npu.compile(m, pipeline="npu-lower{conv-cube-bias=always}", cores=1)(x)
    want = ort_run(m, {"x": x})[0]
    assert (want == 0).mean() > 0.2  # the ReLU bites
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=2e-2)


def test_cube_bias_cce_and_hivm_match_the_reference():
    """cce and hivm levels bit for bit alike, no hazards, against the numpy
    reference of the ascend program (the bias added once, in f32)."""
    from helpers import assert_outputs_close, simulate_levels

    from npu.frontend.compile import read_interface
    from npu.reference import evaluate

    rng = np.random.default_rng(3)
    m, _ = _bottleneck_end(rng, 64, 256)
    x = rng.standard_normal((1, 64, SIZE, SIZE)).astype(np.float16)
    text = _ascend(m)
    source = parse_module(text, make_context())  # (held: the function lives in it)
    func = nir.functions(source)[0].operation
    interface = read_interface(func)
    want = evaluate(func, interface.arguments([x]))[interface.roles.index("output")]
    module = compile_program(text, "npu-lower{cores=1 conv-cube-bias=always}")
    assert sorted(w.shape[0] for w in _weights(module)) == [5, 5, 5]
    compiled = read_interface(nir.functions(module)[0].operation)  # its weights with the bias
    result = simulate_levels(module, compiled.arguments([x]), force_hivm=True, strict=True)
    assert result.hazards == []
    assert_outputs_close([result.outputs[compiled.roles.index("output")]], [want])
