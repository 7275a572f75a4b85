"""A conv whose drains load a residual: the next band's map goes out on MTE2
during the band before it, after that band's first super tile, not behind
all of its drains' residual loads (`StraightBands.flush`, `issue_map`); and
the bias pattern is one GM copy whose rows are filled in UB
(`channel_pattern`). Against the reference interpreter (npu.reference)."""

from __future__ import annotations

import numpy as np

from npu import ir as nir

from helpers import assert_close, compile_and_simulate, compile_program
from test_conv_estimate_epilogue import residual_conv, residual_inputs

# 128 -> 512 channels at 14 x 14, 1x1: two bands of 8 and 6 rows, two super
# tiles of 16 Cout blocks, weights resident (the estimate's tiling)
C1, CO1, HW = 8, 32, 14


def test_residual_conv_of_two_bands_and_two_super_tiles():
    text, _ = residual_conv(C1, CO1, HW, 1)
    got, want, result = compile_and_simulate(text, "npu-lower{cores=1}", residual_inputs(C1, CO1, HW))
    assert_close(got[-1], want[-1], np.float16)
    assert not result.hazards


def _gm_reads(module) -> list[str]:
    """'x' (a map copy), 'r' (a residual load), 'b' (the bias) in program order."""
    args = list(nir.functions(module)[0].regions[0].blocks[0].arguments)
    names = {args[0]: "x", args[2]: "b", args[3]: "r"}
    reads = []
    for op in nir.ops_named(module.operation, "cce.copy_gm_to_l1", "cce.copy_gm_to_ub"):
        name = names.get(nir.view_root(op.operands[0]))
        if name is not None:
            reads.append(name)
    return reads


def _reads() -> str:
    text, _ = residual_conv(C1, CO1, HW, 1)
    return "".join(_gm_reads(compile_program(text, "npu-lower{cores=1 prefetch=false}")))


def test_bias_pattern_is_one_gm_copy():
    """Its 8 rows (one f16 repeat a Cout block) were 8 GM copies on MTE2."""
    reads = _reads()
    assert reads.count("b") == 1 and reads[0] == "b", reads


def test_next_band_map_between_the_residual_loads():
    """Band 2's map copies after band 1's first residual load and before
    its second (they were behind both)."""
    reads = _reads()
    first_r = reads.index("r")
    assert "x" in reads[first_r:reads.index("r", first_r + 1)], reads
