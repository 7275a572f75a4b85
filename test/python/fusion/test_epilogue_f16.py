"""Matmul epilogues computed in f16 (`npu-fuse` epilogue-f16, README
"Precision") on the simulator: the GELU epilogue of an identity matmul
over every finite f16 input gives exactly the f16 recipe
(`recipes.gelu_erf_recipe_f16`, `gelu_tanh_recipe_f16`) as `vector_numerics.run_steps`
computes it, at the cce and the hivm level; the L0C -> UB move's f32 -> f16
conversion (drain-convert) gives the same bits as the vconv it replaces;
with epilogue-f16=false the chain stays in f32 (one rounding at the end)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from helpers import compile_program, simulate_levels
from matmul_patterns import matmul_epilogue

from npu.ir import walk
from npu.reference import defractalize, fractalize
from npu.simulator.vector_numerics import run_steps
from npu.costmodel.vector.recipes import gelu_erf_recipe_f16, gelu_tanh_recipe_f16

EDGE = 256  # C is EDGE x EDGE: every finite f16 value once, zeros after


def identity_inputs() -> tuple[np.ndarray, list[np.ndarray]]:
    """(x as an EDGE x EDGE f16 matrix, the kernel's inputs): A = x, B = I."""
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    finite = bits[np.isfinite(bits)]
    x = np.zeros(EDGE * EDGE, np.float16)
    x[:finite.size] = finite
    x = x.reshape(EDGE, EDGE)
    f = 16
    a = fractalize(x, (EDGE // f, EDGE // f, f, f))
    b = fractalize(np.eye(EDGE, dtype=np.float16), (EDGE // f, EDGE // f, f, f))
    y = np.zeros((EDGE // f, EDGE // f, f, f), np.float16)
    return x, [a, b, y]


def run(pipeline: str, gelu: str = "gelu"):
    text = matmul_epilogue(EDGE, EDGE, EDGE, (gelu, "cast"), "f16")
    module = compile_program(text, pipeline)
    x, ins = identity_inputs()
    res = simulate_levels(module, ins, force_hivm=True)
    assert res.hazards == []
    return x, defractalize(res.outputs[2], EDGE, EDGE), module, res


@pytest.mark.parametrize("gelu", ["gelu", "gelu_tanh"])
def test_gelu_epilogue_in_f16_is_the_recipe_bit_for_bit(gelu: str):
    x, y, module, _ = run("npu-lower{cores=1 emit=cce}", gelu)
    c = x + np.float16(0)  # what C = x . I holds: -0 + 0 is +0
    recipe = (gelu_erf_recipe_f16(1 / math.sqrt(2)) if gelu == "gelu"
              else gelu_tanh_recipe_f16(0.044715, 0.7978845608028654))
    with np.errstate(all="ignore"):
        want = run_steps(recipe, c)
    assert y.view(np.uint16).tolist() == want.view(np.uint16).tolist()
    # In f16 from the drain on: the accumulator is rounded by its move
    # (drain-convert), no vconv is left.
    moves = [op for op in walk(module.operation) if op.name == "cce.copy_l0c_to_ub"]
    assert moves and all(str(op.attributes["convert"]) == '"f32_to_f16"' for op in moves)
    assert not any(op.name == "cce.vconv" for op in walk(module.operation))


def test_drain_conversion_gives_the_same_bits_with_less_vector_work():
    x, y, _, plain = run("npu-lower{cores=1 emit=cce matmul-drain-convert=false}")
    x2, y2, module, converted = run("npu-lower{cores=1 emit=cce}")
    assert y2.view(np.uint16).tolist() == y.view(np.uint16).tolist()
    names = [op.name for op in walk(module.operation)]
    assert "cce.vconv" not in names
    moves = [op for op in walk(module.operation) if op.name == "cce.copy_l0c_to_ub"]
    assert moves and all(str(op.attributes["convert"]) == '"f32_to_f16"' for op in moves)
    assert converted.instructions < plain.instructions


def test_epilogue_f16_off_rounds_once_at_the_end():
    """epilogue-f16=false: the f32 recipe, rounded once by the cast: within
    half an f16 ulp (plus the f32 recipe's 3e-7) of float64 GELU."""
    x, y, module, _ = run("npu-lower{cores=1 emit=cce fuse-epilogue-f16=false}")
    x64 = x.astype(np.float64)
    want = 0.5 * x64 * np.vectorize(math.erfc)(-x64 / math.sqrt(2))
    with np.errstate(over="ignore"):  # the spacing of 65504 is inf: no bound there
        ulp = np.maximum(np.spacing(np.abs(want).astype(np.float16)).astype(np.float64),
                         2.0 ** -24)
    err = np.abs(y.astype(np.float64) - want)
    assert (err <= 0.5 * ulp + 3e-7).all()
    assert any(op.name == "cce.vmadd" and "f32" in str(op.operands[0].type)
               for op in walk(module.operation))


def tanh_gelu_program() -> str:
    """A 32x32x32 matmul, GELU's tanh form op by op, the cast to f16."""
    c = 'memref<2x2x16x16xf32, "gm">'
    h = 'memref<2x2x16x16xf16, "gm">'
    lines = [f"func.func @k(%a: {h}, %b: {h}, %y: {h}) {{",
             f"  %c = memref.alloc() : {c}",
             f'  "ascend.matmul"(%a, %b, %c) : ({h}, {h}, {c}) -> ()']
    steps = [("mul", "%c, %c", ""), ("mul", "%c, %t1", ""),
             ("muls", "%t2", "0.044715"), ("add", "%c, %t3", ""),
             ("muls", "%t4", repr(math.sqrt(2 / math.pi))), ("tanh", "%t5", ""),
             ("adds", "%t6", "1.0"), ("muls", "%t7", "0.5"), ("mul", "%c, %t8", "")]
    for k, (name, ins, scalar) in enumerate(steps, 1):
        attr = f" {{scalar = {scalar} : f64}}" if scalar else ""
        n = ins.count("%") + 1
        lines += [f"  %t{k} = memref.alloc() : {c}",
                  f'  "ascend.{name}"({ins}, %t{k}){attr} : ({", ".join([c] * n)}) -> ()']
    lines += [f'  "ascend.cast"(%t9, %y) {{round_mode = "rint"}} : ({c}, {h}) -> ()',
              "  return", "}"]
    return "\n".join(lines) + "\n"


def test_tanh_gelu_in_an_f16_epilogue_runs_in_f16():
    """The tanh form in an f16 epilogue takes its f16 recipe
    (`gelu_tanh_recipe_f16`; it ran widened to f32 before there was one):
    exp on f16 lanes; the result matches the reference within f16
    tolerances."""
    from helpers import assert_outputs_close, compile_and_simulate

    from npu.costmodel.fusion.epilogue import EPILOGUE_ATTR
    from npu.ir import dict_attr_items

    text = tanh_gelu_program()
    fused = compile_program(text, "npu-fuse")
    (group,) = [dict_attr_items(op.attributes[EPILOGUE_ATTR]) for op in walk(fused.operation)
                if EPILOGUE_ATTR in op.attributes]
    assert group["compute"] == "f16"
    rng = np.random.default_rng(3)
    ins = [rng.standard_normal((2, 2, 16, 16)).astype(np.float16) for _ in range(2)]
    out, want, res = compile_and_simulate(text, "npu-lower{cores=1}", ins + [np.zeros_like(ins[0])])
    assert res.hazards == []
    assert_outputs_close(out, want)
    lowered = compile_program(text, "npu-lower{cores=1 emit=cce}")
    exps = [op for op in walk(lowered.operation) if op.name == "cce.vexp"]
    assert exps and all("f16" in str(op.operands[0].type) for op in exps)


def test_bias_in_f32_is_rounded_once_before_the_f16_gelu():
    """epilogue-bias-f32: the bias add runs in f32 on the drained accumulator,
    so the f16 GELU reads round(C + b), C + b summed in f32: over every finite
    f16 C (bias row: random f32 per column), the result is the f16 recipe of
    that one rounding, bit for bit, at the cce and the hivm level; by default
    (C rounded to f16 first, the sum rounded again) some results differ."""
    from npu.costmodel.fusion.epilogue import EPILOGUE_ATTR
    from npu.costmodel.fusion.precision import HEAD_ATTR
    from npu.ir import arg_attrs, constant_data, dict_attr_items, functions, memref_shape

    text = matmul_epilogue(EDGE, EDGE, EDGE, ("bias_row", "gelu", "cast"), "f16")
    x, (a, b, y) = identity_inputs()
    outputs = {}
    for on in (True, False):
        pipeline = f"npu-lower{{cores=1 emit=cce fuse-epilogue-bias-f32={str(on).lower()}}}"
        fused = compile_program(text, f"npu-fuse{{epilogue-bias-f32={str(on).lower()}}}")
        (group,) = [dict_attr_items(op.attributes[EPILOGUE_ATTR]) for op in walk(fused.operation)
                    if EPILOGUE_ATTR in op.attributes]
        assert group["compute"] == "f16" and (group.get(HEAD_ATTR) == "f32") == on
        module = compile_program(text, pipeline)
        func = functions(module)[0]
        bias_arg = func.regions[0].blocks[0].arguments[2]
        bias = constant_data(arg_attrs(func, 2)["npu.constant"], memref_shape(bias_arg.type), "f32")
        res = simulate_levels(module, [a, b, bias, y], force_hivm=True)
        assert res.hazards == []
        outputs[on] = defractalize(res.outputs[3], EDGE, EDGE)
        adds = [op for op in walk(module.operation) if op.name == "cce.vadd"]
        assert adds and all(("f32" if on else "f16") in str(op.operands[0].type) for op in adds)
    row = defractalize(bias, EDGE, EDGE)[0].astype(np.float32)
    assert (defractalize(bias, EDGE, EDGE) == row).all()
    once = (x.astype(np.float32) + row[None, :]).astype(np.float16)
    want = run_steps(gelu_erf_recipe_f16(1 / math.sqrt(2)), once)
    assert outputs[True].view(np.uint16).tolist() == want.view(np.uint16).tolist()
    assert (outputs[False].view(np.uint16) != want.view(np.uint16)).sum() > 100


def test_bias_and_cast_with_the_f32_head_are_the_f32_epilogue_bit_for_bit():
    """A bias add and the cast to f16 (the Q/K/V projections): with
    epilogue-bias-f32 the cast is the rounding of the f32 sum, so the bits
    are those of the epilogue kept in f32 (epilogue-f16=false)."""
    from npu.ir import arg_attrs, constant_data, functions, memref_shape

    text = matmul_epilogue(64, 96, 80, ("bias_row", "cast"), "f16")
    rng = np.random.default_rng(5)
    outs = []
    for options in ("fuse-epilogue-bias-f32=true", "fuse-epilogue-f16=false"):
        module = compile_program(text, f"npu-lower{{cores=1 emit=cce {options}}}")
        func = functions(module)[0]
        a, b, bias, y = [memref_shape(v.type) for v in func.regions[0].blocks[0].arguments]
        if not outs:
            ins = [rng.standard_normal(s).astype(np.float16) for s in (a, b)]
            ins += [constant_data(arg_attrs(func, 2)["npu.constant"], bias, "f32"),
                    np.zeros(y, np.float16)]
        adds = [op for op in walk(module.operation) if op.name == "cce.vadd"]
        assert adds and all("f32" in str(op.operands[0].type) for op in adds)
        res = simulate_levels(module, ins)
        assert res.hazards == []
        outs.append(res.outputs[3])
    assert outs[0].view(np.uint16).tolist() == outs[1].view(np.uint16).tolist()
