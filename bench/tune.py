"""npu-tune on the ops of a BERT layer: what tuning buys over the cost model.

Program: bench/bert_layer_ops.mlir (the (512, 768, 768) and (512, 768,
3072) matmuls with their fractal conversions, the attention transpose, the
softmax's reduce_max and exp, the GELU's tanh, the residual add), on
ascend910, candidates simulated timing-only as Ray tasks on a local cluster.

1. Random search, `--budget` candidates per op (every candidate when the
   op's space is smaller: the vector ops' spaces are; `--search grid`: all
   of every op's default space), then guided search
   with a budget of 8 (the cost model's top ranks), sharing the store, so a
   candidate both pick is simulated once. Per op:
     default   cycles with npu-lower's defaults (the cost model's choice)
     best      the fastest candidate found; ratio = default / best
     bound     the simulator's lower bound of the best program (its traffic)
     ideal     the problem's bound: compulsory GM traffic (each operand once)
               or compute, whichever is larger
     guided    the best of the guided search's 8 candidates
     spearman  rank correlation of the cost model's estimate with the
               simulated cycles over the random sample (unbiased)
   then the whole program with the chosen options, checked against numpy.
2. Wall time of one fixed set of candidates with 1 and with 2 workers
   (the machine is shared: the load average before each run is printed).
3. Design space: the (512, 768, 768) matmul example against L1, L0C, UB and
   GM bandwidth; table and plot (PNG).

Run: .venv/bin/python bench/tune.py [--budget 24] [--plot tune_design.png]
     [--store FILE] (a rerun with the same store reuses every result)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from npu.target import get_target
from npu.tune import TuneOptions, load_program, sweep_design, tune
from npu.tune.cost_model import ideal_bound
from npu.tune.design import plot
from npu.tune.program import Program
from npu.tune.runner import RayRunner
from npu.tune.sweep import describe_options

ROOT = os.path.relpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
PROGRAM = os.path.normpath(os.path.join(ROOT, "bench", "bert_layer_ops.mlir"))
MATMUL = os.path.normpath(os.path.join(ROOT, "examples", "matmul_512x768x768.mlir"))


def shape_of(task) -> str:
    return " -> ".join("x".join(map(str, o.shape)) for o in task.operands)


def search_table(random_result, guided_result) -> None:
    target = get_target()
    guided = {op.task.signature: op for op in guided_result.ops}
    print("| op | operands | run / space | default | best | ratio | bound | ideal | "
          "best/ideal | guided (8) | spearman (n) | best options |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for op in random_result.ops:
        best, default, g = op.best, op.default, guided[op.task.signature].best
        rho, n = op.spearman()
        ideal = ideal_bound(op.task, target)
        print(f"| {op.task.op_name.removeprefix('ascend.')} | {shape_of(op.task)} "
              f"| {len(op.results)} / {op.space_size} | {default.cycles} | {best.cycles} "
              f"| {default.cycles / best.cycles:.3f} | {best.bound} | {ideal:.0f} "
              f"| {best.cycles / ideal:.2f} | {g.cycles if g else '-'} "
              f"| {'-' if rho is None else f'{rho:.2f}'} ({n}) "
              f"| {describe_options(best.candidate.options)} |")
    print()
    print("Spearman correlation, cost model vs simulator (mean over the family's ops):")
    for family, (rho, n) in random_result.spearman_by_family().items():
        print(f"  {family:24s} {'-' if rho is None else f'{rho:+.2f}'}  ({n} candidates)")
    failed = sum(r.status != "ok" for op in random_result.ops for r in op.results)
    print(f"failed candidates: {failed} (compile errors or over the time limit)")
    p = random_result.program
    if p.get("rejected"):
        print(f"faster alone but slower in the program (all choices: {p['cycles_all_choices']} "
              f"cycles), left at the defaults: {'; '.join(p['rejected'])}")
    print(f"whole program: default {p['cycles_default']} cycles, tuned {p['cycles_tuned']} cycles, "
          f"speedup {p.get('speedup', float('nan')):.3f}, numerics check "
          f"{'passed' if p['check']['passed'] else 'FAILED: ' + str(p['check'].get('failure'))}")
    print(f"runs: random {random_result.ran} run + {random_result.reused} reused "
          f"({random_result.wall_seconds} s), guided {guided_result.ran} run + "
          f"{guided_result.reused} reused ({guided_result.wall_seconds} s)")


def worker_scaling(runner: RayRunner, program) -> None:
    """The same 12 candidates of the (512, 768, 3072) matmul (OS tilings, a
    second or so each) with 1 and 2 tasks in flight; no store, nothing reused."""
    from npu.tune.program import extract_ops

    (task,) = [t for t in extract_ops(program)
               if t.op_name == "ascend.matmul" and t.operands[1].shape[0] == 192]
    spec = {"ops": {task.signature: {"strategy": ["os"]}, "*": {}}}
    alone = Program(program.filename, task.kernel)
    # Start both Ray workers (module imports) before timing anything.
    tune(alone, spec, TuneOptions(search="random", budget=2, seed=2, progress=False, verify=False),
         runner=runner)
    print("| workers | candidates | wall s | speedup | load average before |")
    print("|---|---|---|---|---|")
    base = None
    for workers in (1, 2):
        runner.workers = workers
        opts = TuneOptions(search="random", budget=12, seed=1, progress=False, verify=False)
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        result = tune(alone, spec, opts, runner=runner)
        wall = time.perf_counter() - t0
        base = base or wall
        print(f"| {workers} | {result.ran} | {wall:.1f} | {base / wall:.2f} | {load:.1f} |")
    runner.workers = 2


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--search", choices=("random", "grid"), default="random",
                   help="the first search: a random sample of --budget per op, or every candidate")
    p.add_argument("--budget", type=int, default=24, help="random candidates per op")
    p.add_argument("--store", default=None, help="results store (default: none, run everything)")
    p.add_argument("--plot", default="tune_design.png", help="design-space plot (PNG)")
    p.add_argument("--skip", default="", help="comma list of parts to skip: search,workers,design")
    args = p.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    runner = RayRunner(workers=2, timeout=900.0)
    try:
        program = load_program(PROGRAM)
        if "search" not in skip:
            print("## Per-op search on", os.path.relpath(PROGRAM, ROOT))
            opts = TuneOptions(search=args.search, budget=args.budget, store=args.store, progress=True)
            random_result = tune(program, None, opts, runner=runner)
            opts = TuneOptions(search="guided", budget=8, store=args.store, progress=True,
                               verify=False)
            guided_result = tune(program, None, opts, runner=runner)
            search_table(random_result, guided_result)
        if "workers" not in skip:
            print("\n## Wall time, 1 vs 2 workers (local Ray, this 2-core machine, shared)")
            worker_scaling(runner, program)
        if "design" not in skip:
            print("\n## Design space:", os.path.relpath(MATMUL, ROOT))
            design = sweep_design(load_program(MATMUL), None, TuneOptions(store=args.store),
                                  runner=runner)
            print(design.markdown())
            plot(design, args.plot, "matmul 512x768x768 (ascend910)")
            print(f"plot: {args.plot}; {design.ran} run, {design.wall_seconds} s")
    finally:
        import ray

        ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
