"""ResNet's bottleneck conv3 (1x1, + residual, ReLU) with the residual Add in
the cube (`passes/lower_conv/cube_residual.py`): an identity mad per Cout
block onto the residual's fractals, the ReLU on the L0C -> UB move, no
vector arithmetic on the drain. Numerics against onnxruntime and, at the
cce and hivm levels, against the program's numpy reference; the cost
model takes it for layer1's conv3 (64 -> 256 at 56), whose drain bounds it."""

from __future__ import annotations

import numpy as np
import pytest

import npu
from npu import ir as nir
from npu.ir import make_context, parse_module

from conv_cases import ort_run
from helpers import compile_program
import test_cube_bias as bottleneck


def _block_end(size: int, seed: int = 0):
    """ResNet's block end in ONNX (`test_cube_bias._bottleneck_end`: conv3's
    Add + ReLU read the downsample's result) at `size`, as ascend IR text."""
    bottleneck.SIZE, old = size, bottleneck.SIZE
    try:
        m, _ = bottleneck._bottleneck_end(np.random.default_rng(seed), 64, 256)
        return m, bottleneck._ascend(m)
    finally:
        bottleneck.SIZE = old


def _weights(module) -> list[np.ndarray]:
    func = nir.functions(module)[0]
    found = [nir.constant_argument(a) for a in func.regions[0].blocks[0].arguments]
    return [w for w in found if w is not None and w.ndim == 4]


def test_layer1_conv3_takes_the_residual_in_the_cube():
    """64 -> 256 at 56 with its bias, residual and ReLU: conv3's weights gain
    the bias's K row and the identity's (row 5: a 16x16 identity in every
    Cout block), the residual goes GM -> L1 (nothing GM -> UB), the drains'
    moves apply the ReLU and no vadd or vmaxs is left; with
    conv-cube-residual=never the vector recipe stays."""
    _, text = _block_end(56)
    module = compile_program(text, "npu-lower{cores=1 emit=cce}")
    shapes = sorted(w.shape for w in _weights(module))
    # conv1 (64 -> 64) and the downsample with the bias's K row, each its
    # ReLU on the move (`cube_bias.move_relu`), conv3 with the bias's and
    # the identity's K rows
    assert shapes == [(5, 4, 16, 16), (5, 16, 16, 16), (6, 16, 16, 16)]
    conv3 = next(w for w in _weights(module) if w.shape[0] == 6)
    assert all(np.array_equal(conv3[5, j], np.eye(16)) for j in range(16))
    never = compile_program(text, "npu-lower{cores=1 emit=cce conv-cube-residual=never}")
    assert sorted(w.shape for w in _weights(never)) == [(5, 4, 16, 16), (5, 16, 16, 16),
                                                        (5, 16, 16, 16)]
    count = lambda m, name: len(nir.ops_named(m.operation, name))  # noqa: E731
    # conv3's residual copies GM -> UB (7 bands of 4 super tiles) gone, its
    # 7 band copies GM -> L1 and the identity's come; its vadds (the residual)
    # and vmaxs (the ReLU) gone, its 7 x 16 identity mads come
    assert count(module, "cce.copy_gm_to_ub") == count(never, "cce.copy_gm_to_ub") - 28
    assert count(module, "cce.copy_gm_to_l1") == count(never, "cce.copy_gm_to_l1") + 8
    assert count(module, "cce.vadd") == count(never, "cce.vadd") - 56
    assert count(module, "cce.vmaxs") == count(never, "cce.vmaxs") - 56
    assert count(module, "cce.mad") == count(never, "cce.mad") + 7 * 16
    relu_moves = [m for m in nir.ops_named(module.operation, "cce.copy_l0c_to_ub")
                  if "convert" in m.attributes and "relu" in str(m.attributes["convert"])]
    assert len(relu_moves) >= 7 * 4  # conv3's: 7 bands of 4 super tiles


def test_cce_and_hivm_match_the_reference():
    """The block end at 16, conv3 forced into the cube (always): cce and hivm
    bit for bit alike, no hazards, within f16 rounding of the numpy
    reference (which adds the residual to the conv rounded to f16; the cube
    sums in f32 and rounds once)."""
    from helpers import assert_outputs_close, simulate_levels

    from npu.frontend.compile import read_interface
    from npu.reference import evaluate

    _, text = _block_end(16, seed=3)
    x = np.random.default_rng(3).standard_normal((1, 64, 16, 16)).astype(np.float16)
    source = parse_module(text, make_context())  # (held: the function lives in it)
    func = nir.functions(source)[0].operation
    interface = read_interface(func)
    want = evaluate(func, interface.arguments([x]))[interface.roles.index("output")]
    module = compile_program(text, "npu-lower{cores=1 conv-cube-residual=always}")
    assert any(w.shape[0] == 6 for w in _weights(module))
    compiled = read_interface(nir.functions(module)[0].operation)
    result = simulate_levels(module, compiled.arguments([x]), force_hivm=True, strict=True)
    assert result.hazards == []
    assert_outputs_close([result.outputs[compiled.roles.index("output")]], [want])


def test_bottleneck_matches_onnxruntime():
    """ResNet's block end from ONNX (conv3's Add + ReLU read the downsample's
    result), conv3 forced into the cube: within f16 tolerance of onnxruntime."""
    rng = np.random.default_rng(2)
    m, _ = bottleneck._bottleneck_end(rng, 64, 256)
    x = rng.standard_normal((1, 64, bottleneck.SIZE, bottleneck.SIZE)).astype(np.float16)
    kernel = npu.compile(m, pipeline="npu-lower{conv-cube-residual=always}", cores=1)
    assert any(w.shape[0] == 6 for w in _weights(kernel.module))  # conv3: bias and identity rows
    (got,), report = kernel(x)
    want = ort_run(m, {"x": x})[0]
    assert (want == 0).mean() > 0.2  # the ReLU bites
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=2e-2)


@pytest.mark.slow
def test_layer1_conv3_is_faster_in_the_cube():
    """ResNet's block end at 56 (64 -> 256): conv3 with its residual in the
    cube 37,948 cycles against 44,542 on the vector unit (V 25.1k against
    37.7k busy; MTE2, 32k of residual and map, now paces it)."""
    bottleneck.SIZE, size = 56, bottleneck.SIZE
    try:
        m, _ = bottleneck._bottleneck_end(np.random.default_rng(0), 64, 256)
    finally:
        bottleneck.SIZE = size
    x = np.random.default_rng(1).standard_normal((1, 64, 56, 56)).astype(np.float16)
    cycles = {}
    for option in ("auto", "never"):
        kernel = npu.compile(m, pipeline=f"npu-lower{{conv-cube-residual={option}}}", cores=1)
        (got,), report = kernel(x, numerics=False)
        cycles[option] = report["cycles"]
    assert cycles["auto"] <= cycles["never"] - 6_000, cycles
