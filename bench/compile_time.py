"""Compile time of `npu-lower` against the size of the program.

Three families of `ascend` modules, each with 1, 10, 50 and 200 ops:

  elementwise  a chain add/mul/relu/sub/exp/... on 512x768 fp16 (GM
               temporaries as arguments, destination-passing style)
  matmul       BERT-shaped matmuls, C = A x B with (M, K, N) = (512, 768, 768)
               in Nz, fp16 in / fp32 out
  mixed        fractalize, matmul, defractalize, add, relu repeated (the
               ops of one dense layer)

and a BERT-base encoder (hidden 768, 12 heads, FFN 3072, sequence 128) of
1 and 12 layers (`bert:N`) through the frontend as `npu.compile` runs it:
ONNX import to linalg, conversion to ascend, then `npu-lower`, each stage's
CPU seconds shown apart.

For each module: the ops before lowering, the ops of the lowered IR (every
op, nested ones included), CPU seconds of parse + `npu-lower` (process time,
which the other users of a shared machine disturb less than wall time), wall
seconds, and microseconds of CPU per lowered op. Linear compile time shows as
a flat last column. Run:

    .venv/bin/python bench/compile_time.py [--sizes 1,10,50,200] [--families matmul,...]
                                           [--bert 1,12] [--profile matmul:50 | bert:12]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from typing import Callable

from npu.ir import make_context, parse_module, walk
from npu.pipeline import run_pipeline
from npu.target import get_target

ND16 = 'memref<512x768xf16, "gm">'
ND32 = 'memref<512x768xf32, "gm">'
A_NZ = 'memref<48x32x16x16xf16, "gm">'  # A 512x768 (M x K) in Nz
B_NZ = 'memref<48x48x16x16xf16, "gm">'  # B 768x768 (K x N)
C_NZ = 'memref<48x32x16x16xf32, "gm">'  # C 512x768 (M x N)

BINARY = ("add", "mul", "sub", "max")
UNARY = ("relu", "exp", "abs", "neg")


def elementwise(n: int) -> str:
    """x -> t1 -> ... -> tn, alternating binary ops (with w) and unary ops."""
    args = [f"%x: {ND16}", f"%w: {ND16}"] + [f"%t{i}: {ND16}" for i in range(1, n + 1)]
    body = []
    for i in range(1, n + 1):
        src = "%x" if i == 1 else f"%t{i - 1}"
        if i % 2:
            op = BINARY[(i // 2) % len(BINARY)]
            body.append(f'  "ascend.{op}"({src}, %w, %t{i}) : ({ND16}, {ND16}, {ND16}) -> ()')
        else:
            op = UNARY[(i // 2) % len(UNARY)]
            body.append(f'  "ascend.{op}"({src}, %t{i}) : ({ND16}, {ND16}) -> ()')
    return _func("chain", args, body)


def matmuls(n: int) -> str:
    """n independent BERT-shaped matmuls (two weight matrices, alternating outputs)."""
    args = [f"%a: {A_NZ}", f"%b0: {B_NZ}", f"%b1: {B_NZ}", f"%c0: {C_NZ}", f"%c1: {C_NZ}"]
    body = [f'  "ascend.matmul"(%a, %b{i % 2}, %c{i % 2}) : ({A_NZ}, {B_NZ}, {C_NZ}) -> ()'
            for i in range(n)]
    return _func("matmuls", args, body)


def mixed(n: int) -> str:
    """The first n ops of (fractalize, matmul, defractalize, add, relu)*."""
    layers = (n + 4) // 5
    args = [f"%bn: {B_NZ}", f"%bias: {ND32}"]
    body = []
    for layer in range(layers):
        # Each layer starts from its own fp16 input (the fp32 result is not cast back).
        args += [f"%h{layer}: {ND16}", f"%an{layer}: {A_NZ}", f"%cn{layer}: {C_NZ}",
                 f"%c{layer}: {ND32}", f"%d{layer}: {ND32}", f"%y{layer}: {ND32}"]
        src = f"%h{layer}"
        body += [f'  "ascend.fractalize"({src}, %an{layer}) : ({ND16}, {A_NZ}) -> ()',
                 f'  "ascend.matmul"(%an{layer}, %bn, %cn{layer}) : ({A_NZ}, {B_NZ}, {C_NZ}) -> ()',
                 f'  "ascend.defractalize"(%cn{layer}, %c{layer}) : ({C_NZ}, {ND32}) -> ()',
                 f'  "ascend.add"(%c{layer}, %bias, %d{layer}) : ({ND32}, {ND32}, {ND32}) -> ()',
                 f'  "ascend.relu"(%d{layer}, %y{layer}) : ({ND32}, {ND32}) -> ()']
    return _func("mixed", args, body[:n])


def _func(name: str, args: list[str], body: list[str]) -> str:
    return "\n".join([f"func.func @{name}(" + ", ".join(args) + ") {", *body, "  return", "}", ""])


FAMILIES: dict[str, Callable[[int], str]] = {"elementwise": elementwise, "matmul": matmuls,
                                             "mixed": mixed}


def compile_once(text: str, pipeline: str) -> tuple[int, int, float, float]:
    """(ops before, lowered ops, CPU seconds, wall seconds) of parse + pipeline."""
    target = get_target("ascend910")
    c0, t0 = time.process_time(), time.perf_counter()
    ctx = make_context()
    module = parse_module(text, ctx)
    before = sum(1 for o in walk(module.operation) if o.name.startswith("ascend."))
    run_pipeline(module, pipeline, target)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    lowered = sum(1 for _ in walk(module.operation)) - 1  # the module itself apart
    return before, lowered, cpu, wall


def compile_bert(layers: int, pipeline: str) -> tuple[int, int, dict[str, float], float]:
    """(ascend ops, lowered ops, CPU seconds per stage, wall seconds) of one
    BERT encoder of `layers` layers, stage by stage as `npu.compile` runs them."""
    from npu.frontend.bert import bert_layer
    from npu.frontend.compile import import_linalg, linalg_to_ascend

    model = bert_layer(layers=layers)
    target = get_target("ascend910")
    cpu: dict[str, float] = {}
    c0, t0 = time.process_time(), time.perf_counter()
    ctx = make_context()
    linalg, inputs, outputs, locate = import_linalg(model, ctx, "bert.onnx")
    cpu["import"] = time.process_time() - c0
    module = linalg_to_ascend(linalg, inputs, outputs, locate, "bert.onnx", ctx)
    cpu["to_ascend"] = time.process_time() - c0 - sum(cpu.values())
    before = sum(1 for o in walk(module.operation) if o.name.startswith("ascend."))
    run_pipeline(module, pipeline, target)
    cpu["lower"] = time.process_time() - c0 - sum(cpu.values())
    wall = time.perf_counter() - t0
    return before, sum(1 for _ in walk(module.operation)) - 1, cpu, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,10,50,200")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--pipeline", default="npu-lower{cores=1}")
    ap.add_argument("--bert", default="1,12", help="BERT encoder depths ('' for none)")
    ap.add_argument("--profile", default=None, metavar="FAMILY:N",
                    help="profile one module with cProfile and print the top entries instead")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()

    if args.profile:
        family, n = args.profile.split(":")
        prof = cProfile.Profile()
        if family == "bert":
            prof.enable()
            compile_bert(int(n), args.pipeline)
        else:
            text = FAMILIES[family](int(n))
            prof.enable()
            compile_once(text, args.pipeline)
        prof.disable()
        stats = pstats.Stats(prof, stream=sys.stdout)
        stats.sort_stats("tottime").print_stats(args.top)
        stats.sort_stats("cumulative").print_stats(args.top)
        return

    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'family':<12} {'ops':>5} {'lowered ops':>12} {'cpu s':>8} {'wall s':>8} {'us/lowered op':>14}")
    for family in [f for f in args.families.split(",") if f]:
        for n in sizes:
            before, lowered, cpu, wall = compile_once(FAMILIES[family](n), args.pipeline)
            print(f"{family:<12} {before:>5} {lowered:>12} {cpu:>8.2f} {wall:>8.2f} "
                  f"{1e6 * cpu / lowered:>14.1f}", flush=True)
    for layers in [int(n) for n in args.bert.split(",") if n]:
        before, lowered, stages, wall = compile_bert(layers, args.pipeline)
        cpu = sum(stages.values())
        print(f"{'bert':<12} {before:>5} {lowered:>12} {cpu:>8.2f} {wall:>8.2f} "
              f"{1e6 * cpu / lowered:>14.1f}  ({layers} layer(s): "
              + ", ".join(f"{k} {v:.2f}" for k, v in stages.items()) + ")", flush=True)


if __name__ == "__main__":
    main()
