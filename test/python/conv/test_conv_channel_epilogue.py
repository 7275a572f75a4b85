"""Per-channel operands in a float conv's epilogue (`npu.conv_epilogue`):
an f16 conv followed by a per-channel mul and add (an unfolded BatchNorm)
and ReLU, in f16 (the drain rounding to f16) and in f32, and the other
binary kinds with a per-channel operand on either side (sub, div, max,
min) beside a residual loaded per tile. Hand-written ascend IR lowered
with `npu-lower` on one and two cores: one group, each per-channel operand
staged once (never loaded per tile), against the reference interpreter;
and an ONNX Conv + Mul + Add ([1, C, 1, 1] constants) + Relu against
onnxruntime."""

from __future__ import annotations

import re

import numpy as np
import pytest
from onnx import helper, numpy_helper

import npu
from conv_cases import ELEM, ort_run
from conv_groups import assert_one_conv_group, loads_of
from helpers import assert_close, compile_and_simulate, compile_program
from npu.passes.linalg_to_ascend.conv_layouts import fractal_z


def _t(shape, elem: str) -> str:
    return f'memref<{"x".join(map(str, shape))}x{elem}, "gm">'


# (member, per-channel operand on the left) of each chain after the conv
CHAINS = {
    "bn_relu_f16": ["cast", ("mul", False), ("add", False), "relu"],
    "bn_relu_f32": [("mul", False), ("add", False), "relu"],
    "kinds_f32": [("sub", True), ("div", False), "residual", ("max", False), ("min", True)],
    "kinds_f16": ["cast", ("sub", True), ("max", False), "residual", ("min", False)],
}


def conv_case(chain: str, n=1, c=32, cout=48, h=9, w=11, bias=True):
    """(program text, shapes) of an f16 3x3 conv (f32 result and bias) and
    the members of `CHAINS[chain]`; each per-channel operand is an argument
    [1, Cout1, 1, 1, 16] (%p0, %p1, ..), the residual %res."""
    c1, co1 = -(-c // 16), -(-cout // 16)
    out = [n, co1, h, w, 16]
    elem = "f16" if chain.endswith("f16") else "f32"
    args = [("x", _t([n, c1, h, w, 16], "f16")), ("w", _t([c1 * 9, co1, 16, 16], "f16"))]
    if bias:
        args.append(("b", _t([co1 * 16], "f32")))
    conv_args = ", ".join(f"%{a}" for a, _ in args)
    body = [f"%acc = memref.alloc() : {_t(out, 'f32')}",
            f'"ascend.conv2d"({conv_args}, %acc) {{dilations = array<i64: 1, 1>, groups = 1 : i64, '
            f'kernel = array<i64: 3, 3>, layout = "nc1hwc0", pads = array<i64: 1, 1, 1, 1>, '
            f"strides = array<i64: 1, 1>}} : ({', '.join(t for _, t in args)}, {_t(out, 'f32')}) -> ()"]
    full, chan = _t(out, elem), _t([1, co1, 1, 1, 16], elem)
    last, last_type = "%acc", _t(out, "f32")
    steps = CHAINS[chain]
    for k, step in enumerate(steps):
        dst = "%y" if k == len(steps) - 1 else f"%v{k}"
        if k < len(steps) - 1:
            body.append(f"{dst} = memref.alloc() : {full}")
        if step == "cast":
            body.append(f'"ascend.cast"({last}, {dst}) {{round_mode = "rint"}} : '
                        f"({last_type}, {full}) -> ()")
        elif step == "relu":
            body.append(f'"ascend.relu"({last}, {dst}) : ({full}, {full}) -> ()')
        elif step == "residual":
            args.append(("res", full))
            body.append(f'"ascend.add"({last}, %res, {dst}) : ({full}, {full}, {full}) -> ()')
        else:
            name, left = step
            p = f"p{sum(a.startswith('p') for a, _ in args)}"
            args.append((p, chan))
            ins = [(f"%{p}", chan), (last, full)] if left else [(last, full), (f"%{p}", chan)]
            body.append(f'"ascend.{name}"({ins[0][0]}, {ins[1][0]}, {dst}) : '
                        f"({ins[0][1]}, {ins[1][1]}, {full}) -> ()")
        last, last_type = dst, full
    args.append(("y", full))
    sig = ", ".join(f"%{a}: {t}" for a, t in args)
    text = f"func.func @f({sig}) {{\n  " + "\n  ".join(body) + "\n  return\n}\n"
    return text, dict(n=n, c=c, cout=cout, h=h, w=w, c1=c1, co1=co1, out=out, elem=elem,
                      args=[a for a, _ in args], members=len(steps))


def inputs(case: dict, seed: int) -> list[np.ndarray]:
    """x and fractal-Z weights (f16), an f32 bias; per-channel operands
    (divisors away from zero) and the residual in the members' type."""
    rng = np.random.default_rng(seed)
    n, c, c1, h, w = (case[k] for k in ("n", "c", "c1", "h", "w"))
    x = np.zeros([n, c1 * 16, h, w], np.float32)
    x[:, :c] = rng.standard_normal([n, c, h, w])
    x5 = np.ascontiguousarray(x.reshape(n, c1, 16, h, w).transpose(0, 1, 3, 4, 2))
    weight = rng.standard_normal([case["cout"], c, 3, 3]) / np.sqrt(9 * c)
    dtype = np.float16 if case["elem"] == "f16" else np.float32
    arrays = [x5.astype(np.float16), fractal_z(weight.astype(np.float16))]
    for name in case["args"][2:]:
        if name == "b":
            arrays.append((rng.standard_normal(case["co1"] * 16) * 0.2).astype(np.float32))
        elif name.startswith("p"):
            pc = rng.uniform(0.5, 1.5, [1, case["co1"], 1, 1, 16]) * rng.choice([-1, 1], 16)
            arrays.append(pc.astype(dtype))
        else:  # the residual, and the result (overwritten)
            arrays.append(rng.standard_normal(case["out"]).astype(dtype) * (name == "res"))
    return arrays


@pytest.mark.parametrize("cores", [1, 2])
@pytest.mark.parametrize("chain", CHAINS)
def test_per_channel_members_join_the_conv(chain: str, cores: int):
    check(chain, cores, cout=48 if cores == 1 else 64)


def test_per_channel_over_images():
    """Two images, no conv bias: the per-channel operands serve both (the
    group split over them on two cores)."""
    check("bn_relu_f32", 2, n=2, cout=32, bias=False)


def check(chain: str, cores: int, **shape) -> None:
    text, case = conv_case(chain, **shape)
    module = assert_one_conv_group(text, case["members"], cores)
    channel = [k for k, a in enumerate(case["args"]) if a.startswith("p")]
    for k in channel:  # one GM copy per conv (its pattern's rows are filled in UB)
        assert loads_of(module, text, k) == 1
    got, want, result = compile_and_simulate(text, f"npu-lower{{cores={cores}}}",
                                             inputs(case, seed=len(chain) + cores))
    assert_close(got[-1], want[-1], np.float16 if case["elem"] == "f16" else np.float32)
    assert not result.hazards
    assert result.report.get("block_dim", 1) == cores


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_unfolded_batchnorm_joins_the_conv(dtype):
    """The frontend's per-channel constants ([1, C1, 1, 1, 16], 40 channels:
    a part-filled last block) join the conv's drain: one group of the mul,
    the add and the ReLU (and in f16 the cast the drain does), faster than
    the same ops apart (f32 10,640 against 16,811 cycles, f16 9,573
    against 16,523 when written)."""
    rng = np.random.default_rng(0)
    c, cout, h = 24, 40, 9
    inits = [numpy_helper.from_array((rng.standard_normal((cout, c, 3, 3)) / 9).astype(dtype), "w"),
             numpy_helper.from_array(rng.uniform(0.5, 1.5, (1, cout, 1, 1)).astype(dtype), "s"),
             numpy_helper.from_array(rng.standard_normal((1, cout, 1, 1)).astype(dtype), "t")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1] * 4),
             helper.make_node("Mul", ["c", "s"], ["m"]), helper.make_node("Add", ["m", "t"], ["a"]),
             helper.make_node("Relu", ["a"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", ELEM[dtype], [1, c, h, h])],
                              [helper.make_tensor_value_info("y", ELEM[dtype], [1, cout, h, h])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    fused = npu.compile(m, pipeline="npu-canonicalize,npu-fuse").stages["lowered"]
    members = re.findall(r"npu.conv_epilogue = \{[^}]*members = (\d+)", fused)
    assert members == [str(3 + (dtype == np.float16))], members
    x = rng.standard_normal((1, c, h, h)).astype(dtype)
    (got,), report = npu.compile(m)(x)
    assert not report["hazards"]
    want = ort_run(m, {"x": x})[0]
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=3e-2, atol=3e-2)
    (apart,), apart_report = npu.compile(m, pipeline="npu-lower{fuse-epilogues=false}")(x)
    np.testing.assert_allclose(apart.astype(np.float32), want.astype(np.float32), rtol=3e-2, atol=3e-2)
    assert report["cycles"] < 0.8 * apart_report["cycles"]


def test_an_epilogue_too_long_for_ub_is_cut_where_the_conv_tiles():
    """Ten per-channel operands of 2048 channels (32 KB of UB each as f32
    patterns) cannot all sit beside the conv's tiles: npu-fuse cuts the group
    where a tiling still fits (`lower_conv.epilogue_tiles`), the rest runs
    as elementwise kernels, and the result is right (the whole chain in the
    group failed the lowering: no tiling fits)."""
    CHAINS["long_f32"] = [("mul", False), ("add", False)] * 5
    try:
        text, case = conv_case("long_f32", c=32, cout=2048, h=3, w=3)
    finally:
        del CHAINS["long_f32"]
    fused = str(compile_program(text, "npu-fuse").operation)
    (members,) = re.findall(r"npu.conv_epilogue = \{[^}]*members = (\d+)", fused)
    assert 0 < int(members) < case["members"]
    got, want, result = compile_and_simulate(text, "npu-lower{cores=1}", inputs(case, seed=3))
    assert_close(got[-1], want[-1], np.float32)
    assert not result.hazards
