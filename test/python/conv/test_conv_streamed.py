"""Convs whose weights do not fit L1 stream them per super tile of Cout
blocks (ResNet-50's layer4). Each run of loads ends in a flag that holds
MTE2 for the GM latency, so an epilogue's operand loads join the super
tile's weight run instead of paying the latency per drain, the streamed
weights alternate between two L1 buffers, and the tiling model counts
both and the epilogue's work. Checked against the numpy reference and
against the program's own bound."""

from __future__ import annotations

import numpy as np

from helpers import assert_close, compile_and_simulate

F16 = "f16"


def _t(shape: list[int], elem: str = F16) -> str:
    return f'memref<{"x".join(map(str, shape))}x{elem}, "gm">'


def conv_then(x: str, w: str, b: str, out: str, c1: int, co1: int, hw: int,
              residual: str | None = None) -> list[str]:
    """A 1x1 conv (f32 result) -> cast to f16 (-> + residual) -> ReLU into %out."""
    y32, y = _t([1, co1, hw, hw, 16], "f32"), _t([1, co1, hw, hw, 16])
    lines = [f"%{out}_acc = memref.alloc() : {y32}",
             f'"ascend.conv2d"(%{x}, %{w}, %{b}, %{out}_acc) {{dilations = array<i64: 1, 1>, '
             f'groups = 1 : i64, kernel = array<i64: 1, 1>, layout = "nc1hwc0", '
             f"pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}} : "
             f"({_t([1, c1, hw, hw, 16])}, {_t([c1, co1, 16, 16])}, {_t([co1 * 16], 'f32')}, "
             f"{y32}) -> ()",
             f"%{out}_h = memref.alloc() : {y}",
             f'"ascend.cast"(%{out}_acc, %{out}_h) {{round_mode = "rint"}} : ({y32}, {y}) -> ()']
    last = f"{out}_h"
    if residual is not None:
        lines += [f"%{out}_s = memref.alloc() : {y}",
                  f'"ascend.add"(%{out}_h, %{residual}, %{out}_s) : ({y}, {y}, {y}) -> ()']
        last = f"{out}_s"
    lines.append(f'"ascend.maxs"(%{last}, %{out}) {{scalar = 0.000000e+00 : f64}} : '
                 f"({y}, {y}) -> ()")
    return lines


def program(args: list[tuple[str, str]], body: list[str]) -> str:
    sig = ", ".join(f"%{name}: {t}" for name, t in args)
    return f"func.func @f({sig}) {{\n  " + "\n  ".join(body) + "\n  return\n}\n"


def inputs(args: list[tuple[str, str]], rng) -> list[np.ndarray]:
    out = []
    for name, t in args:
        dims = [int(d) for d in t.split("<")[1].split("x")[:-1]]
        dtype = np.float32 if "xf32" in t else np.float16
        scale = 1.0 if name.startswith(("x", "r", "b")) else 1.0 / np.sqrt(dims[0] * 16)
        out.append((rng.standard_normal(dims) * scale).astype(dtype) if name != "y"
                   else np.zeros(dims, dtype))
    return out


def test_streamed_conv_with_a_residual_epilogue_near_its_bound():
    """ResNet-50's layer4 conv3 (1x1, 512 -> 2048 on 7x7, 2 MB of weights)
    with the residual Add and ReLU on its drain: 107,609 cycles (2.9x its
    own MTE2 bound) when each drain loaded its residual tile on its own."""
    c1, co1, hw = 32, 128, 7
    args = [("x", _t([1, c1, hw, hw, 16])), ("w", _t([c1, co1, 16, 16])),
            ("b", _t([co1 * 16], "f32")), ("r", _t([1, co1, hw, hw, 16])),
            ("y", _t([1, co1, hw, hw, 16]))]
    text = program(args, conv_then("x", "w", "b", "y", c1, co1, hw, residual="r"))
    got, want, result = compile_and_simulate(text, "npu-lower{cores=1}",
                                             inputs(args, np.random.default_rng(0)))
    assert_close(got[-1], want[-1], np.float16)
    assert not result.hazards
    assert result.cycles < 1.3 * result.report["bound_cycles"], \
        (result.cycles, result.report["bound_cycles"])


def test_two_streamed_convs_in_a_row_overlap_their_weight_loads():
    """Two 1x1 1024 -> 1024 convs (2 MB of weights each) one after the
    other: their super tiles' weights alternate between two L1 buffers, so
    a super tile's weights load while the previous one's feed the cube
    (89,443 cycles, 1.29x the MTE2 bound, when they could share one)."""
    c1, hw = 64, 7
    act = _t([1, c1, hw, hw, 16])
    args = [("x", act), ("w1", _t([c1, c1, 16, 16])), ("b1", _t([c1 * 16], "f32")),
            ("w2", _t([c1, c1, 16, 16])), ("b2", _t([c1 * 16], "f32")), ("y", act)]
    body = [f"%h = memref.alloc() : {act}"] + conv_then("x", "w1", "b1", "h", c1, c1, hw) \
        + conv_then("h", "w2", "b2", "y", c1, c1, hw)
    got, want, result = compile_and_simulate(program(args, body), "npu-lower{cores=1}",
                                             inputs(args, np.random.default_rng(1)))
    assert_close(got[-1], want[-1], np.float16)
    assert not result.hazards
    assert result.cycles < 1.2 * result.report["bound_cycles"], \
        (result.cycles, result.report["bound_cycles"])
