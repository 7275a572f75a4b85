"""Checks of a conv epilogue group (`npu.conv_epilogue`) on hand-written
ascend IR: the group `npu-fuse` forms, and what the lowered program loads
and stores."""

from __future__ import annotations

import re

from npu import ir as nir

from helpers import compile_program


def assert_one_conv_group(text: str, members: int, cores: int):
    """`npu-fuse` makes one conv group of the conv and its `members` ops (no
    member left outside it), and the lowered program stores only the
    group's result: no intermediate tile reaches GM. The lowered module."""
    fused = str(compile_program(text, "npu-fuse").operation)
    groups = re.findall(r"npu.conv_epilogue = \{[^}]*members = (\d+)", fused)
    assert groups == [str(members)], groups
    outside = fused.split("npu.conv_epilogue")[-1]  # after the group's region
    assert not re.search(r'"ascend\.', outside), outside
    module = compile_program(text, f"npu-lower{{cores={cores}}}")
    stores = nir.ops_named(module.operation, "cce.copy_ub_to_gm")
    result = _arguments(module, text)[-1]
    assert stores and all(nir.view_root(op.operands[1]) == result for op in stores)
    return module


def _arguments(module, text: str) -> list:
    """The arguments of the program `text` (the lowering appends its own)."""
    written = len(re.search(r"@f\((.*?)\) \{", text).group(1).split(": memref")) - 1
    return list(nir.functions(module)[0].regions[0].blocks[0].arguments)[:written]


def loads_of(module, text: str, argument: int) -> int:
    """The copies GM -> UB from the program's `argument`-th argument."""
    arg = _arguments(module, text)[argument]
    return sum(nir.view_root(op.operands[0]) == arg
               for op in nir.ops_named(module.operation, "cce.copy_gm_to_ub"))
