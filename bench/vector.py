"""Benchmark of the vector lowerings on the simulator (issue 5).

For add, exp and cast (f16 -> f32) on 1,048,576 fp16 elements and for the
BERT transpose (12, 512, 64) -> (12, 64, 512) fp16, prints the simulated
cycles, the lower bound and the limiting unit, and their ratio.

The bound is the largest of
  * GM reads  / bandwidth of gm_to_ub (MTE2),
  * GM writes / bandwidth of ub_to_gm (MTE3),
  * vector work: repeats x cycles per repeat of the op class (V),
all read from the target description; each pipe is a separate queue, so
the slowest one bounds the kernel.

The code runs through the real pipeline (lowering, memory planning, sync
insertion, optionally double buffering) when those passes are registered;
otherwise through the lowering alone with `serialize=True`, which the output
says (a serialized run cannot overlap pipes: it is an upper bound).

    .venv/bin/python bench/vector.py [--target ascend910] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass

import numpy as np

from npu.ir import make_context, parse_module
from npu.passes import registry
from npu.pipeline import run_pipeline
from npu.target import Target, get_target

N = 1 << 20


@dataclass
class Case:
    name: str
    source: str
    lowering: str
    inputs: list
    expected: np.ndarray
    read_bytes: int
    write_bytes: int
    vector_repeats: int  # repeats of the op's main instructions
    vector_class: str
    vnchwconv_repeats: int = 0
    atol: float = 0.0  # sums: the f32 accumulation error bound (order differs from numpy)


@dataclass
class Row:
    case: str
    mode: str
    cycles: int
    bound: int
    unit: str
    ratio: float
    sim_bound: int  # the simulator's own bound, as a cross-check
    busiest: str  # the pipe with the most busy cycles and its utilisation
    correct: bool
    seconds: float


def cases(target: Target) -> list[Case]:
    rng = np.random.default_rng(0)
    a = rng.uniform(-4, 4, N).astype(np.float16)
    b = rng.uniform(-4, 4, N).astype(np.float16)
    t16 = f'memref<{N}xf16, "gm">'
    t32 = f'memref<{N}xf32, "gm">'
    lanes16, lanes32 = target.lanes(2), target.lanes(4)
    x = rng.uniform(-8, 8, (12, 512, 64)).astype(np.float16)
    tin, tout = 'memref<12x512x64xf16, "gm">', 'memref<12x64x512xf16, "gm">'
    tiles = 12 * (512 // target.fractal) * (64 // (target.granule("ub") // 2))
    return [
        Case("add f16 1M",
             f'func.func @f(%a: {t16}, %b: {t16}, %c: {t16}) {{\n'
             f'  "ascend.add"(%a, %b, %c) : ({t16}, {t16}, {t16}) -> ()\n  return\n}}\n',
             "npu-lower-elementwise", [a, b, np.zeros(N, np.float16)], a + b,
             4 * N, 2 * N, N // lanes16, "simple"),
        Case("exp f16 1M",
             f'func.func @f(%a: {t16}, %c: {t16}) {{\n'
             f'  "ascend.exp"(%a, %c) : ({t16}, {t16}) -> ()\n  return\n}}\n',
             "npu-lower-elementwise", [a, np.zeros(N, np.float16)],
             np.exp(a.astype(np.float32)).astype(np.float16), 2 * N, 2 * N, N // lanes16,
             "transcendental"),
        Case("cast f16->f32 1M",
             f'func.func @f(%a: {t16}, %c: {t32}) {{\n'
             f'  "ascend.cast"(%a, %c) {{round_mode = "none"}} : ({t16}, {t32}) -> ()\n'
             f'  return\n}}\n',
             "npu-lower-elementwise", [a, np.zeros(N, np.float32)], a.astype(np.float32),
             2 * N, 4 * N, N // lanes32, "convert"),
        Case("transpose (12,512,64)->(12,64,512) f16",
             f'func.func @f(%a: {tin}, %c: {tout}) {{\n'
             f'  "ascend.transpose"(%a, %c) {{permutation = array<i64: 0, 2, 1>}} : '
             f'({tin}, {tout}) -> ()\n  return\n}}\n',
             "npu-lower-transpose", [x, np.zeros((12, 64, 512), np.float16)],
             np.transpose(x, (0, 2, 1)), x.nbytes, x.nbytes, 0, "simple", tiles),
    ] + [reduce_case(rows, cols, elem, rng, target)
         for rows, cols, elem in ((1024, 2048, "f32"), (2048, 1024, "f32"), (1024, 2048, "f16"))]


def reduce_case(rows: int, cols: int, elem: str, rng: np.random.Generator,
                target: Target) -> Case:
    """reduce_sum of rows: 2048-element f32 rows pass the vector repeat
    stride (255 blocks) and take the long-row path; 1024-element rows are
    the same data in the whole-rows path. f16 sums accumulate in f32. Vector
    work: every element is added once (folds, then vcadd over one repeat
    per row), in f32 lanes (the f16 read is half the bytes)."""
    dt = np.float32 if elem == "f32" else np.float16
    x = rng.uniform(-4, 4, (rows, cols)).astype(dt)
    tin, tout = f'memref<{rows}x{cols}x{elem}, "gm">', f'memref<{rows}x{elem}, "gm">'
    eps = float(np.finfo(np.float32).eps)
    return Case(f"reduce_sum {elem} {rows}x{cols}",
                f'func.func @f(%a: {tin}, %c: {tout}) {{\n'
                f'  "ascend.reduce_sum"(%a, %c) : ({tin}, {tout}) -> ()\n  return\n}}\n',
                "npu-lower-reduce", [x, np.zeros(rows, dt)],
                x.astype(np.float64).sum(-1).astype(dt), x.nbytes, rows * x.itemsize,
                rows * cols // target.lanes(4), "simple",
                atol=cols * eps / 2 * float(np.abs(x.astype(np.float64)).sum(-1).max()))


def bound(case: Case, target: Target) -> tuple[int, str]:
    terms = {
        "MTE2 (GM read)": math.ceil(case.read_bytes / target.path("gm_to_ub").bytes_per_cycle),
        "MTE3 (GM write)": math.ceil(case.write_bytes / target.path("ub_to_gm").bytes_per_cycle),
        "V (vector)": case.vector_repeats * target.vector_cycles(case.vector_class)
        + case.vnchwconv_repeats * target.vnchwconv_cycles_per_repeat,
    }
    top = max(terms.values())
    return top, " = ".join(k.split(" ")[0] for k, v in terms.items() if v == top)


def pipelines(lowering: str) -> list[tuple[str, str, bool]]:
    """(mode label, pipeline, serialize) to run, best available first."""
    names = registry()
    if "npu-insert-sync" not in names:
        return [("serialized (no sync pass yet)", lowering, True)]
    plan = ["npu-plan-memory"] if "npu-plan-memory" in names else []
    label = "plan+sync" if plan else "sync (no planner yet)"
    out = [(label, ",".join([lowering] + plan + ["npu-insert-sync"]), False)]
    if "npu-double-buffer" in names:
        out.append((label + "+double-buffer",
                    ",".join([lowering, "npu-double-buffer"] + plan + ["npu-insert-sync"]),
                    False))
    return out


def run_case(case: Case, target: Target) -> list[Row]:
    from npu.simulator import simulate

    rows = []
    b, unit = bound(case, target)
    for mode, pipeline, serialize in pipelines(case.lowering):
        start = time.perf_counter()
        module = parse_module(case.source, make_context())
        run_pipeline(module, pipeline, target)
        res = simulate(module, [np.array(i, copy=True) for i in case.inputs], target=target,
                       strict=True, serialize=serialize)
        out, exp = res.outputs[-1], case.expected
        # exp is one correctly rounded transcendental: within one ulp.
        rtol = float(np.finfo(exp.dtype).eps) if case.vector_class == "transcendental" else 0.0
        if case.atol:
            rtol = float(np.finfo(exp.dtype).eps)  # the final rounding of each sum
        correct = bool(np.allclose(out.astype(np.float64), exp.astype(np.float64), rtol=rtol,
                                   atol=case.atol, equal_nan=True))
        pipes = res.report["pipes"]
        top = max(pipes, key=lambda k: pipes[k]["busy_cycles"])
        busiest = f"{top} {pipes[top]['busy_cycles']} ({pipes[top]['utilization']:.0%})"
        rows.append(Row(case.name, mode, int(res.cycles), b, unit, res.cycles / b,
                        int(res.report.get("bound_cycles", 0)), busiest, correct,
                        time.perf_counter() - start))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default=None)
    p.add_argument("--json", action="store_true")
    p.add_argument("--only", default="", help="run only the cases whose name contains this")
    args = p.parse_args(argv)
    target = get_target(args.target)
    rows = [r for c in cases(target) if args.only in c.name for r in run_case(c, target)]
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
    else:
        print(f"target {target.name}")
        print(f"{'case':<40} {'mode':<26} {'cycles':>7} {'bound':>7} {'limit':<16} "
              f"{'ratio':>5} {'sim bound':>9}  {'busiest pipe (util.)':<20} {'ok':>3}")
        for r in rows:
            print(f"{r.case:<40} {r.mode:<26} {r.cycles:>7} {r.bound:>7} {r.unit:<16} "
                  f"{r.ratio:>5.2f} {r.sim_bound:>9}  {r.busiest:<20} "
                  f"{'yes' if r.correct else 'NO':>3}")
        print("bound = max(GM read bytes / gm_to_ub B/cycle, GM write bytes / ub_to_gm "
              "B/cycle, vector repeats x cycles/repeat); busy cycles include each "
              "transfer's fixed latency, which the bound leaves out.")
    return 0 if all(r.correct for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
