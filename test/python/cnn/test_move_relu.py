"""A 1x1 conv whose epilogue is only its ReLU (after the drain's rounding
cast) and whose drain bounds it puts its bias in the cube and applies the
ReLU on the drain's move (`cube_bias.move_relu`: cce.copy_l0c_to_ub with
convert = "f32_to_f16_relu"): nothing on V but the move, and it drains as a
conv of no epilogue (one store a super tile, `one_store`). ResNet-50's
layer1.0 end, conv3 and the downsample summed into one 1x1 over both maps
(`onnx_conv_sums`) + ReLU, at 56: 45,064 -> 31,894 cycles in the model.
Numerics against onnxruntime."""

from __future__ import annotations

import numpy as np

import npu
from npu import ir as nir
from npu.frontend.compile import import_linalg, linalg_to_ascend_text
from npu.ir import make_context

from cnn_onnx import ort_run
from helpers import compile_program
from test_conv_sums import _block

C, HW, COUT = 32, 28, 128


def _ascend(model) -> str:
    linalg, ins, outs, locate = import_linalg(model, make_context(), "block.onnx")
    return linalg_to_ascend_text(linalg, ins, outs, locate, "block.onnx")


def _drains(module) -> list[str]:
    """The convert of every L0C -> UB move."""
    return [nir.str_attr(d, "convert") for d in nir.ops_named(module.operation, "cce.copy_l0c_to_ub")]


def test_summed_conv_applies_its_relu_on_the_move():
    """The summed 1x1 (64 -> 128 here) drains with the move's ReLU and no
    vector op of its own; the 3x3 before it (not a 1x1) keeps its vmaxs.
    With cube-bias=never every drain converts without the ReLU."""
    text = _ascend(_block(C, HW, COUT))
    module = compile_program(text, "npu-lower{cores=1 emit=cce}")
    never = compile_program(text, "npu-lower{cores=1 emit=cce conv-cube-bias=never}")
    assert "f32_to_f16_relu" in _drains(module)
    assert "f32_to_f16_relu" not in _drains(never)
    vmaxs = [len(nir.ops_named(m.operation, "cce.vmaxs")) for m in (module, never)]
    assert vmaxs[0] < vmaxs[1]
    assert not [op for op in nir.ops_named(module.operation, "cce.vadd")
                if nir.int_attr(op, "src1_rep_stride") == 0]  # no bias pattern added on V


def test_summed_conv_with_the_relu_on_the_move_is_faster_and_matches_onnxruntime():
    model = _block(C, HW, COUT)
    x = np.random.default_rng(4).standard_normal((1, C, HW, HW)).astype(np.float16)
    want = ort_run(model, {"x": x})[0]
    (got,), report = npu.compile(model, cores=1)(x, strict=True)
    _, never = npu.compile(model, cores=1, pipeline="npu-lower{cores=1 conv-cube-bias=never}")(
        x, numerics=False)
    assert report["hazards"] == []
    assert (want == 0).mean() > 0.2  # the ReLU bites
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), atol=2e-2, rtol=1e-2)
    assert report["cycles"] < never["cycles"]  # 21,029 against 22,203
