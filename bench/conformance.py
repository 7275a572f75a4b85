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
    print(f"**{passed} of {len(cases)} cases pass ({100 * passed / len(cases):.1f}%)**; in the families "
          f"claimed before the transformer ops were added, {claimed_passed} of {len(claimed)} "
          f"({100 * claimed_passed / len(claimed):.1f}%).\n")
    print("| family | cases | pass | refused: reason (cases) |")
    print("|---|---|---|---|")
    for family in sorted(by_family):
        names = by_family[family]
        reasons = Counter(KNOWN[n][0] for n in names if n in KNOWN)
        why = "; ".join(f"{r} ({k})" for r, k in reasons.most_common())
        print(f"| {family} | {len(names)} | {sum(n not in KNOWN for n in names)} | {why} |")
    print("\n## Refusals by reason\n")
    print("| reason | cases |")
    print("|---|---|")
    for reason, count in Counter(r for r, _ in KNOWN.values()).most_common():
        print(f"| {reason} | {count} |")


if __name__ == "__main__":
    main()
