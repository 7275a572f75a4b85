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

* **Double arithmetic** (`test_max_float64`, `test_min_float64`): f64 has
  no NPU type, and computed in f32 it would silently lose precision.
  **STRING** (Equal) has no NPU type either. The other types the NPU does
  not hold run in one that has each of their values exactly
  (`onnx_wide_types`): int4/int2 in i8, float8/float4 in f16, bfloat16 and
  float8e8m0 in f32, converted on the host at the graph boundary (the
  interface keeps the model's type), so every Cast case passes. Casts to
  them are computed exactly with f32 arithmetic (`onnx_cast_narrow`:
  truncate-and-wrap for int4/int2, Veltkamp's split and a magic-constant
  add for round-to-nearest-even with saturation for the floats, an exponent
  search for e8m0), checked against onnx's reference over every f16. A Cast
  to double of f32 data is f32 on the device and double outside, and a
  double input whose only use is a Cast to float (or float16) is rounded on
  the host, which is that Cast.
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
    print("with a one-line error for the reason listed here. The default test run takes every")
    print("refused case and every fourth case of a family; `--runslow` takes them all. Made by")
    print("`bench/conformance.py`.\n")
    doubles = {n for n, (reason, _) in KNOWN.items() if reason.startswith("DOUBLE")}
    plain = len(cases) - len(doubles)
    print(f"**{passed} of {len(cases)} cases pass ({100 * passed / len(cases):.1f}%)**; without the "
          f"{len(doubles)} cases of double arithmetic (f64 has no NPU type), **{passed} of {plain} ({100 * passed / plain:.1f}%)**; in the families "
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
