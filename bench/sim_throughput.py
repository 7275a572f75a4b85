"""Simulator speed on two workloads, every check on (numerics, bounds,
initialised state, races):

  vector  instructions per second: a kernel streaming tiles GM -> UB -> (a
          chain of small-repeat vector ops) -> GM in an scf.for, fully
          synchronised (flags between pipes, pipe_barrier(V) between
          dependent vector ops);
  matmul  simulated cycles per second: `ascend.matmul` of 2048^3 (fp16 in
          Nz, fp32 out) compiled by `npu-lower`, checked against the numpy
          reference.

Rates are given per CPU second of this process (what the simulator costs;
other users of a shared machine inflate wall time) and per wall second.
`--no-numerics` runs `simulate(..., numerics=False)` (timing only). Run:

    .venv/bin/python bench/sim_throughput.py [--workload vector,matmul] [--iterations N]
        [--ops-per-tile K] [--matmul-size N] [--no-numerics] [--profile] [--repeat N] [--floor]

`--floor` adds, per workload, the CPU time with each component switched off
(numerics, then the checks, then the pipes' timing) against the time the
target allows, and the arithmetic alone: for mads the bit-exact products
(float64 BLAS calls on fp16 operands, int32 on int8), for the vector kernel
its fp16 ufuncs, one numpy call per instruction.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from npu.ir import make_context, parse_module
from npu.simulator import simulate

ATTRS = ("repeat = 1 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, "
         "src0_blk_stride = 1 : i64, src0_rep_stride = 8 : i64, src1_blk_stride = 1 : i64, "
         "src1_rep_stride = 8 : i64")
UNARY_ATTRS = ("repeat = 1 : i64, mask = 128 : i64, dst_blk_stride = 1 : i64, dst_rep_stride = 8 : i64, "
               "src_blk_stride = 1 : i64, src_rep_stride = 8 : i64")
VECTOR_TARGET = 5e5  # instructions per CPU second (issue 13)
MATMUL_TARGET = 1e7  # simulated cycles per CPU second
T = 'memref<128xf16, strided<[1], offset: ?>, "gm">'
U = 'memref<128xf16, "ub">'


def kernel_text(iterations: int, ops_per_tile: int) -> str:
    n = iterations * 128
    lines = [f'func.func @bench(%x: memref<{n}xf16, "gm">, %y: memref<{n}xf16, "gm">) {{',
             "  %c0 = arith.constant 0 : index",
             "  %c1 = arith.constant 1 : index",
             "  %c128 = arith.constant 128 : index",
             f"  %cn = arith.constant {iterations} : index",
             f"  %a = memref.alloc() : {U}",
             f"  %b = memref.alloc() : {U}",
             f"  %c = memref.alloc() : {U}",
             '  "cce.set_flag"() {src = "MTE3", dst = "MTE2", event = 0 : i64} : () -> ()',
             "  scf.for %i = %c0 to %cn step %c1 {",
             "    %o = arith.muli %i, %c128 : index",
             f'    %xs = memref.subview %x[%o] [128] [1] : memref<{n}xf16, "gm"> to {T}',
             f'    %ys = memref.subview %y[%o] [128] [1] : memref<{n}xf16, "gm"> to {T}',
             '    "cce.wait_flag"() {src = "MTE3", dst = "MTE2", event = 0 : i64} : () -> ()',
             '    "cce.copy_gm_to_ub"(%xs, %a) {n_burst = 1 : i64, burst_len = 8 : i64, src_gap = 0 : i64, '
             f'dst_gap = 0 : i64}} : ({T}, {U}) -> ()',
             '    "cce.set_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> ()',
             '    "cce.wait_flag"() {src = "MTE2", dst = "V", event = 0 : i64} : () -> ()',
             f'    "cce.vmuls"(%b, %a) {{{UNARY_ATTRS}, scalar = 0.5 : f64}} : ({U}, {U}) -> ()',
             '    "cce.pipe_barrier"() {pipe = "V"} : () -> ()']
    for j in range(ops_per_tile):
        op = ("vadd", "vmul", "vmax", "vsub")[j % 4]
        dst, src = ("c", "b") if j % 2 == 0 else ("b", "c")
        lines.append(f'    "cce.{op}"(%{dst}, %{src}, %a) {{{ATTRS}}} : ({U}, {U}, {U}) -> ()')
        lines.append('    "cce.pipe_barrier"() {pipe = "V"} : () -> ()')
    last = "c" if ops_per_tile % 2 == 1 else "b"
    lines += ['    "cce.set_flag"() {src = "V", dst = "MTE3", event = 0 : i64} : () -> ()',
              '    "cce.wait_flag"() {src = "V", dst = "MTE3", event = 0 : i64} : () -> ()',
              f'    "cce.copy_ub_to_gm"(%{last}, %ys) {{n_burst = 1 : i64, burst_len = 8 : i64, '
              f'src_gap = 0 : i64, dst_gap = 0 : i64}} : ({U}, {T}) -> ()',
              '    "cce.set_flag"() {src = "MTE3", dst = "MTE2", event = 0 : i64} : () -> ()',
              "  }",
              '  "cce.wait_flag"() {src = "MTE3", dst = "MTE2", event = 0 : i64} : () -> ()',
              "  return", "}", ""]
    return "\n".join(lines)


def reference(x: np.ndarray, ops_per_tile: int) -> np.ndarray:
    a = x.reshape(-1, 128)
    b = a * np.float16(0.5)
    c = np.zeros_like(b)
    fns = (np.add, np.multiply, np.maximum, np.subtract)
    for j in range(ops_per_tile):
        if j % 2 == 0:
            c = fns[j % 4](b, a)
        else:
            b = fns[j % 4](c, a)
    return (c if ops_per_tile % 2 == 1 else b).ravel()


def matmul_text(size: int) -> str:
    blocks = size // 16
    nz16 = f'memref<{blocks}x{blocks}x16x16xf16, "gm">'
    nz32 = f'memref<{blocks}x{blocks}x16x16xf32, "gm">'
    return "\n".join([f"func.func @matmul(%a: {nz16}, %b: {nz16}, %c: {nz32}) {{",
                      f'  "ascend.matmul"(%a, %b, %c) : ({nz16}, {nz16}, {nz32}) -> ()',
                      "  return", "}", ""])


def timed_simulate(module, inputs: list[np.ndarray], options: dict, profile: bool,
                   repeat: int = 1):
    """(result, wall seconds, CPU seconds) of the fastest of `repeat`
    simulations (by CPU time; on a shared machine the minimum is the least
    disturbed run). With `profile`, one profiled run prints its top entries."""
    if profile:
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.enable()
        simulate(module, [a.copy() for a in inputs], **options)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(20)
    best = None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        res = simulate(module, [a.copy() for a in inputs], **options)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if best is None or cpu < best[2]:
            best = (res, wall, cpu)
    return best


def _no_checks_bind(self, instr, views):
    """`Machine.bind` of the floor's "no checks" run: every operand set's
    runner does nothing (no bounds, alignment, hazard checks or effect)."""
    entry = self.bound[id(views)] = (views, instr, lambda stamp, n, clock, clock_list: None)
    return entry


def _least_cpu(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        c0 = time.process_time()
        fn()
        best = min(best, time.process_time() - c0)
    return best


def vector_ufuncs(x: np.ndarray, ops_per_tile: int):
    """The vector kernel's arithmetic alone: per tile, the same fp16 ufuncs on
    128 lanes as `reference`, one numpy call per instruction into
    preallocated buffers (what any simulator of these instructions pays)."""
    tiles = x.reshape(-1, 128)
    b, c = np.empty(128, np.float16), np.empty(128, np.float16)
    half = np.float16(0.5)
    fns = [(np.add, np.multiply, np.maximum, np.subtract)[j % 4] for j in range(ops_per_tile)]
    steps = [(fn, (b, c) if j % 2 == 0 else (c, b)) for j, fn in enumerate(fns)]

    def run() -> None:
        for a in tiles:
            np.multiply(a, half, out=b)
            for fn, (src, dst) in steps:
                fn(src, a, out=dst)
    return run


def floor(name: str, module, inputs: list[np.ndarray], budget: float, repeat: int,
          ufuncs=None) -> None:
    """Where the CPU time of `simulate` goes, against the target's `budget`
    (CPU seconds): each row switches one more component off. "no checks"
    replaces every operand set's runner by nothing (bench-only patch of
    `Machine.bind`), leaving the scalar walk, the pipes' timing, the memory
    system and the report. For mads, the bit-exact product is one float64
    BLAS call per mad (exact sums of fp16 products, the same bits on every
    host: `cube_unit`), int32 for int8: that call alone, timed on operands of
    the same shapes, is a floor no interpreter change removes. (An fp32 call
    is half as long, but its bits depend on the host's BLAS kernel.)"""
    from threadpoolctl import threadpool_limits
    from npu.simulator.core import find_entry
    from npu.simulator.cube_unit import Mad
    from npu.simulator.machine import Machine
    from npu.simulator.program import Decoder
    from npu.target import get_target

    def run(**kw):
        return lambda: simulate(module, [a.copy() for a in inputs], **kw)

    full = _least_cpu(run(), repeat)
    timing = _least_cpu(run(numerics=False), repeat)
    real_bind, real_binder = Machine.bind, Machine.binder
    Machine.bind = _no_checks_bind
    Machine.binder = lambda self: self.bind  # the compiled loop's way in, else bind_run direct
    try:
        bare = _least_cpu(run(numerics=False), repeat)
    finally:
        Machine.bind, Machine.binder = real_bind, real_binder

    def walk():
        Decoder(get_target()).decode(find_entry(module, None)).run_scalar()
    scalar = _least_cpu(walk, repeat)
    print(f"{name} floor (CPU s, least of {repeat}; the target allows {budget:.3f} s):")
    print(f"  every check and numerics        {full:.3f}")
    print(f"  timing only (no numerics)       {timing:.3f}   numerics {full - timing:.3f}")
    print(f"  no checks, no numerics          {bare:.3f}   checks {timing - bare:.3f}")
    print(f"  decode + scalar walk            {scalar:.3f}   pipes' timing, memory system, "
          f"report {bare - scalar:.3f}")
    res = simulate(module, [a.copy() for a in inputs], numerics=False)
    mads: dict = {}
    for instr, n in res.timeline.static_counts.items():
        if isinstance(instr, Mad):
            shape = (instr.m1 * instr.edge, instr.n1 * instr.n_edge, instr.k1 * instr.edge,
                     np.int32 if instr.in_dtype == "i8" else np.float64)
            mads[shape] = mads.get(shape, 0) + n
    blas = 0.0
    with threadpool_limits(limits=1, user_api="blas"):
        for (m, k, n, wide), count in mads.items():
            a = np.ones((m, k), wide)
            b = np.ones((k, n), wide)
            out = np.empty((m, n), wide)
            reps = min(count, 200)
            per = _least_cpu(lambda: [np.matmul(a, b, out=out) for _ in range(reps)], 3) / reps
            blas += per * count
            print(f"  {count} mads of {m}x{k}x{n}: {np.dtype(wide).name} product alone "
                  f"{per * 1e6:.1f} us each")
    if mads:
        print(f"  bit-exact products alone        {blas:.3f}   (+ decode and walk: "
              f"{blas + scalar:.3f}; every check and numerics: {full / blas:.1f}x the "
              f"products; issue 32 allows 2x)")
    if ufuncs is not None:
        alone = _least_cpu(ufuncs, repeat)
        print(f"  numpy ufuncs alone              {alone:.3f}   (every check and numerics: "
              f"{full / alone:.1f}x this floor; issue 32 allows 2x)")


def run_vector(args, options: dict) -> bool:
    module = parse_module(kernel_text(args.iterations, args.ops_per_tile), make_context())
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, args.iterations * 128).astype(np.float16)
    res, wall, cpu = timed_simulate(module, [x, np.zeros_like(x)], options, args.profile,
                                    args.repeat)
    ok = np.array_equal(res.outputs[1], reference(x, args.ops_per_tile)) or not args.numerics
    n = res.instructions
    print(f"vector: {args.iterations} tiles x {args.ops_per_tile} vector ops")
    print(f"  dynamic instructions   {n}")
    print(f"  simulated cycles       {res.cycles}")
    print(f"  cpu seconds            {cpu:.3f}  ({n / cpu:,.0f} instructions / cpu second)")
    print(f"  wall seconds           {wall:.3f}  ({n / wall:,.0f} instructions / wall second)")
    print(f"  result matches numpy   {ok if args.numerics else 'not computed (--no-numerics)'}")
    print(f"  bound                  {res.report['bound_cycles']} ({res.report['bound_unit']}), "
          f"cycles / bound {res.report['bound_ratio']}")
    if args.floor:
        floor("vector", module, [x, np.zeros_like(x)], n / VECTOR_TARGET, args.repeat,
              vector_ufuncs(x, args.ops_per_tile))
    return ok


def run_matmul(args, options: dict) -> bool:
    from npu.pipeline import run_pipeline
    from npu.reference import evaluate
    from npu.simulator.core import find_entry
    from npu.target import get_target
    from npu.simulator.run_inputs import random_inputs
    from npu.simulator.run_check import compare

    ctx = make_context()
    text = matmul_text(args.matmul_size)
    module = parse_module(text, ctx)
    inputs = random_inputs(find_entry(module, None), 0)
    c0 = time.process_time()
    run_pipeline(module, "npu-lower{cores=1}", get_target())
    compile_cpu = time.process_time() - c0
    res, wall, cpu = timed_simulate(module, inputs, options, args.profile, args.repeat)
    ok = True
    if args.numerics:
        reference = parse_module(text, ctx)  # kept alive: its function is read through it
        expected = evaluate(find_entry(reference, None), [a.copy() for a in inputs])
        ok = compare(res.outputs, expected).passed
    size = args.matmul_size
    print(f"matmul: {size}x{size}x{size} fp16 -> fp32 through npu-lower ({compile_cpu:.2f} cpu s to compile)")
    print(f"  dynamic instructions   {res.instructions}")
    print(f"  simulated cycles       {res.cycles}")
    print(f"  cpu seconds            {cpu:.3f}  ({res.cycles / cpu:,.0f} cycles / cpu second, "
          f"{res.instructions / cpu:,.0f} instructions / cpu second)")
    print(f"  wall seconds           {wall:.3f}  ({res.cycles / wall:,.0f} cycles / wall second)")
    print(f"  result matches numpy   {ok if args.numerics else 'not computed (--no-numerics)'}")
    if args.floor:
        floor("matmul", module, inputs, res.cycles / MATMUL_TARGET, args.repeat)
    return ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", default="vector,matmul", help="comma-separated: vector, matmul")
    ap.add_argument("--iterations", type=int, default=2500)
    ap.add_argument("--ops-per-tile", type=int, default=20)
    ap.add_argument("--matmul-size", type=int, default=2048)
    ap.add_argument("--no-numerics", dest="numerics", action="store_false",
                    help="timing only: simulate(..., numerics=False)")
    ap.add_argument("--profile", action="store_true", help="print cProfile's top entries per run")
    ap.add_argument("--repeat", type=int, default=1,
                    help="simulate N times and report the run with the least CPU time")
    ap.add_argument("--floor", action="store_true",
                    help="also time the run with each component switched off, against the "
                    "targets' budgets")
    args = ap.parse_args()
    options = {} if args.numerics else {"numerics": False}
    ok = True
    for workload in args.workload.split(","):
        ok &= {"vector": run_vector, "matmul": run_matmul}[workload](args, options)
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
