"""Naive vs fill-UB fractalization (thesis 6.4.2) on the simulator.

ND -> Nz (ascend.fractalize) and Nz -> ND (ascend.defractalize) of a
512x768 fp16 matrix, each compiled with `npu-lower-fractalize{algorithm=...}`
through the real back end (npu-plan-memory, npu-insert-sync, optionally
npu-double-buffer) and simulated strictly. Prints cycles, the simulator's
lower bound, instructions and busy cycles per pipe.

Run: .venv/bin/python bench/fractalize.py [--double-buffer] [--shape 512x768] [--dtype f16]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import get_target


def program(R: int, C: int, dt: str, op: str) -> str:
    R1, C1 = -(-R // 16), -(-C // 16)
    nd = f'memref<{R}x{C}x{dt}, "gm">'
    nz = f'memref<{C1}x{R1}x16x16x{dt}, "gm">'
    if op == "fractalize":
        return (f"func.func @f(%a: {nd}, %z: {nz}) {{\n"
                f'  "ascend.fractalize"(%a, %z) : ({nd}, {nz}) -> ()\n  return\n}}\n')
    return (f"func.func @f(%z: {nz}, %a: {nd}) {{\n"
            f'  "ascend.defractalize"(%z, %a) : ({nz}, {nd}) -> ()\n  return\n}}\n')


def nz_of(x: np.ndarray) -> np.ndarray:
    R, C = x.shape
    R1, C1 = -(-R // 16), -(-C // 16)
    pad = np.zeros((R1 * 16, C1 * 16), x.dtype)
    pad[:R, :C] = x
    return np.ascontiguousarray(pad.reshape(R1, 16, C1, 16).transpose(2, 0, 1, 3))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shape", default="512x768")
    p.add_argument("--dtype", default="f16", choices=("f16", "f32"))
    p.add_argument("--double-buffer", action="store_true")
    args = p.parse_args(argv)
    R, C = (int(v) for v in args.shape.split("x"))
    np_dt = np.float16 if args.dtype == "f16" else np.float32
    target = get_target()
    backend = ",".join((["npu-double-buffer"] if args.double_buffer else [])
                       + ["npu-plan-memory", "npu-insert-sync"])
    x = np.random.default_rng(0).standard_normal((R, C)).astype(np_dt)
    z = nz_of(x)
    print(f"{R}x{C} {args.dtype} on {target.name}; pipeline npu-lower-fractalize{{algorithm=...}},{backend}")
    head = (f"{'op':<12} {'algorithm':<24} {'cycles':>8} {'bound':>7} {'ratio':>6} "
            f"{'MTE2 n/busy':>13} {'V n/busy':>13} {'MTE3 n/busy':>13}")
    print(head)
    print("-" * len(head))
    for op in ("fractalize", "defractalize"):
        for algorithm in ("naive", "fill-ub", "fill-ub ub-fraction=0.5"):
            ctx = make_context()
            module = parse_module(program(R, C, args.dtype, op), ctx)
            run_pipeline(module, f"npu-lower-fractalize{{algorithm={algorithm}}}," + backend, target)
            inputs = [x, np.zeros_like(z)] if op == "fractalize" else [z, np.zeros_like(x)]
            res = simulate(module, inputs, target=target, strict=True)
            want = z if op == "fractalize" else x
            assert np.array_equal(res.outputs[1], want), f"{op} {algorithm}: wrong result"
            pipes = res.report["pipes"]

            def cell(name: str) -> str:
                q = pipes.get(name, {})
                return f"{q.get('instructions', 0)}/{q.get('busy_cycles', 0)}"
            print(f"{op:<12} {algorithm:<24} {res.cycles:>8} {int(res.report['bound_cycles']):>7} "
                  f"{res.cycles / res.report['bound_cycles']:>6.2f} {cell('MTE2'):>13} {cell('V'):>13} "
                  f"{cell('MTE3'):>13}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
