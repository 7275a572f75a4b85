"""The ascend ops added for the ONNX frontend, at BERT-base layer shapes, on
the simulator: erf (GELU), select with an attention-mask row, a bias add
broadcast over all leading dims, cmp, reductions along the last and an outer
axis, the f32 -> i8 cast chain, and transposes through the general paths.

Each case is compiled through `npu-lower` (double buffering, memory planning,
sync) and simulated strictly; the result is checked against numpy. Columns:

  cycles   simulated cycles
  own      the simulator's lower bound for this program (its own traffic and
           instructions: the busiest pipe's work, latencies left out)
  ideal    the problem's bound: every input read once and every output
           written once over the GM paths, and one simple vector repeat per
           output lane (max of the three); no lowering can beat it
  c/own, c/ideal  the ratios

Run: .venv/bin/python bench/frontend_ops.py [--target ascend910]
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import Target, get_target

NP = {"f16": np.float16, "f32": np.float32, "i8": np.int8, "i32": np.int32}


def mr(shape, elem) -> str:
    return f'memref<{"x".join(map(str, shape))}x{elem}, "gm">'


def program(op: str, shapes, elems, attrs: str = "") -> str:
    types = [mr(s, e) for s, e in zip(shapes, elems)]
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
    vals = ", ".join(f"%a{i}" for i in range(len(types)))
    attr = f" {{{attrs}}}" if attrs else ""
    return (f"func.func @f({args}) {{\n  \"{op}\"({vals}){attr} : ({', '.join(types)}) -> ()\n"
            f"  return\n}}\n")


def erf64(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64))


def cases(rng):
    """(name, op, shapes, elems, attrs, inputs, expected fn, atol)"""
    h = rng.uniform(-3, 3, (128, 3072)).astype(np.float16)
    scores = rng.uniform(-5, 5, (12, 128, 128)).astype(np.float16)
    mask = (rng.uniform(size=128) > 0.2).astype(np.int8)
    fill = np.array([-np.inf], np.float16)
    bias = rng.uniform(-1, 1, (1, 1, 128)).astype(np.float16)
    x768 = rng.uniform(-1, 1, (128, 768)).astype(np.float32)
    f32big = rng.uniform(-200, 200, 128 * 768).astype(np.float32)
    t = rng.uniform(-1, 1, (64, 48, 32)).astype(np.float32)
    small = rng.uniform(-1, 1, (3, 5, 7)).astype(np.float16)
    return [
        ("erf f16 [128,3072] (GELU)", "ascend.erf", [h.shape] * 2, ["f16"] * 2, "",
         [h], lambda: erf64(h), 1e-3),
        ("select mask row [12,128,128]", "ascend.select",
         [(128,), scores.shape, (1,), scores.shape], ["i8", "f16", "f16", "f16"], "",
         [mask, scores, fill], lambda: np.where(mask != 0, scores, fill), 0),
        ("add bias [12,128,128]+[1,1,128]", "ascend.add", [scores.shape, bias.shape, scores.shape],
         ["f16"] * 3, "", [scores, bias], lambda: (scores + bias), 0),
        ("cmp lt [12,128,128] vs row", "ascend.cmp", [scores.shape, bias.shape, scores.shape],
         ["f16", "f16", "i8"], 'predicate = "lt"', [scores, bias],
         lambda: (scores < bias).astype(np.int8), 0),
        ("reduce_max last axis [1536,128]", "ascend.reduce_max",
         [(1536, 128), (1536, 1)], ["f16"] * 2, "axis = -1 : i64", [scores.reshape(1536, 128)],
         lambda: scores.reshape(1536, 128).max(-1, keepdims=True), 0),
        ("reduce_sum axis 0 [128,768] f32", "ascend.reduce_sum", [(128, 768), (768,)],
         ["f32"] * 2, "axis = 0 : i64", [x768], lambda: x768.astype(np.float64).sum(0), 1e-4),
        ("cast f32->i8 [98304]", "ascend.cast", [f32big.shape] * 2, ["f32", "i8"],
         'round_mode = "rint"', [f32big],
         lambda: np.clip(np.rint(f32big), -128, 127).astype(np.int8), 0),
        ("transpose [2,1,0] (64,48,32) f32", "ascend.transpose", [t.shape, (32, 48, 64)],
         ["f32"] * 2, "permutation = array<i64: 2, 1, 0>", [t], lambda: t.transpose(2, 1, 0), 0),
        ("transpose [1,2,0] (3,5,7) f16", "ascend.transpose", [small.shape, (5, 7, 3)],
         ["f16"] * 2, "permutation = array<i64: 1, 2, 0>", [small],
         lambda: small.transpose(1, 2, 0), 0),
    ]


def ideal(target: Target, inputs, out: np.ndarray) -> int:
    read = sum(a.nbytes for a in inputs)
    lanes = target.lanes(max(max(a.itemsize for a in inputs), out.itemsize))
    terms = [math.ceil(read / target.path("gm_to_ub").bytes_per_cycle),
             math.ceil(out.nbytes / target.path("ub_to_gm").bytes_per_cycle),
             math.ceil(out.size / lanes) * target.vector_cycles("simple")]
    return max(terms)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", default=None)
    args = p.parse_args(argv)
    target = get_target(args.target)
    rng = np.random.default_rng(0)
    print(f"target {target.name}; pipeline npu-lower (double buffering, plan, sync)")
    print(f"{'case':<36} {'cycles':>8} {'own':>8} {'ideal':>8} {'c/own':>6} {'c/ideal':>7} "
          f"{'compile s':>9} {'ok':>3}")
    ok_all = True
    for name, op, shapes, elems, attrs, inputs, expected, atol in cases(rng):
        source = program(op, shapes, elems, attrs)
        out = np.zeros(shapes[-1], NP[elems[-1]])
        start = time.perf_counter()
        module = parse_module(source, make_context())
        run_pipeline(module, "npu-lower{cores=1}", target)
        compile_s = time.perf_counter() - start
        res = simulate(module, [np.array(a, copy=True) for a in inputs] + [out], target=target,
                       strict=True)
        got = res.outputs[-1].astype(np.float64)
        exp = np.broadcast_to(expected(), out.shape).astype(np.float64)
        ok = bool(np.allclose(got, exp, rtol=2 * float(np.finfo(out.dtype).eps)
                              if out.dtype.kind == "f" else 0, atol=atol, equal_nan=True))
        ok_all &= ok
        own = int(res.report.get("bound_cycles", 0))
        best = ideal(target, inputs, out)
        print(f"{name:<36} {int(res.cycles):>8} {own:>8} {best:>8} "
              f"{res.cycles / max(own, 1):>6.2f} {res.cycles / best:>7.2f} {compile_s:>9.2f} "
              f"{'yes' if ok else 'NO':>3}")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
