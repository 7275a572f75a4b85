"""A conv whose drains load a residual and store the result from the loaded
tile (ResNet's conv3: residual Add and ReLU written over the residual)
takes three sets of epilogue tiles in turn where UB has room, not two
(`epilogue_sets`): the load of super tile k then waits for the store of
k-3, not of k-2. Numerics against the reference interpreter
(npu.reference); the choice itself against the cost model's rule."""

from __future__ import annotations

import numpy as np

from npu import ir as nir
from npu.costmodel.conv.epilogue import SETS, THIRD_SET_SLOTS, EpilogueWork, epilogue_sets

from helpers import assert_close, compile_and_simulate, compile_program
from test_conv_estimate_epilogue import residual_conv, residual_inputs


def _residual_buffers(c1: int, co1: int, hw: int) -> tuple[int, int]:
    """(residual loads, distinct UB buffers they land in)."""
    text, _ = residual_conv(c1, co1, hw, 1)
    module = compile_program(text, "npu-lower{cores=1 prefetch=false}")
    residual = list(nir.functions(module)[0].regions[0].blocks[0].arguments)[3]
    roots = [nir.view_root(op.operands[1]) for op in nir.ops_named(module.operation, "cce.copy_gm_to_ub")
             if nir.view_root(op.operands[0]) == residual]
    return len(roots), len({str(r) for r in roots})


def test_residual_loads_go_round_three_sets():
    """128 -> 512 at 14x14, 1x1 (two bands, three super tiles of up to 11
    blocks each): six residual loads, into three buffers (two before)."""
    assert _residual_buffers(8, 32, 14) == (6, 3)


def test_three_sets_numerics():
    """64 -> 512 at 21x21: twelve residual loads (four bands of three super
    tiles), so the three sets go round four times; against the reference,
    no races."""
    assert _residual_buffers(4, 32, 21) == (12, 3)
    text, _ = residual_conv(4, 32, 21, 1)
    got, want, result = compile_and_simulate(text, "npu-lower{cores=1}", residual_inputs(4, 32, 21))
    assert_close(got[-1], want[-1], np.float16)
    assert not result.hazards


def test_third_set_only_with_room_and_a_result_on_the_loads():
    on = EpilogueWork(set_bytes=2, vector=0.1, loaded_bytes=2, loads=1, out_bytes=2, on_loaded=True)
    off = EpilogueWork(set_bytes=2, vector=0.1, loaded_bytes=2, loads=1, out_bytes=2)
    per_set, slot = 1000, 300
    fits = (SETS + 1) * per_set + THIRD_SET_SLOTS * slot
    assert epilogue_sets(on, True, fits, per_set, slot, 2) == SETS + 1
    assert epilogue_sets(on, True, fits - 1, per_set, slot, 2) == SETS
    assert epilogue_sets(off, True, fits, per_set, slot, 2) == SETS
    assert epilogue_sets(on, False, fits, per_set, slot, 2) == SETS
    assert epilogue_sets(on, True, fits, per_set, slot, 1) == SETS
