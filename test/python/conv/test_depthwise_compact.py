"""The depthwise vector path's compact weights (`passes/lower_conv/compact_weights.py`,
docs/grouped_conv.md): constant diagonal fractals become [C1, Kh*Kw, 16]
where npu-lower-conv runs the conv on the vector unit; weights that are a
plain argument keep the fractals. Simulated; numerics against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from npu.ir import constant_argument, functions, make_context, parse_module
from npu.passes.linalg_to_ascend.conv import block_diagonal
from npu.passes.linalg_to_ascend.conv_layouts import fractal_z_diagonal, to_5hd
from npu.passes.lower_conv.compact_weights import compact_data
from npu.pipeline import run_pipeline
from npu.reference_conv import conv2d
from npu.simulator import simulate
from npu.simulator.run_inputs import bind_to_lowered
from npu.target import get_target

TOL = dict(rtol=2e-2, atol=2e-2)  # test_depthwise_vector's


def dw_module(c: int, h: int, constant: np.ndarray | None = None) -> str:
    """A 3x3 stride-1 pad-1 depthwise conv in layout "nc1hwc0_bd" with an f16
    bias, as the frontend writes it; `constant`: the weights as an
    `npu.constant` (a splat of its first value when all are equal)."""
    c1 = c // 16
    t_x = f'memref<1x{c1}x{h}x{h}x16xf16, "gm">'
    t_w = f'memref<9x{c1}x16x16xf16, "gm">'
    t_b = f'memref<{c}xf16, "gm">'
    attr = ""
    if constant is not None:
        assert np.all(constant == constant.flat[0])
        attr = f' {{npu.constant = dense<{float(constant.flat[0])}> : tensor<9x{c1}x16x16xf16>}}'
    return (f'func.func @dw(%x: {t_x}, %w: {t_w}{attr}, %b: {t_b}, %y: {t_x}) {{\n'
            f'  "ascend.conv2d"(%x, %w, %b, %y) {{strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, '
            f'dilations = array<i64: 1, 1>, groups = 1 : i64, layout = "nc1hwc0_bd", '
            f'group_channels = 1 : i64, kernel = array<i64: 3, 3>}} : ({t_x}, {t_w}, {t_b}, {t_x}) -> ()\n'
            f'  return\n}}\n')


def lowered(text: str, options: str = ""):
    module = parse_module(text, make_context())
    run_pipeline(module, f"npu-lower{{cores=1 {options}}}", get_target("ascend910"))
    return module


def test_compact_data_is_the_per_channel_weights():
    """Channel i of block j at kernel point k is w[16j + i, 0, k // Kw, k % Kw]."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((48, 1, 3, 3)).astype(np.float16)
    compact = compact_data(fractal_z_diagonal(block_diagonal(w, 48)))
    assert compact.shape == (3, 9, 16)
    np.testing.assert_array_equal(compact, w.reshape(3, 16, 9).transpose(0, 2, 1))


@pytest.mark.parametrize("c,h", [(576, 14), (960, 7)])
def test_mobilenet_layers_within_1_5x_of_the_smaller_bound(c, h):
    """MobileNetV2's 576@14 and 960@7 depthwise layers with constant weights
    (as a model has them), one core: at most 1.5x the smaller of the two
    paths' bounds (the simulator's busiest unit of the vector program and of
    the cube one). 960@7 was 10,610 cycles, GM-bound by the diagonal
    fractals (1.76x); 576@14 14,788 (1.63x the cube's bound 9,072)."""
    zeros = np.zeros((9, c // 16, 16, 16), np.float16)
    text = dw_module(c, h, zeros)
    inputs = [np.zeros((1, c // 16, h, h, 16), np.float16), zeros,
              np.zeros(c, np.float16), np.zeros((1, c // 16, h, h, 16), np.float16)]
    t = get_target("ascend910")
    auto = lowered(text)
    inputs[1] = constant_argument(functions(auto)[0].regions[0].blocks[0].arguments[1])
    got = simulate(auto, inputs, target=t, numerics=False)
    inputs[1] = zeros
    cube = simulate(lowered(text, "conv-depthwise=cube"), inputs, target=t, numerics=False)
    bound = min(got.report["bound_cycles"], cube.report["bound_cycles"])
    assert got.cycles <= 1.5 * bound, (got.cycles, got.report["bound_cycles"], cube.report["bound_cycles"])


def test_vector_path_reads_the_weights_once_compact():
    """960@7 in one band: GM reads are the input map, C*Kh*Kw f16 weights
    and the bias, each once (the fractals were 16x the weights: 276,480 bytes)."""
    c, h = 960, 7
    zeros = np.zeros((9, c // 16, 16, 16), np.float16)
    module = lowered(dw_module(c, h, zeros))
    w = constant_argument(functions(module)[0].regions[0].blocks[0].arguments[1])
    assert w.shape == (c // 16, 9, 16)
    inputs = [np.zeros((1, c // 16, h, h, 16), np.float16), w, np.zeros(c, np.float16),
              np.zeros((1, c // 16, h, h, 16), np.float16)]
    res = simulate(module, inputs, target=get_target("ascend910"), numerics=False)
    assert res.report["bytes"]["gm_to_ub"] == 2 * (c * h * h + c * 9 + c)


def _case(seed: int = 1):
    rng = np.random.default_rng(seed)
    c, h = 32, 6
    x = rng.standard_normal((1, c, h, h)).astype(np.float16)
    w = rng.standard_normal((c, 1, 3, 3)).astype(np.float16)
    b = rng.standard_normal(c).astype(np.float16)
    want = conv2d(x.astype(np.float32), w.astype(np.float32), b.astype(np.float32), (1, 1),
                  (1, 1, 1, 1), (1, 1), c)
    wz = fractal_z_diagonal(block_diagonal(w, c))
    return x, wz, b, want


def test_fractal_weights_argument_matches_numpy():
    """Weights that are a plain argument (not a constant) keep the diagonal
    fractals, summed out on chip: the same result as numpy."""
    x, wz, b, want = _case()
    module = lowered(dw_module(32, 6), "conv-depthwise=vector")
    assert "vmla" in str(module) and "memref<9x2x16x16xf16" in str(module)
    y = np.zeros((1, 2, 6, 6, 16), np.float16)
    res = simulate(module, [to_5hd(x), wz, b, y], target=get_target("ascend910"))
    np.testing.assert_allclose(res.outputs[3].astype(np.float32), to_5hd(want), **TOL)


def test_npu_run_binds_the_retyped_constant():
    """npu-run's binding of the original function's inputs to the lowered
    one: the retyped compact constant gets its own data, not the fractals."""
    wz = np.full((9, 2, 16, 16), 0.5, np.float16)
    text = dw_module(32, 6, wz)
    original = parse_module(text, make_context())
    module = lowered(text)
    inputs = [np.zeros((1, 2, 6, 6, 16), np.float16), wz, np.zeros(32, np.float16),
              np.zeros((1, 2, 6, 6, 16), np.float16)]
    arrays, _ = bind_to_lowered(functions(original)[0], functions(module)[0], inputs)
    assert arrays[1].shape == (2, 9, 16) and np.all(arrays[1] == 0.5)
    simulate(module, arrays, target=get_target("ascend910"), numerics=False)
