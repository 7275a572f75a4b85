"""Matmul chains (`npu-fuse` chains, passes/fuse/chains.py) on the
simulator: the FFN pair x.W1 + bias -> relu -> f16 -> .W2 with the
intermediate kept in L1 gives the numpy result, writes it UB -> L1 and
never to GM, and the race detector finds no hazard; a pair whose consumer
cannot read it as a resident strip stays in GM (not chained, same
result). The refusals for L1 room are lit cases (fuse-chains.mlir)."""

from __future__ import annotations

import numpy as np
import pytest

from helpers import assert_outputs_close, compile_and_simulate, random_inputs
from matmul_patterns import ffn_pair

from npu.ir import walk


def run(m: int, n: int, f: int, chains: bool):
    """Simulated result (checked against numpy, no hazard) and the compiled module."""
    from helpers import compile_program

    from npu.ir import arg_attrs, constant_data, functions, memref_shape

    text = ffn_pair(m, n, f, "relu")
    ins = random_inputs(text, seed=3)
    module = compile_program(text, "")  # the bias argument's own data
    func = functions(module)[0]
    ins[2] = constant_data(arg_attrs(func, 2)["npu.constant"],
                           memref_shape(func.regions[0].blocks[0].arguments[2].type), "f32")
    pipeline = f"npu-lower{{cores=1 emit=cce fuse-chains={str(chains).lower()}}}"
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


def test_refused_pair_stays_in_gm_with_the_same_result():
    """16 x 64 x 128: the consumer's tiles (k=48 of 64) give no resident
    strip plan, so npu-fuse leaves the tensor in GM (lit: the remark)."""
    chained, chained_ir = run(16, 64, 128, True)
    plain, plain_ir = run(16, 64, 128, False)
    assert count(chained_ir, "cce.copy_ub_to_l1") == 0
    assert chained.cycles == plain.cycles
    np.testing.assert_array_equal(chained.outputs[-1], plain.outputs[-1])
