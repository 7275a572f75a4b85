"""Benchmark of the scheduling back end (issue 6): simulated cycles against
the lower bound for three configurations of `npu-lower`:

  barrier      sync=barrier, no double buffering (the conservative baseline)
  precise      sync=precise, no double buffering
  precise+db   sync=precise, double buffering

(`npu-lower`'s other defaults apply: set_flags sunk past runs of same-pipe
transfers, and matmuls lowered with the pipelined OS schedule when double
buffering is on, the plain tile nest otherwise.)

for matmul (512,768,768) and (512,768,3072) fp16, add and exp on 1M fp16 and
the BERT transpose (12,512,64) -> (12,64,512). The bound and the unit that
sets it come from the simulator's report (max over cube work, each path's
bytes / bandwidth, vector work). Also printed: the unit busiest in the run
(its busy cycles include the fixed per-instruction latency, which the bound
leaves out) and the planner's allocated-vs-lower-bound bytes per buffer.

    .venv/bin/python bench/pipeline.py [--target ascend910] [--json] [--cases mm768,add]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from npu.ir import make_context, parse_module, walk
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import get_target

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = {"barrier": "sync=barrier double-buffer=false",
           "precise": "sync=precise double-buffer=false",
           "precise+db": "sync=precise double-buffer=true"}
N = 1 << 20


def _gm(shape, elem="f16") -> str:
    return f'memref<{"x".join(map(str, shape))}x{elem}, "gm">'


def _matmul(M: int, N_: int, K: int):
    a, b, c = _gm([N_ // 16, M // 16, 16, 16]), _gm([K // 16, N_ // 16, 16, 16]), \
        _gm([K // 16, M // 16, 16, 16], "f32")
    text = (f"func.func @mm(%a: {a}, %b: {b}, %c: {c}) {{\n"
            f'  "ascend.matmul"(%a, %b, %c) : ({a}, {b}, {c}) -> ()\n  return\n}}\n')
    rng = np.random.default_rng(0)
    inputs = [rng.uniform(-1, 1, (N_ // 16, M // 16, 16, 16)).astype(np.float16),
              rng.uniform(-1, 1, (K // 16, N_ // 16, 16, 16)).astype(np.float16),
              np.zeros((K // 16, M // 16, 16, 16), np.float32)]

    def check(out):
        # Nz -> ND and compare with numpy
        A = inputs[0].transpose(1, 2, 0, 3).reshape(M, N_).astype(np.float32)
        B = inputs[1].transpose(1, 2, 0, 3).reshape(N_, K).astype(np.float32)
        C = out[2].transpose(1, 2, 0, 3).reshape(M, K)
        return bool(np.allclose(C, A @ B, rtol=1e-2, atol=1e-2))
    return text, inputs, check


def _example(name: str, make_inputs, reference):
    text = (ROOT / "examples" / name).read_text()
    inputs = make_inputs()

    def check(out):
        want = reference(inputs)
        return bool(np.allclose(out[-1].astype(np.float32), want.astype(np.float32),
                                rtol=2e-3, atol=1e-3))
    return text, inputs, check


def cases() -> dict:
    rng = np.random.default_rng(1)
    x = rng.uniform(-2, 2, N).astype(np.float16)
    y = rng.uniform(-2, 2, N).astype(np.float16)
    t = rng.uniform(-1, 1, (12, 512, 64)).astype(np.float16)
    return {
        "mm768": lambda: _matmul(512, 768, 768),
        "mm3072": lambda: _matmul(512, 768, 3072),
        "add": lambda: _example("elementwise_add_1m.mlir", lambda: [x, y, np.zeros(N, np.float16)],
                                lambda i: i[0] + i[1]),
        "exp": lambda: _example("exp_1m.mlir", lambda: [x, np.zeros(N, np.float16)],
                                lambda i: np.exp(i[0].astype(np.float32))),
        "transpose": lambda: _example("bert_transpose.mlir",
                                      lambda: [t, np.zeros((12, 64, 512), np.float16)],
                                      lambda i: i[0].transpose(0, 2, 1)),
    }


@dataclass
class Row:
    case: str
    config: str
    cycles: int
    bound: int
    bound_unit: str
    ratio: float
    busiest: str
    busiest_cycles: int
    correct: bool
    compile_s: float
    simulate_s: float
    plan: dict = field(default_factory=dict)


def run(case: str, config: str, target) -> Row:
    text, inputs, check = cases()[case]()
    module = parse_module(text, make_context())
    t0 = time.perf_counter()
    run_pipeline(module, f"npu-lower{{cores=1 {CONFIGS[config]}}}", target)
    t1 = time.perf_counter()
    res = simulate(module, inputs, target=target, strict=True)
    t2 = time.perf_counter()
    rep = res.report
    busiest = max(rep["pipes"].items(), key=lambda kv: kv[1]["busy_cycles"])
    plan = {}
    for func in walk(module.operation, lambda o: o.name == "func.func"):
        if "npu.memory_plan" in func.attributes:
            for space, d in dict((a.name, a.attr) for a in func.attributes["npu.memory_plan"]).items():
                plan[space] = {k: d[k].value for k in ("allocated", "lower_bound", "sum", "capacity")}
    return Row(case, config, res.cycles, rep["bound_cycles"], rep["bound_unit"],
               round(res.cycles / rep["bound_cycles"], 3), busiest[0], busiest[1]["busy_cycles"],
               check(res.outputs), round(t1 - t0, 2), round(t2 - t1, 2), plan)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", default="ascend910")
    p.add_argument("--json", action="store_true")
    p.add_argument("--cases", default=",".join(cases()))
    p.add_argument("--configs", default=",".join(CONFIGS))
    args = p.parse_args(argv)
    target = get_target(args.target)
    rows = []
    if not args.json:
        print(f"{'case':10} {'config':11} {'cycles':>9} {'bound':>9} {'ratio':>6}  {'bound unit':16} "
              f"{'busiest pipe (busy)':22} ok")
    for case in args.cases.split(","):
        for config in args.configs.split(","):
            row = run(case, config, target)
            rows.append(row)
            if not args.json:
                print(f"{row.case:10} {row.config:11} {row.cycles:9d} {row.bound:9d} {row.ratio:6.2f}  "
                      f"{row.bound_unit:16} {row.busiest + ' (' + str(row.busiest_cycles) + ')':22} "
                      f"{'yes' if row.correct else 'NO'}", flush=True)
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=1))
    else:
        print("\nmemory plan (precise+db unless absent): bytes allocated / lower bound / sum / capacity")
        for case in dict.fromkeys(r.case for r in rows):
            mine = [r for r in rows if r.case == case]
            r = next((x for x in mine if x.config == "precise+db"), mine[-1])
            parts = [f"{s}: {v['allocated']}/{v['lower_bound']}/{v['sum']}/{v['capacity']}"
                     for s, v in r.plan.items()]
            print(f"  {case:10} ({r.config}) " + "; ".join(parts))
    return 0 if all(r.correct for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
