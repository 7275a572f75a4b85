"""A model's stem (Conv with its bias, then Relu) applies the ReLU on the
drain's way out of L0C (`stem_fold.drain_relu`: cce.copy_l0c_to_ub with
convert = "f32_to_f16_relu", the bias in the cube), so its drain has no
vector pass and its image rows fold (`folded_stem`) as without a ReLU.
Numerics against onnxruntime."""

from __future__ import annotations

import numpy as np

import npu
from npu import ir as nir
from npu.ir import make_context, parse_module
from npu.costmodel.conv.stem_fold import drain_relu, folded_stem
from npu.pipeline import run_pipeline
from npu.target import get_target

from conv_cases import ort_run, stem_pool_model
from helpers import compile_program

SIZE, COUT = 32, 64
X = f'memref<1x3x{SIZE}x{SIZE}xf16, "gm">'
W = 'memref<13x4x16x16xf16, "gm">'
B = f'memref<{COUT}xf32, "gm">'
Y32 = f'memref<1x4x{SIZE // 2}x{SIZE // 2}x16xf32, "gm">'
Y = f'memref<1x4x{SIZE // 2}x{SIZE // 2}x16xf16, "gm">'
STEM = (f"func.func @stem(%x: {X}, %w: {W} {{npu.constant = dense<0.01> : tensor<13x4x16x16xf16>}}, "
        f"%b: {B} {{npu.constant = dense<0.5> : tensor<{COUT}xf32>}}, %y: {Y}) {{\n"
        f"  %acc = memref.alloc() : {Y32}\n"
        f'  "ascend.conv2d"(%x, %w, %b, %acc) {{dilations = array<i64: 1, 1>, groups = 1 : i64, '
        f'kernel = array<i64: 7, 7>, layout = "nc1hwc0_c4", pads = array<i64: 3, 3, 3, 3>, '
        f"strides = array<i64: 2, 2>}} : ({X}, {W}, {B}, {Y32}) -> ()\n"
        f"  %h = memref.alloc() : {Y}\n"
        f'  "ascend.cast"(%acc, %h) {{round_mode = "rint"}} : ({Y32}, {Y}) -> ()\n'
        f'  "ascend.maxs"(%h, %y) {{scalar = 0.000000e+00 : f64}} : ({Y}, {Y}) -> ()\n'
        f"  return\n}}\n")


def test_stem_relu_is_the_drains():
    """The drains convert with the ReLU and no vector op takes it (before:
    a plain f32 -> f16 drain and a vmaxs over every tile)."""
    module = compile_program(STEM, "npu-lower{cores=1}")
    drains = nir.ops_named(module.operation, "cce.copy_l0c_to_ub")
    assert drains and all(nir.str_attr(d, "convert") == "f32_to_f16_relu" for d in drains)
    assert not nir.ops_named(module.operation, "cce.vmaxs", "cce.vrelu", "cce.vadd")


def test_relu_stem_folds():
    """In its epilogue group (npu-fuse's) the conv still folds its rows."""
    module = parse_module(STEM, make_context())
    run_pipeline(module, "npu-fuse", get_target())
    conv = nir.ops_named(module.operation, "ascend.conv2d")[0]
    assert drain_relu(conv) is not None and folded_stem(conv)


def _stem_model(rng: np.random.Generator):
    """Conv 3->64 7x7/2 with its bias, Relu, MaxPool 3x3/2 (ONNX)."""
    return stem_pool_model(rng, SIZE, SIZE, COUT)


def test_stem_relu_pool_matches_onnxruntime():
    """The drain's ReLU zeroes the negative sums (the bias shifts half of them)."""
    rng = np.random.default_rng(0)
    m = _stem_model(rng)
    x = rng.standard_normal((1, 3, SIZE, SIZE)).astype(np.float16)
    (got,), _ = npu.compile(m, cores=1)(x)
    want = ort_run(m, {"x": x})[0]
    assert (want == 0).any()  # the ReLU bites
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=2e-2)


def test_relu_drain_cce_and_hivm_match_the_reference():
    """The same stem's ascend program with its ReLU on the drain, simulated at
    the cce level and at the hivm level (convert field 2), bit for bit alike
    (`simulate_levels`), against the numpy reference of the program."""
    from helpers import assert_outputs_close, simulate_levels

    from npu.frontend.compile import import_linalg, linalg_to_ascend_text, read_interface
    from npu.reference import evaluate

    rng = np.random.default_rng(1)
    m = _stem_model(rng)
    x = rng.standard_normal((1, 3, SIZE, SIZE)).astype(np.float16)
    ctx = make_context()
    linalg, ins, outs, locate = import_linalg(m, ctx, "stem.onnx")
    text = linalg_to_ascend_text(linalg, ins, outs, locate, "stem.onnx")
    source = parse_module(text, make_context())
    func = nir.functions(source)[0].operation
    interface = read_interface(func)
    want = evaluate(func, interface.arguments([x]))[interface.roles.index("output")]
    module = compile_program(text, "npu-lower{cores=1}")
    drains = nir.ops_named(module.operation, "cce.copy_l0c_to_ub")
    assert any(nir.str_attr(d, "convert") == "f32_to_f16_relu" for d in drains)
    assert not nir.ops_named(module.operation, "cce.vmaxs", "cce.vrelu")  # the pool's vmax only
    compiled = read_interface(nir.functions(module)[0].operation)  # its constants reordered
    result = simulate_levels(module, compiled.arguments([x]), force_hivm=True, strict=True)
    assert result.hazards == []
    got = result.outputs[compiled.roles.index("output")]
    # the ReLU bites (after the pool: 5% of the outputs are 0), not everywhere
    assert (want == 0).mean() > 0.02 and (want > 0).mean() > 0.5
    assert_outputs_close([got], [want])
