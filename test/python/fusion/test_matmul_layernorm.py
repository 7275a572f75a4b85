"""A matmul (bias and row-major store in its drain) followed by a residual
add and layernorm over its rows (`matmul_patterns.matmul_layernorm`, the pair
`bench/fusion.py` measures): npu-fuse makes the epilogue and one row
kernel, and both lowerings match the reference and the unfused program on
the simulator, f16 and f32, with and without the residual, the bias and
the Nz copy of the result (the next matmul's A)."""

from __future__ import annotations

import pytest

from matmul_patterns import matmul_layernorm
from test_fused_kernels import groups, inputs_for
from test_matmul_epilogue import epilogues, fused_and_unfused


@pytest.mark.parametrize("m, n, k, elem, residual, bias, nz", [
    (96, 64, 80, "f32", True, True, False),
    (64, 48, 112, "f32", False, True, True),
    (48, 32, 64, "f16", True, False, False),
    (80, 64, 48, "f16", False, True, True),
])
def test_matmul_then_layernorm(m, n, k, elem, residual, bias, nz):
    text = matmul_layernorm(m, n, k, elem, residual=residual, bias=bias, nz_out=nz)
    (epilogue,) = epilogues(text)
    assert epilogue["members"] == ["ascend.add"] * bias + ["ascend.defractalize"]
    (group,) = groups(text)
    assert group["rows"] == m and group["row_length"] == k
    ins = inputs_for(text)
    # A and B at a quarter scale: the f16 layernorm's sum of squares stays
    # far below f16's range (at full scale the reference overflows).
    ins[0], ins[1] = ins[0] / 4, ins[1] / 4
    fused, unfused = fused_and_unfused(text, "", ins)
    assert fused.cycles < unfused.cycles
