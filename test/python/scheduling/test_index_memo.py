"""The access analysis memoises the affine form of index values; the
64-level limit on looking through definitions must cut off exactly as
without the memo, whatever order the values are asked in."""

from __future__ import annotations

from npu.analysis.access import AccessAnalysis
from npu.analysis.affine import Affine
from npu.ir import make_context, parse_module, walk
from npu.target import get_target


def _chain(n: int):
    """%v0 = 1, %vk = %v(k-1) + 1: %vk is k + 1, k definitions deep."""
    lines = ["func.func @f() {", "  %v0 = arith.constant 1 : index"]
    lines += [f"  %v{k} = arith.addi %v{k - 1}, %v0 : index" for k in range(1, n)]
    lines += ["  return", "}", ""]
    module = parse_module("\n".join(lines), make_context())
    values = [op.results[0] for op in walk(module.operation)
              if op.name in ("arith.constant", "arith.addi")]
    return module, values


def test_depth_limit_is_that_of_the_unmemoised_walk():
    module, values = _chain(80)
    target = get_target("ascend910")
    for order in (range(80), reversed(range(80)), [70, 10, 65, 64, 66, 30, 79]):
        analysis = AccessAnalysis(target)
        for k in order:
            expected = Affine(k + 1) if k <= 64 else None
            assert analysis.index_value(values[k]) == expected, (list(order), k)
            # asked from deeper down, the limit comes sooner
            assert analysis.index_value(values[k], depth=10) == (Affine(k + 1) if k <= 54 else None)
    del module
