"""GM workspace planning (npu-plan-gm) on multi-op graphs.

For each graph in bench/graphs/: the number of GM temporaries, the sum of
their sizes (no reuse), the lower bound (most bytes live at once: no
placement can do better), and the workspace each heuristic allocates
(greedy by size, MegEngine pushdown, and auto = the better one, which
npu-lower uses). Sizes are whole units of target.gm_workspace_alignment.

With simulation (the default), each graph also runs through npu-lower
planned and unplanned (plan-gm=false: every temporary its own GM
allocation): simulated cycles, the program's own lower bound from the
simulator's report (its busiest unit), and the check against the numpy
reference (as npu-run --check does). Planning changes only addresses, so
the results must be bit-identical and the cycles close.

    .venv/bin/python bench/gm_plan.py [--target ascend910] [--no-sim] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass

import numpy as np

from npu.ir import functions, make_context, parse_module
from npu.passes.plan_gm import plan_function
from npu.pipeline import run_pipeline
from npu.target import get_target

GRAPHS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "graphs")


@dataclass
class Row:
    graph: str
    tensors: int
    sum_bytes: int
    lower_bound: int
    greedy_by_size: int
    pushdown: int
    allocated: int
    algorithm: str
    cycles_planned: int | None = None
    cycles_unplanned: int | None = None
    bound_planned: int | None = None
    checks: str = ""


def plan_row(name: str, text: str, target) -> Row:
    results = {}
    for algorithm in ("greedy-by-size", "pushdown", "auto"):
        module = parse_module(text, make_context())
        results[algorithm] = plan_function(functions(module)[0], target, algorithm, apply=False)
    auto = results["auto"]
    return Row(name, auto.tensors, auto.total, auto.lower_bound,
               results["greedy-by-size"].allocated, results["pushdown"].allocated,
               auto.allocated, auto.algorithm)


def simulate_row(row: Row, text: str, target) -> None:
    from npu.reference import evaluate
    from npu.simulator import simulate
    from npu.simulator.run_inputs import random_inputs
    from npu.simulator.run_check import compare

    source = parse_module(text, make_context())  # kept alive while its func is used
    original = functions(source)[0]
    inputs = random_inputs(original, 0)
    expected = evaluate(original, inputs)
    outputs, checks = {}, []
    for label, pipeline in (("planned", "npu-lower{cores=1}"), ("unplanned", "npu-lower{cores=1 plan-gm=false}")):
        module = parse_module(text, make_context())
        run_pipeline(module, pipeline, target)
        res = simulate(module, [np.array(a) for a in inputs], target=target)
        check = compare(res.outputs, expected)
        checks.append(f"{label} {'ok' if check.passed and not res.hazards else 'FAILED'}")
        outputs[label] = res.outputs
        if label == "planned":
            row.cycles_planned, row.bound_planned = res.cycles, res.report["bound_cycles"]
            assert res.report["gm"]["workspace_bytes"] == row.allocated
        else:
            row.cycles_unplanned = res.cycles
    same = all(np.array_equal(a, b, equal_nan=True)
               for a, b in zip(outputs["planned"], outputs["unplanned"]))
    row.checks = ", ".join(checks) + ("; bit-identical" if same else "; DIFFERENT")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default=None)
    p.add_argument("--no-sim", action="store_true", help="plan only, do not simulate")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    target = get_target(args.target)
    rows = []
    for name in sorted(os.listdir(GRAPHS)):
        if not name.endswith(".mlir"):
            continue
        with open(os.path.join(GRAPHS, name)) as f:
            text = f.read()
        row = plan_row(name[:-len(".mlir")], text, target)
        if not args.no_sim:
            simulate_row(row, text, target)
        rows.append(row)
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
        return 0
    kib = lambda n: f"{n / 1024:.1f}"  # noqa: E731
    print(f"target {target.name}, GM workspace alignment {target.gm_workspace_alignment} B; "
          "sizes in KiB")
    print(f"{'graph':<20} {'tensors':>7} {'sum':>8} {'lower bd':>8} {'greedy':>8} {'pushdown':>8} "
          f"{'auto':>8} {'auto/lb':>7} {'auto/sum':>8}")
    for r in rows:
        print(f"{r.graph:<20} {r.tensors:>7} {kib(r.sum_bytes):>8} {kib(r.lower_bound):>8} "
              f"{kib(r.greedy_by_size):>8} {kib(r.pushdown):>8} {kib(r.allocated):>8} "
              f"{r.allocated / r.lower_bound:>7.3f} {r.allocated / r.sum_bytes:>8.3f}")
    if not args.no_sim:
        print()
        print(f"{'graph':<20} {'cycles planned':>14} {'unplanned':>10} {'ratio':>6} "
              f"{'own bound':>9}  check")
        for r in rows:
            print(f"{r.graph:<20} {r.cycles_planned:>14} {r.cycles_unplanned:>10} "
                  f"{r.cycles_planned / r.cycles_unplanned:>6.3f} {r.bound_planned:>9}  {r.checks}")
        print("own bound: the planned program's busiest unit (its traffic and work over the "
              "target's rates), from the simulator report")
    return 0


if __name__ == "__main__":
    sys.exit(main())
