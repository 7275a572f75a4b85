"""`npu-lower-conv` on the int8 form of `ascend.conv2d` (layout "nc1hwc0"):
each band's f16 map (int8 values) interleaved into 32-channel pixels and
narrowed to int8 on its way GM -> UB -> L1, img2col on the i8 map with the
conv's pad_value, i8 x i8 -> i32 mads, the i32 bias on the drain and an
epilogue that starts with the cast i32 -> f32. Simulated (strict) and
exact against the reference (`npu.reference_conv.conv2d_int8_5hd`), on one
core and split over cores."""

from __future__ import annotations

import numpy as np
import pytest

from conv_groups import assert_one_conv_group, loads_of
from helpers import assert_close, compile_and_simulate, compile_program
from npu.passes.linalg_to_ascend.conv_layouts import fractal_z_int8


def _t(shape, elem: str) -> str:
    return f'memref<{"x".join(map(str, shape))}x{elem}, "gm">'


# 1.5 * 2^23: adding it rounds an f32 of magnitude below 2^22 to an integer
# (half to even), as the frontend's QuantizeLinear does (onnx_qdq_float.on_grid).
MAGIC = 1.5 * 2.0 ** 23


def epilogue_ops(out: list[int], kind: str, zero_point: int = 3, inv_scale: float = 0.08
                 ) -> tuple[list[tuple[str, str]], list[str]]:
    """(arguments, ops) of the conv's epilogue on %acc: "dequant" casts i32 ->
    f32, multiplies by the per-output-channel scale %s and adds the
    per-channel bias %r ([1, Cout1, 1, 1, 16]), then ReLU, into %y (f32);
    "requant" then quantises for the next layer: * 1 / s_y, clamp to the
    int8 range less the zero point, rounding by + / - 1.5 * 2^23 (the
    second constant adds the zero point), cast to f16 toward zero into %y."""
    i32, f32 = _t(out, "i32"), _t(out, "f32")
    chan = _t([1, out[1], 1, 1, 16], "f32")
    ops = [f"%a = memref.alloc() : {f32}",
           f'"ascend.cast"(%acc, %a) {{round_mode = "rint"}} : ({i32}, {f32}) -> ()',
           f"%m = memref.alloc() : {f32}",
           f'"ascend.mul"(%a, %s, %m) : ({f32}, {chan}, {f32}) -> ()',
           f"%p = memref.alloc() : {f32}",
           f'"ascend.add"(%m, %r, %p) : ({f32}, {chan}, {f32}) -> ()']
    if kind == "dequant":
        ops.append(f'"ascend.maxs"(%p, %y) {{scalar = 0.000000e+00 : f64}} : ({f32}, {f32}) -> ()')
        return [("s", chan), ("r", chan), ("y", f32)], ops
    steps = [("maxs", 0.0), ("muls", inv_scale), ("maxs", -128.0 - zero_point),
             ("mins", 127.0 - zero_point), ("adds", MAGIC), ("adds", -(MAGIC - zero_point))]
    last = "%p"
    for k, (name, value) in enumerate(steps):
        ops += [f"%q{k} = memref.alloc() : {f32}",
                f'"ascend.{name}"({last}, %q{k}) {{scalar = {value!r} : f64}} : ({f32}, {f32}) -> ()']
        last = f"%q{k}"
    f16 = _t(out, "f16")
    ops.append(f'"ascend.cast"({last}, %y) {{round_mode = "trunc"}} : ({f32}, {f16}) -> ()')
    return [("s", chan), ("r", chan), ("y", f16)], ops


def conv_case(n=1, c=16, h=9, w=9, cout=32, k=3, stride=1, pads=(1, 1, 1, 1), pad_value=0,
              bias=True, epilogue: str | None = None):
    """(program text, argument shapes and types) of one int8 conv (and its
    `epilogue_ops` of that kind)."""
    c1, co1, c1_32 = -(-c // 16), -(-cout // 16), -(-c // 32)
    top, left, bottom, right = pads
    ho = (h + top + bottom - k) // stride + 1
    wo = (w + left + right - k) // stride + 1
    out = [n, co1, ho, wo, 16]
    args = [("x", _t([n, c1, h, w, 16], "f16")), ("w", _t([c1_32 * k * k, co1, 16, 32], "i8"))]
    if bias:
        args.append(("b", _t([co1 * 16], "i32")))
    extra = f"pad_value = {pad_value} : i64, " if pad_value else ""
    conv_out = "%acc" if epilogue else "%y"
    types = ", ".join(t for _, t in args) + ", " + _t(out, "i32")
    body = []
    if epilogue:
        epilogue_args, epilogue_body = epilogue_ops(out, epilogue)
        args += epilogue_args
        body.append(f"%acc = memref.alloc() : {_t(out, 'i32')}")
    else:
        args.append(("y", _t(out, "i32")))
    operands = ", ".join(f"%{name}" for name, _ in args[:2 + bias]) + f", {conv_out}"
    body.append(f'"ascend.conv2d"({operands}) {{dilations = array<i64: 1, 1>, groups = 1 : i64, '
                f'kernel = array<i64: {k}, {k}>, layout = "nc1hwc0", {extra}'
                f"pads = array<i64: {top}, {left}, {bottom}, {right}>, "
                f"strides = array<i64: {stride}, {stride}>}} : ({types}) -> ()")
    if epilogue:
        body += epilogue_body
    sig = ", ".join(f"%{name}: {t}" for name, t in args)
    text = f"func.func @f({sig}) {{\n  " + "\n  ".join(body) + "\n  return\n}\n"
    return text, dict(n=n, c=c, c1=c1, h=h, w=w, cout=cout, co1=co1, k=k, out=out)


def conv_inputs(case: dict, seed: int = 0, epilogue: str | None = None, bias: bool = True,
                fractions: bool = False) -> list[np.ndarray]:
    """int8 values in f16 (the padded channels zero; with `fractions`, off the
    grid and out of range too: narrowed toward zero, saturating), random i8
    weights in fractal-Z, an i32 bias; the epilogue's per-output-channel
    scale and bias ([1, Cout1, 1, 1, 16])."""
    rng = np.random.default_rng(seed)
    n, c, c1, h, w, k, cout = (case[a] for a in ("n", "c", "c1", "h", "w", "k", "cout"))
    x = np.zeros([n, c1 * 16, h, w], np.float32)
    x[:, :c] = rng.integers(-128, 128, [n, c, h, w])
    if fractions:
        x[:, :c] += rng.uniform(-0.99, 0.99, [n, c, h, w]) * (np.abs(x[:, :c]) < 120)
        x[:, :c][rng.random([n, c, h, w]) < 0.05] = 300.0
        x[:, :c][rng.random([n, c, h, w]) < 0.05] = -1000.0
    x5 = np.ascontiguousarray(x.reshape(n, c1, 16, h, w).transpose(0, 1, 3, 4, 2)).astype(np.float16)
    weight = rng.integers(-128, 128, [cout, c, k, k]).astype(np.int8)
    arrays = [x5, fractal_z_int8(weight)]
    if bias:
        arrays.append(rng.integers(-(1 << 20), 1 << 20, [case["co1"] * 16]).astype(np.int32))
    if epilogue:
        chan = [1, case["co1"], 1, 1, 16]
        arrays += [rng.uniform(1e-4, 2e-3, chan).astype(np.float32),
                   rng.uniform(-1.0, 0.5, chan).astype(np.float32),
                   np.zeros(case["out"], np.float32 if epilogue == "dequant" else np.float16)]
    else:
        arrays.append(np.full(case["out"], -7, np.int32))  # overwritten, not accumulated into
    return arrays


CASES = {
    "c16_3x3_s1": dict(c=16, cout=32, h=9, w=9),
    "c32_3x3_s2": dict(c=32, cout=16, h=11, w=10, stride=2),
    "c48_odd_c1_3x3_s1_pad_value": dict(c=48, cout=48, h=8, w=9, pad_value=-5),
    "c64_3x3_s2_pad_value": dict(c=64, cout=32, h=12, w=13, stride=2, pad_value=100),
    "c64_1x1_s2": dict(c=64, cout=64, h=14, w=14, k=1, stride=2, pads=(0, 0, 0, 0)),
    "c16_asym_pads_no_bias_batch2": dict(n=2, c=16, cout=16, h=6, w=7, pads=(0, 1, 2, 0),
                                         pad_value=-128, bias=False),
}


def lower(cores: int) -> str:
    return f"npu-lower{{cores={cores}}}"


# Convs large enough that npu-split-cores's conv rule splits them: over
# output channel blocks, or (c48_rows) over runs of output rows (first,
# inner and last plans; each core stages its own rows' map).
MULTICORE = {
    "c64_3x3_s1_channels": dict(c=64, cout=64, h=16, w=16, pad_value=-3),
    "c48_3x3_s2_channels": dict(c=48, cout=64, h=24, w=24, stride=2, pad_value=9),
    "c48_rows": dict(c=48, cout=48, h=24, w=20, pad_value=-77),
}


def run_exact(spec: dict, cores: int, seed: int):
    text, case = conv_case(**spec)
    args = conv_inputs(case, seed=seed, bias=spec.get("bias", True))
    got, want, result = compile_and_simulate(text, lower(cores), args)
    assert want[-1].dtype == np.int32
    np.testing.assert_array_equal(got[-1], want[-1])
    assert not result.hazards
    return result


@pytest.mark.parametrize("name", CASES)
def test_int8_conv_exact(name: str):
    """Exact i32 results (Ho*Wo of 81, 30, 72, 42, 49 and 36: rarely whole
    fractals)."""
    run_exact(CASES[name], 1, len(name))


@pytest.mark.parametrize("cores", [2, 4])
@pytest.mark.parametrize("name", MULTICORE)
def test_int8_conv_exact_over_cores(name: str, cores: int):
    result = run_exact(MULTICORE[name], cores, len(name))
    assert result.report["block_dim"] > 1


def test_int8_conv_narrows_toward_zero_with_saturation():
    """Inputs off the int8 grid and beyond it: truncated and saturated as the
    contract says (the vconv f16 -> s8 rounds toward zero)."""
    text, case = conv_case(c=48, cout=16, h=8, w=8, pad_value=7)
    args = conv_inputs(case, seed=3, fractions=True)
    got, want, _ = compile_and_simulate(text, lower(1), args)
    np.testing.assert_array_equal(got[-1], want[-1])


@pytest.mark.parametrize("cores", [1, 2])
def test_int8_conv_with_dequantising_epilogue(cores: int):
    """cast i32 -> f32, * per-output-channel scale, + per-channel bias
    ([1, Cout1, 1, 1, 16]), relu: one conv group (no i32 or f32
    intermediate reaches GM; each per-channel operand staged once as a
    pattern, never loaded per tile), within f32 rounding of the reference;
    on 2 cores the group splits over channel blocks."""
    spec = dict(c=32, cout=32, h=10, w=10) if cores == 1 else dict(c=32, cout=64, h=20, w=20)
    text, case = conv_case(**spec, pad_value=3, epilogue="dequant")
    args = conv_inputs(case, seed=5, epilogue="dequant")
    module = assert_one_conv_group(text, 4, cores)
    # each per-channel operand: one pattern of 4 rows of f32 (one GM copy, its
    # rows filled in UB), no tile loads
    assert loads_of(module, text, -3) == loads_of(module, text, -2) == 1
    got, want, result = compile_and_simulate(text, lower(cores), args)
    assert_close(got[-1], want[-1], np.float32)
    assert (want[-1] > 0).any() and (want[-1] == 0).any()
    assert not result.hazards
    assert result.report.get("block_dim", 1) == cores


@pytest.mark.parametrize("cores", [1, 2])
def test_int8_conv_with_requantising_epilogue(cores: int):
    """The dequantising epilogue, then the next layer's quantisation (* 1 /
    s_y, clamp, rounding by +/- 1.5 * 2^23 with the zero point, cast to
    f16 toward zero): ten members in one group, and the int8 values
    exactly the reference's (every step an f32 operation both compute
    alike)."""
    spec = dict(c=48, cout=48, h=9, w=11) if cores == 1 else dict(c=32, cout=64, h=20, w=20)
    text, case = conv_case(**spec, pad_value=-2, epilogue="requant")
    args = conv_inputs(case, seed=7, epilogue="requant")
    assert_one_conv_group(text, 10, cores)
    got, want, result = compile_and_simulate(text, lower(cores), args)
    assert want[-1].dtype == np.float16
    np.testing.assert_array_equal(got[-1], want[-1])
    values = want[-1]
    assert values.min() == 3 and values.max() == 127 and len(np.unique(values)) > 50
    assert not result.hazards
    assert result.report.get("block_dim", 1) == cores


def test_int8_conv_is_faster_than_f16_by_its_cube_rate():
    """C = Cout = 128, 28x28, 3x3 (one core): cube-bound, the int8 conv's
    cube work is half the f16 one's (36 x 49 x 8 int8 block products at
    twice the rate against 72 x 49 x 8 f16 ones: 14,112 against 28,224
    cycles). Measured 21,945 against 34,715 cycles (0.63): the output's
    stores (the same 401 KB of i32 as of f32), the first band's map and the
    staging (the f16 map's GM bytes twice the int8 map's) do not halve."""
    from npu.simulator import simulate
    from npu.target import get_target

    target = get_target()
    text, case = conv_case(c=128, cout=128, h=28, w=28)
    args = conv_inputs(case)
    f16_text = text.replace("36x8x16x32xi8", "72x8x16x16xf16").replace("xi32", "xf32")
    rng = np.random.default_rng(1)
    f16_args = [args[0], rng.integers(-2, 3, [72, 8, 16, 16]).astype(np.float16),
                args[2].astype(np.float32), np.zeros(case["out"], np.float32)]
    cycles = {}
    for name, program, inputs in (("int8", text, args), ("f16", f16_text, f16_args)):
        result = simulate(compile_program(program, lower(1)), inputs, target=target)
        cycles[name] = result.cycles
    cube = {"int8": target.cube_cycles_int8(36 * 49 * 8), "f16": target.cube_cycles(72 * 49 * 8)}
    print(f"int8 {cycles['int8']} cycles (cube {cube['int8']}), f16 {cycles['f16']} "
          f"(cube {cube['f16']}): {cycles['int8'] / cycles['f16']:.3f}")
    assert cube["int8"] * 2 == cube["f16"]
    assert cycles["int8"] <= 0.7 * cycles["f16"]


def test_int8_conv_dequantising_epilogue_cycles():
    """C = Cout = 64, 20x20, 3x3 (one core): the dequantising epilogue on
    the drain (4 f32 passes over each tile, per-channel operands staged
    once) hides behind the cube: about the bare conv's cycles (its result
    the same bytes, f32 for i32), where the same ops apart (each a pass
    over GM) take 3.6 times as long. Measured 7,546 (bare) / 7,525 (fused)
    / 26,876 (apart) cycles when written; at C = Cout = 128, 28x28 (M-bound
    bare): 21,945 / 31,864 / 76,533, and the requantising chain 47,924
    fused (V-bound: ten f32 passes over each tile)."""
    from npu.simulator import simulate
    from npu.target import get_target

    target = get_target()
    spec = dict(c=64, cout=64, h=20, w=20)
    cycles = {}
    for name, epilogue, options in (("bare", None, ""), ("fused", "dequant", ""),
                                    ("apart", "dequant", " fuse-epilogues=false")):
        text, case = conv_case(**spec, epilogue=epilogue)
        module = compile_program(text, f"npu-lower{{cores=1{options}}}")
        cycles[name] = simulate(module, conv_inputs(case, epilogue=epilogue), target=target).cycles
    print(cycles)
    assert cycles["fused"] < 1.1 * cycles["bare"] and cycles["fused"] < 0.4 * cycles["apart"]
