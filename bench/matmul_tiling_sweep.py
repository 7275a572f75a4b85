"""Sweep OS tilings of single matmuls through `npu-lower`; compare the cost model's pick.

For each shape (BERT-base layer matmuls at seq 128 by default: fused QKV,
out_proj, ffn_in, ffn_out; fp16 in, fp16 out, Nz operands) every candidate
(m, k) on a coarse grid (the defaults: m 64, 128; k 64 .. 512) is compiled with `npu-lower{m= n= k=}` (n: the
cost model's largest fitting n for that m, k) and simulated; the table shows
the traffic-only pick (the model before time ranking), the model's pick, the fastest candidate and the problem's ideal bound
(max of cube blocks and compulsory GM traffic / bandwidth).

`--epilogue bias` / `bias-gelu` sweeps the matmul with an epilogue instead
(f32 C, + a host-constant bias broadcast over the rows, then GELU and the
cast to f16 for `bias-gelu`, as in BERT's projections and ffn_in): the
model's pick then counts the epilogue's vector work on the drain's pipe.

Run: .venv/bin/python bench/matmul_tiling_sweep.py [--shapes 128x768x2304,...] [--out f16]
                                                   [--epilogue none|bias|bias-gelu]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

for _dir in ("matmul", "fusion"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test",
                                    "python", _dir))

from mm_common import blocks, nz, nz_matmul_program  # noqa: E402

from npu.ir import make_context, parse_module  # noqa: E402
from npu.costmodel.matmul.fitting import MatmulShape  # noqa: E402
from npu.costmodel.matmul.tiling import TilingError, choose_tiling  # noqa: E402
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


EPILOGUES = {"none": (), "bias": ("bias_row",), "bias-gelu": ("bias_row", "gelu", "cast")}


def simulate_epilogue(M: int, N: int, K: int, steps: tuple[str, ...], opts: str, target) -> int:
    """Simulated cycles of the matmul and its epilogue `steps` (checked
    against `npu.reference` on the unlowered program)."""
    from matmul_patterns import matmul_epilogue

    from npu.ir import arg_attrs, constant_data, functions, memref_element, memref_shape
    from npu.reference import evaluate

    text = matmul_epilogue(M, N, K, steps, "f16" if "cast" in steps else "f32")
    module = parse_module(text, make_context())
    func = functions(module)[0]
    rng = np.random.default_rng(0)
    ins = []
    for k, arg in enumerate(func.regions[0].blocks[0].arguments):
        shape, elem = memref_shape(arg.type), memref_element(arg.type)
        attr = arg_attrs(func, k).get("npu.constant")
        ins.append(constant_data(attr, shape, elem) if attr is not None else
                   rng.uniform(-1, 1, shape).astype({"f16": np.float16, "f32": np.float32}[elem]))
    want = evaluate(func, [a.copy() for a in ins])[-1].astype(np.float32)
    run_pipeline(module, f"npu-lower{opts}", target)
    res = simulate(module, ins, target=target, strict=True)
    err = float(np.abs(res.outputs[-1].astype(np.float32) - want).max())
    assert err <= 1e-2 * float(np.abs(want).max()), f"wrong result: max error {err}"
    return res.cycles


def simulate_tiles(M: int, N: int, K: int, out: str, tiles: tuple[int, int, int] | None, target,
                   epilogue: tuple[str, ...] = ()) -> int:
    """Simulated cycles of the matmul lowered by `npu-lower` (tiles None: the model's)."""
    opts = "{cores=1}" if tiles is None else f"{{cores=1 m={tiles[0]} n={tiles[1]} k={tiles[2]}}}"
    if epilogue:
        return simulate_epilogue(M, N, K, epilogue, opts, target)
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


def lowered_tiles(M: int, N: int, K: int, steps: tuple[str, ...], target) -> tuple[int, int, int]:
    """The tiles npu-lower-matmul picks for the matmul with its epilogue (its remark)."""
    import re

    from matmul_patterns import matmul_epilogue

    from npu import diagnostics

    with diagnostics.collecting() as engine:
        module = parse_module(matmul_epilogue(M, N, K, steps, "f16" if "cast" in steps else "f32"),
                              make_context())
        run_pipeline(module, "npu-fuse,npu-lower-matmul{schedule=pipelined}", target)
    text = next(d.message for d in engine.diagnostics if "matmul tiling" in d.message)
    m, n, k = re.search(r"tiles \(m=(\d+), n=(\d+), k=(\d+)\)", text).groups()
    return int(m), int(n), int(k)


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
    p.add_argument("--epilogue", default="none", choices=tuple(EPILOGUES))
    args = p.parse_args(argv)
    target = get_target(args.target)
    epilogue = EPILOGUES[args.epilogue]
    if epilogue:  # the epilogue's C is f32 (its cast, if any, writes f16)
        args.out = "f32"
    out_bytes = 2 if args.out == "f16" else 4
    ms = [int(x) for x in args.ms.split(",")]
    ks = [int(x) for x in args.ks.split(",")]
    print(f"target {target.name}; npu-lower (pipelined OS), fp16 in, {args.out} C"
          + (f", epilogue {args.epilogue}" if epilogue else ""))
    print(f"{'shape':<14} {'traffic pick':<16} {'cycles':>8} {'time pick':<16} {'cycles':>8} "
          f"{'best (m,n,k)':<16} {'cycles':>8} {'ideal':>7} {'pick/best':>9}")
    for text in args.shapes.split(","):
        M, N, K = (int(x) for x in text.split("x"))
        shape = MatmulShape(M, N, K, out_bytes=out_bytes)
        old = choose_tiling(shape, target, "os").tiles
        old_t = (old.m, old.n, old.k)
        # What npu-lower-matmul takes: the time-ranked tiles, then the
        # pipelined schedule's plan (A resident or not, its C tile width).
        pick = choose_tiling(shape, target, "os", pipelined=True, resident_a=True).tiles
        pick_t = (pick.m, pick.n, pick.k)
        results = {}
        model_cycles = simulate_tiles(M, N, K, args.out, None, target, epilogue)
        if epilogue:  # the pass's pick counts the epilogue: read it from its run
            pick_t = lowered_tiles(M, N, K, epilogue, target)
        results[pick_t] = model_cycles
        if old_t not in results:
            results[old_t] = simulate_tiles(M, N, K, args.out, old_t, target, epilogue)
        for t in candidates(shape, target, ms, ks):
            if t not in results:
                results[t] = simulate_tiles(M, N, K, args.out, t, target, epilogue)
            print(f"  {text} {t}: {results[t]}", file=sys.stderr)
        best = min(results, key=results.get)
        print(f"{text:<14} {str(old_t):<16} {results[old_t]:>8} {str(pick_t):<16} {results[pick_t]:>8} "
              f"{str(best):<16} {results[best]:>8} "
              f"{ideal_bound(M, N, K, out_bytes, target):>7} {results[pick_t] / results[best]:>9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
