"""Matmul chains (`npu-fuse` chains, passes/fuse/chains.py) on the
simulator: the FFN pair x.W1 + bias -> relu -> f16 -> .W2 with the
intermediate kept in L1 gives the numpy result, writes it UB -> L1 and
never to GM, and the race detector finds no hazard; a result too large
for L1 beside the producer stays in GM (not chained, same numerics)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import assert_outputs_close, compile_and_simulate, random_inputs
from patterns import _nz_constant

from npu.ir import walk


def ffn_pair(m: int, n: int, f: int) -> str:
    """m x n . n x f + bias row (a host constant: the epilogue's broadcast),
    relu, f16 cast, . f x n; Nz operands."""
    b = 16
    M1, N1, F1 = m // b, n // b, f // b

    def t(*shape, elem="f16"):
        return f'memref<{"x".join(map(str, shape))}x16x16x{elem}, "gm">'
    return f"""
func.func @ffn(%x: {t(N1, M1)}, %w1: {t(F1, N1)}, %bias: {t(F1, M1, elem="f32")} {{{_nz_constant(m, f, "f32", True)}}}, %w2: {t(N1, F1)}, %y: {t(N1, M1, elem="f32")}) {{
  %c = memref.alloc() : {t(F1, M1, elem="f32")}
  "ascend.matmul"(%x, %w1, %c) : ({t(N1, M1)}, {t(F1, N1)}, {t(F1, M1, elem="f32")}) -> ()
  %h = memref.alloc() : {t(F1, M1, elem="f32")}
  "ascend.add"(%c, %bias, %h) : ({t(F1, M1, elem="f32")}, {t(F1, M1, elem="f32")}, {t(F1, M1, elem="f32")}) -> ()
  %g = memref.alloc() : {t(F1, M1, elem="f32")}
  "ascend.relu"(%h, %g) : ({t(F1, M1, elem="f32")}, {t(F1, M1, elem="f32")}) -> ()
  %a2 = memref.alloc() : {t(F1, M1)}
  "ascend.cast"(%g, %a2) {{round_mode = "rint"}} : ({t(F1, M1, elem="f32")}, {t(F1, M1)}) -> ()
  "ascend.matmul"(%a2, %w2, %y) : ({t(F1, M1)}, {t(N1, F1)}, {t(N1, M1, elem="f32")}) -> ()
  return
}}
"""


def run(m: int, n: int, f: int, chains: bool):
    """Simulated result (checked against numpy, no hazard) and the compiled module."""
    from helpers import compile_program

    from npu.ir import arg_attrs, constant_data, functions, memref_element, memref_shape

    text = ffn_pair(m, n, f)
    ins = random_inputs(text, seed=3)
    module = compile_program(text, "")  # the bias argument's own data
    func = functions(module)[0]
    ins[2] = constant_data(arg_attrs(func, 2)["npu.constant"],
                           memref_shape(func.regions[0].blocks[0].arguments[2].type), "f32")
    pipeline = f"npu-lower{{emit=cce fuse-chains={str(chains).lower()}}}"
    got, want, res = compile_and_simulate(text, pipeline, ins)
    assert res.hazards == []
    assert_outputs_close(got[-1:], want[-1:])
    return res, compile_program(text, pipeline)


def count(module, name: str) -> int:
    return sum(1 for op in walk(module.operation) if op.name == name)


@pytest.mark.parametrize("m,n,f", [(128, 64, 192), (48, 96, 160)])
def test_chained_pair_matches_numpy_without_the_round_trip(m, n, f):
    chained, chained_ir = run(m, n, f, True)
    plain, plain_ir = run(m, n, f, False)
    # The intermediate leaves UB for L1 only, and A of the second matmul is
    # not copied from GM: one GM -> L1 copy fewer per loop, no GM store of it.
    assert count(chained_ir, "cce.copy_ub_to_l1") > 0
    assert count(plain_ir, "cce.copy_ub_to_l1") == 0
    assert count(chained_ir, "cce.copy_ub_to_gm") < count(plain_ir, "cce.copy_ub_to_gm")
    assert count(chained_ir, "cce.copy_gm_to_l1") < count(plain_ir, "cce.copy_gm_to_l1")
    assert chained.cycles < plain.cycles
