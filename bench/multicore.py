"""Scaling over AI cores on the shared memory system (issue 14).

Each program is compiled with `npu-lower{cores=N}` (npu-split-cores first)
and simulated as one launch of `npu.block_dim` cores sharing GM through the
memory system (chip GM bandwidth, per-core movers, burst cost, L2). Columns:

  cores     cores asked for / launched (npu.block_dim; fewer when the work
            does not split further)
  cycles    simulated cycles of the launch (its slowest core)
  speedup   1-core cycles / cycles
  limit     what bounds the launch: the slowest core's cube (M pipe) or GM
            movers (per-core MTE), or the chip GM bus; ties within 2% are
            all named
            (L2 has no bandwidth limit in this model, so it never binds: it
            shows as the L2 hit share, bytes the bus does not carry)
  bound     that bound in cycles; ratio = cycles / bound
  bus       chip GM bus utilisation (bus bytes / bandwidth / cycles)
  L2 hit    share of the bytes read from GM that L2 served
  ideal     the problem's bound on this many cores: max(all cube work /
            cores, compulsory traffic (inputs once, output once) / chip GM
            bandwidth, per-core compulsory traffic / per-core mover rate)

The big rows run timing-only (`numerics=False`: the same cycles, no
arithmetic); `--numerics` runs them in full.

Run: .venv/bin/python bench/multicore.py [--cores 1,2,4,8,16,32] [--rows mm2048,...]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from npu.ir import make_context, parse_module
from npu.pipeline import run_pipeline
from npu.simulator import simulate
from npu.target import get_target


def _mm(name: str, m: int, k: int, n: int) -> tuple[str, dict]:
    """C (m x n, f16) = A (m x k) B (k x n) in Nz."""
    f = 16
    a = f'memref<{k // f}x{m // f}x16x16xf16, "gm">'
    b = f'memref<{n // f}x{k // f}x16x16xf16, "gm">'
    c = f'memref<{n // f}x{m // f}x16x16xf16, "gm">'
    text = (f"func.func @{name}(%a: {a}, %b: {b}, %c: {c}) {{\n"
            f'  "ascend.matmul"(%a, %b, %c) : ({a}, {b}, {c}) -> ()\n  return\n}}\n')
    return text, {"blocks": m * n * k // f ** 3, "reads": 2 * (m * k + k * n), "writes": 2 * m * n}


def _add(n: int) -> tuple[str, dict]:
    t = f'memref<{n}xf16, "gm">'
    text = (f"func.func @add(%a: {t}, %b: {t}, %c: {t}) {{\n"
            f'  "ascend.add"(%a, %b, %c) : ({t}, {t}, {t}) -> ()\n  return\n}}\n')
    return text, {"blocks": 0, "reads": 4 * n, "writes": 2 * n}


def _bert_transpose() -> tuple[str, dict]:
    s, d = 'memref<12x512x64xf16, "gm">', 'memref<12x64x512xf16, "gm">'
    text = (f"func.func @bert_transpose(%src: {s}, %dst: {d}) {{\n"
            f'  "ascend.transpose"(%src, %dst) {{permutation = array<i64: 0, 2, 1>}} : ({s}, {d}) '
            "-> ()\n  return\n}\n")
    return text, {"blocks": 0, "reads": 2 * 12 * 512 * 64, "writes": 2 * 12 * 512 * 64}


ROWS = {
    "mm2048": ("matmul 2048^3 fp16", lambda: _mm("mm2048", 2048, 2048, 2048), False),
    "mm4096": ("matmul 4096x4096x1024 fp16 (M x N x K, K reduced)",
               lambda: _mm("mm4096", 4096, 1024, 4096), False),
    "add16m": ("add 16M fp16", lambda: _add(16 * 1024 * 1024), False),
    "bert_t": ("BERT transpose 12x512x64 -> 12x64x512 fp16", _bert_transpose, True),
}


def _limit(rep: dict) -> str:
    """The launch's binding resource(s): the slowest core's cube (M) and GM
    movers (MTE2/MTE3 bounds) and the chip GM bus; ties within 2% are all
    named."""
    b = rep["bounds"]
    candidates = {"cube": b["M"], "per-core MTE": max(b["MTE2"], b["MTE3"]),
                  "chip GM bw": rep["memory_system"]["chip_bus_bound_cycles"]}
    top = max(candidates.values())
    return "+".join(k for k, v in candidates.items() if v >= 0.98 * top)


def ideal(info: dict, cores: int, target) -> float:
    cube = target.cube_cycles(float(info["blocks"])) / cores
    chip = (info["reads"] + info["writes"]) / target.gm_chip_bytes_per_cycle
    # Reads (MTE2) and writes (MTE3) move on separate per-core paths.
    core = max(info["reads"] / target.path("gm_to_ub").bytes_per_cycle,
               info["writes"] / target.path("ub_to_gm").bytes_per_cycle) / cores
    return max(cube, chip, core)


def run_row(key: str, counts: list[int], numerics: bool) -> list[dict]:
    title, make, small = ROWS[key]
    text, info = make()
    target = get_target("ascend910")
    rows = []
    base = None
    for n in counts:
        module = parse_module(text, make_context())
        func = module.body.operations[0]
        args = list(func.regions[0].blocks[0].arguments)
        inputs = []
        for a in args:
            t = a.type
            shape = [int(x) for x in str(t).split("<")[1].split("x")[:-1]]
            inputs.append(np.zeros(shape, np.float16))
        t0 = time.perf_counter()
        run_pipeline(module, f"builtin.module(npu-lower{{cores={n}}})", target)
        res = simulate(module, inputs, target=target, numerics=numerics or small)
        wall = time.perf_counter() - t0
        rep = res.report
        base = base or res.cycles
        mem = rep["memory_system"]
        reads = mem["gm_read_bytes"]
        rows.append({
            "row": key, "cores": n, "launched": rep.get("block_dim", 1), "cycles": res.cycles,
            "speedup": base / res.cycles, "limit": _limit(rep), "bound": rep["bound_cycles"],
            "ratio": rep["bound_ratio"], "bus": mem["chip_bus_utilisation"],
            "l2": mem["l2_hit_bytes"] / reads if reads else 0.0,
            "ideal": ideal(info, rep.get("block_dim", 1), target), "wall": wall})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cores", default="1,2,4,8,16,32")
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--numerics", action="store_true", help="full runs for the big rows too")
    args = ap.parse_args()
    counts = [int(c) for c in args.cores.split(",")]
    t = get_target("ascend910")
    print(f"ascend910: {t.cores} cores, chip GM {t.gm_chip_bytes_per_cycle} B/cycle, per-core "
          f"GM movers {t.path('gm_to_ub').bytes_per_cycle} B/cycle, L2 {t.l2_bytes >> 20} MiB, "
          f"{t.gm_burst_cycles} cycle(s) per burst")
    for key in args.rows.split(","):
        title = ROWS[key][0]
        print(f"\n{title}")
        print(f"{'cores':>5} {'launched':>8} {'cycles':>10} {'speedup':>8} {'limit':>18} "
              f"{'bound':>10} {'ratio':>6} {'bus':>6} {'L2 hit':>7} {'ideal':>10} {'wall s':>7}")
        for r in run_row(key, counts, args.numerics):
            print(f"{r['cores']:>5} {r['launched']:>8} {r['cycles']:>10} {r['speedup']:>7.2f}x "
                  f"{r['limit']:>18} {r['bound']:>10} {r['ratio']:>6.2f} {100 * r['bus']:>5.1f}% "
                  f"{100 * r['l2']:>6.1f}% {math.ceil(r['ideal']):>10} {r['wall']:>7.1f}")


if __name__ == "__main__":
    main()
