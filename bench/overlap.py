"""Overlap between consecutive ops (issue 12): simulated cycles with
`npu-insert-sync carried-span=block` (the old placement of loop-carried
flags: pre-set at the function's start, balancing wait at its end, so a
function of more loops than event ids falls back to full barriers) and
`carried-span=fit` (the default: fitted around each loop as far as ids
allow). Per case: cycles, full barriers, the sum of per-op spans (equal to
the total when ops run one after another; less when they overlap), the
program's own bound (its traffic and issue, from the simulator's report)
and, for the BERT layer, the problem's ideal (bench/bert_layer.py).

    .venv/bin/python bench/overlap.py [--cases bert,exps,adds]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from npu.frontend.report import per_op_breakdown  # noqa: E402
from npu.ir import make_context, parse_module, walk  # noqa: E402
from npu.pipeline import run_pipeline  # noqa: E402
from npu.simulator import simulate  # noqa: E402
from npu.target import get_target  # noqa: E402

SPANS = ("block", "fit")
T = 'memref<32768xf16, "gm">'


def exps(n: int) -> str:
    """n independent exps (more loops than event ids per pipe pair)."""
    args = ", ".join(f"%a{i}: {T}" for i in range(2 * n))
    body = "".join(f'  "ascend.exp"(%a{i}, %a{n + i}) : ({T}, {T}) -> ()\n' for i in range(n))
    return f"func.func @exps({args}) {{\n{body}  return\n}}\n"


def adds(n: int) -> str:
    """A chain of n adds, each reading the previous result (true dependencies)."""
    args = ", ".join(f"%a{i}: {T}" for i in range(n + 2))
    body = "".join(f'  "ascend.add"(%a{i}, %a{i + 1}, %a{i + 2}) : ({T}, {T}, {T}) -> ()\n'
                   for i in range(n))
    return f"func.func @adds({args}) {{\n{body}  return\n}}\n"


def sum_of_spans(result, target) -> int:
    return sum(row["span_cycles"] for row in per_op_breakdown(result, target, {}))


def full_barriers(module) -> int:
    return sum(1 for op in walk(module, lambda o: o.name.endswith(".pipe_barrier"))
               if "ALL" in str(op.attributes["pipe"]))


def run_mlir(text: str, span: str, target) -> tuple[int, int, int, int, int | None]:
    """(cycles, full barriers, sum of op spans, own bound, ideal)."""
    from npu.simulator.core import find_entry
    from npu.simulator.run_inputs import random_inputs

    module = parse_module(text, make_context())
    inputs = random_inputs(find_entry(module, None), 0)
    run_pipeline(module, f"npu-lower{{cores=1 max-chunk=4096 fuse=false carried-span={span}}}", target)
    res = simulate(module, inputs, target=target, numerics=False)
    return (res.cycles, full_barriers(module), sum_of_spans(res, target), res.report["bound_cycles"],
            None)


def run_bert(span: str, target) -> tuple[int, int, int, int, int | None]:
    import npu
    from bert_layer import ideal_bound
    from npu.frontend.bert import bert_layer

    kernel = npu.compile(bert_layer(128, 768, 12, 3072), target=target, where="bert_layer.onnx",
                         pipeline=f"npu-lower{{cores=1 carried-span={span}}}")
    x = np.random.default_rng(1).standard_normal((1, 128, 768)).astype(np.float32)
    _, report = kernel(x)
    return (report["cycles"], full_barriers(kernel.module),
            sum(row["span_cycles"] for row in report["per_op"]), report["bound_cycles"],
            ideal_bound(target, 128, 768, 12, 3072)["ideal"])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--cases", default="bert,exps,adds")
    args = p.parse_args()
    target = get_target("ascend910")
    cases = {"bert": ("BERT layer seq 128 (21 ops)", run_bert),
             "exps": ("12 independent exps 32768 f16", lambda s, t: run_mlir(exps(12), s, t)),
             "adds": ("chain of 12 adds 32768 f16", lambda s, t: run_mlir(adds(12), s, t))}
    print(f"{'case':<32} {'carried-span':>12} {'cycles':>10} {'barriers':>9} "
          f"{'sum of op spans':>16} {'own bound':>10} {'ideal':>9}")
    for key in args.cases.split(","):
        label, run = cases[key]
        for span in SPANS:
            cycles, barriers, spans, bound, ideal = run(span, target)
            print(f"{label:<32} {span:>12} {cycles:>10} {barriers:>9} {spans:>16} {bound:>10} "
                  f"{ideal or '-':>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
