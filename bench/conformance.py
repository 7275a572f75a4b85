"""The ONNX node conformance table (docs/onnx_conformance.md) from the
suite's cases and its `KNOWN` refusals: per op family, the cases, how many
pass, and the reasons of the rest. `test_onnx_node_conformance.py` checks
that exactly these pass.

    .venv/bin/python bench/conformance.py > docs/onnx_conformance.md
"""

from __future__ import annotations

import os
import sys
from collections import Counter, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "python", "conformance"))

from known_failures import KNOWN  # noqa: E402
from onnx_node_cases import CLAIMED, all_cases  # noqa: E402


WHY_REFUSED = """
## What stays refused, and why

* **Types the NPU does not hold** (Cast to or from float8, float4, int4/int2,
  bfloat16; double in Cast, Max and Min; STRING in Equal): the vector unit
  computes f32, f16, i32 and i8. A double computed in f32 would silently lose
  precision, and the sub-byte and 8-bit float formats have no conversion
  instruction; they are refused at the graph boundary, not emulated.
* **Identity of an optional or a sequence** (`test_identity_opt`,
  `test_identity_sequence`): these are not tensors; the compiler takes
  tensors with static shapes only.
* **Pow of an integer base by a float exponent**: the result is trunc(x^y),
  an exact integer; for a fractional y only exp(y ln x) computes it, and in
  f32 that is not exact past 2^24. (An integer exponent runs exactly, by
  square-and-multiply in i32; a float base as exp(y ln|x|) with pow's sign
  rules.)
"""


def main() -> None:
    cases = all_cases()
    by_family: dict[str, list[str]] = defaultdict(list)
    for c in cases:
        by_family[c.family].append(c.name)
    passed = len(cases) - len(KNOWN)
    claimed = [c for c in cases if c.family in CLAIMED]
    claimed_passed = sum(c.name not in KNOWN for c in claimed)
    print("# ONNX node conformance\n")
    print("ONNX's own node test cases (`onnx.backend.test.case.node`, generated in memory by the")
    print("installed onnx) for every op family the frontend claims, compiled and simulated by")
    print("`test/python/conformance/test_onnx_node_conformance.py` and compared with the cases'")
    print("expected outputs at their own tolerances. A case that does not pass must be refused")
    print("with a one-line error for the reason listed here. Made by `bench/conformance.py`.\n")
    exotic = {c.name for c in cases if c.family == "Cast" and c.name in KNOWN
              and KNOWN[c.name][0].startswith("dtype ")}
    plain = len(cases) - len(exotic)
    print(f"**{passed} of {len(cases)} cases pass ({100 * passed / len(cases):.1f}%)**; without the "
          f"{len(exotic)} Cast cases to or from a type the NPU does not hold (float8, float4, int4/int2, "
          f"bfloat16, double), **{passed} of {plain} ({100 * passed / plain:.1f}%)**; in the families "
          f"claimed before the transformer ops were added, {claimed_passed} of {len(claimed)} "
          f"({100 * claimed_passed / len(claimed):.1f}%).\n")
    print("| family | cases | pass | refused: reason (cases) |")
    print("|---|---|---|---|")
    for family in sorted(by_family):
        names = by_family[family]
        reasons = Counter(KNOWN[n][0] for n in names if n in KNOWN)
        why = "; ".join(f"{r} ({k})" for r, k in reasons.most_common())
        print(f"| {family} | {len(names)} | {sum(n not in KNOWN for n in names)} | {why} |")
    print(WHY_REFUSED)
    print("\n## Refusals by reason\n")
    print("| reason | cases |")
    print("|---|---|")
    for reason, count in Counter(r for r, _ in KNOWN.values()).most_common():
        print(f"| {reason} | {count} |")


if __name__ == "__main__":
    main()
