"""The fused attention kernel's softmax in f32 and in f16
(`npu-lower{attention-softmax=f32|f16}`): error against float64 attention
over a sweep of score magnitudes, scales and sequence lengths, and cycles.

The reference is float64 attention on the inputs rounded to f16 (what the
cube multiplies), P unrounded: the error includes P's rounding to f16 for
P.V, which both modes share. Each figure is max |error| / max |reference|
(and the mean |error| / mean |reference|) over one head; inputs are
standard normal times `sigma` (scores of standard deviation sigma^2
sqrt(D), max |scaled score| printed). Simulation is strict (0 hazards).

    .venv/bin/python bench/attention_softmax.py [--seq 100 128 200 512] [--cycles 128 512]
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "python", "fusion"))

MODES = ("f32", "f16")


def reference(q: np.ndarray, kt: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    q, kt, v = (a.astype(np.float16).astype(np.float64) for a in (q, kt, v))
    s = q @ kt * scale
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def compiled(heads: int, seq: int, d: int, scale: float, mode: str):
    from attention_patterns import attention

    from npu.ir import make_context, parse_module
    from npu.pipeline import run_pipeline
    from npu.target import get_target

    module = parse_module(attention(heads, seq, d, scale=scale), make_context())
    run_pipeline(module, f"npu-lower{{cores=1 attention-softmax={mode}}}", get_target("ascend910"))
    return module


def errors(module, heads: int, seq: int, d: int, scale: float, sigma: float,
           seed: int = 0) -> tuple[float, float, float, int]:
    """(max error / max |ref|, mean error / mean |ref|, max |scaled score|, cycles)."""
    from npu.simulator import simulate

    rng = np.random.default_rng(seed)
    q, kt, v = (rng.standard_normal(s).astype(np.float32) * sigma
                for s in [(heads, seq, d), (heads, d, seq), (heads, seq, d)])
    res = simulate(module, [q, kt, v, np.zeros((heads, seq, d), np.float32)], strict=True)
    assert res.hazards == [], res.hazards
    want = reference(q, kt, v, scale)
    err = np.abs(res.outputs[3].astype(np.float64) - want)
    s = q.astype(np.float16).astype(np.float64) @ kt.astype(np.float16).astype(np.float64)
    return (float(err.max() / np.abs(want).max()), float(err.mean() / np.abs(want).mean()),
            float(np.abs(s * scale).max()), res.cycles)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seq", type=int, nargs="*", default=[100, 128, 200, 512])
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--sigma", type=float, nargs="*", default=[0.5, 1.0, 1.5, 2.5])
    p.add_argument("--cycles", type=int, nargs="*", default=[128, 512],
                   help="seqs of the 12-head timing runs (0 none)")
    args = p.parse_args()
    d = args.d
    scales = [1 / math.sqrt(d), -1 / math.sqrt(d), 1.0, 1e-4]
    print("max |error| / max |ref| (mean |error| / mean |ref|) against float64, one head, "
          f"head dim {d}\n")
    print(f"{'seq':>5} {'scale':>9} {'sigma':>6} {'max|a s|':>9} " +
          " ".join(f"{'softmax ' + m:>24}" for m in MODES))
    worst = {m: 0.0 for m in MODES}
    for seq in args.seq:
        for scale in scales:
            modules = {m: compiled(1, seq, d, scale, m) for m in MODES}
            for sigma in args.sigma:
                cells, top = [], 0.0
                for m in MODES:
                    mx, mean, top, _ = errors(modules[m], 1, seq, d, scale, sigma)
                    worst[m] = max(worst[m], mx)
                    cells.append(f"{mx:>11.2e} ({mean:.2e})")
                print(f"{seq:>5} {scale:>9.4g} {sigma:>6.2f} {top:>9.2f} " +
                      " ".join(f"{c:>24}" for c in cells))
    print("\nworst: " + ", ".join(f"{m} {worst[m]:.2e}" for m in MODES))
    if args.cycles and args.cycles != [0]:
        from npu.simulator import simulate

        print("\ncycles, 12 heads, head dim 64 (timing only)")
        for seq in args.cycles:
            figures = []
            for m in MODES:
                module = compiled(12, seq, 64, 1 / 8, m)
                ins = [np.zeros(s, np.float32) for s in
                       [(12, seq, 64), (12, 64, seq), (12, seq, 64), (12, seq, 64)]]
                res = simulate(module, ins, numerics=False, strict=True)
                assert res.hazards == [], res.hazards
                figures.append(f"{m} {res.cycles}")
            print(f"  seq {seq}: " + ", ".join(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
