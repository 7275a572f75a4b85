"""Sweep OS tilings of single matmuls through `npu-lower`; compare the cost model's pick.

For each shape (BERT-base layer matmuls at seq 128 by default: fused QKV,
out_proj, ffn_in, ffn_out; fp16 in, fp16 out, Nz operands) every candidate
(m, k) on a coarse grid (the defaults: m 64, 128; k 64 .. 512) is compiled with `npu-lower{m= n= k=}` (n: the
cost model's largest fitting n for that m, k) and simulated; the table shows
the traffic-only pick (the model before time ranking), the model's pick, the fastest candidate and the problem's ideal bound
(max of cube blocks and compulsory GM traffic / bandwidth).

Run: .venv/bin/python bench/matmul_tiling_sweep.py [--shapes 128x768x2304,...] [--out f16]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "python",
                                "matmul"))

from mm_common import blocks, nz, nz_matmul_program  # noqa: E402

from npu.ir import make_context, parse_module  # noqa: E402
from npu.matmul_tiling import MatmulShape, TilingError, choose_tiling  # noqa: E402
from npu.pipeline import run_pipeline  # noqa: E402
from npu.simulator import simulate  # noqa: E402
from npu.target import get_target  # noqa: E402

BERT_SHAPES = "128x768x2304,128x768x768,128x768x3072,128x3072x768"


def ideal_bound(M: int, N: int, K: int, out_bytes: int, target) -> int:
    f = target.fractal
    cube = target.cube_cycles(M * N * K // (f * f * f))
    read = (M * N + N * K) * 2 / target.path("gm_to_l1").bytes_per_cycle
    write = M * K * out_bytes / target.path("ub_to_gm").bytes_per_cycle
    return int(max(cube, read, write))


def simulate_tiles(M: int, N: int, K: int, out: str, tiles: tuple[int, int, int] | None, target) -> int:
    """Simulated cycles of the matmul lowered by `npu-lower` (tiles None: the model's)."""
    opts = "" if tiles is None else f"{{m={tiles[0]} n={tiles[1]} k={tiles[2]}}}"
    module = parse_module(nz_matmul_program(M, N, K, out=out), make_context())
    run_pipeline(module, f"npu-lower{opts}", target)
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (M, N)).astype(np.float16)
    b = rng.uniform(-1, 1, (N, K)).astype(np.float16)
    dtype = np.float16 if out == "f16" else np.float32
    c0 = np.zeros((blocks(K), blocks(M), 16, 16), dtype)
    res = simulate(module, [nz(a), nz(b), c0], target=target, strict=True)
    got = res.outputs[2].transpose(1, 2, 0, 3).reshape(M, K).astype(np.float32)
    want = a.astype(np.float32) @ b.astype(np.float32)
    err = float(np.abs(got - want).max())
    assert err <= 1e-2 * float(np.abs(want).max()), f"wrong result: max error {err}"
    return res.cycles


def candidates(shape: MatmulShape, target, ms: list[int], ks: list[int]):
    for m in ms:
        for k in ks:
            try:
                c = choose_tiling(shape, target, "os", m, 0, k)
            except TilingError:
                continue
            yield (c.tiles.m, c.tiles.n, c.tiles.k)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default=BERT_SHAPES)
    p.add_argument("--out", default="f16", choices=("f16", "f32"))
    p.add_argument("--ms", default="64,128")
    p.add_argument("--ks", default="64,128,192,256,384,512")
    p.add_argument("--target", default="ascend910")
    args = p.parse_args(argv)
    target = get_target(args.target)
    out_bytes = 2 if args.out == "f16" else 4
    ms = [int(x) for x in args.ms.split(",")]
    ks = [int(x) for x in args.ks.split(",")]
    print(f"target {target.name}; npu-lower (pipelined OS), fp16 in, {args.out} out")
    print(f"{'shape':<14} {'traffic pick':<16} {'cycles':>8} {'time pick':<16} {'cycles':>8} "
          f"{'best (m,n,k)':<16} {'cycles':>8} {'ideal':>7} {'pick/best':>9}")
    for text in args.shapes.split(","):
        M, N, K = (int(x) for x in text.split("x"))
        shape = MatmulShape(M, N, K, out_bytes=out_bytes)
        old = choose_tiling(shape, target, "os").tiles
        old_t = (old.m, old.n, old.k)
        pick = choose_tiling(shape, target, "os", pipelined=True).tiles
        pick_t = (pick.m, pick.n, pick.k)
        results = {pick_t: simulate_tiles(M, N, K, args.out, None, target)}
        if old_t not in results:
            results[old_t] = simulate_tiles(M, N, K, args.out, old_t, target)
        for t in candidates(shape, target, ms, ks):
            if t not in results:
                results[t] = simulate_tiles(M, N, K, args.out, t, target)
            print(f"  {text} {t}: {results[t]}", file=sys.stderr)
        best = min(results, key=results.get)
        print(f"{text:<14} {str(old_t):<16} {results[old_t]:>8} {str(pick_t):<16} {results[pick_t]:>8} "
              f"{str(best):<16} {results[best]:>8} "
              f"{ideal_bound(M, N, K, out_bytes, target):>7} {results[pick_t] / results[best]:>9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
